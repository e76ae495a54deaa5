// A fault on one call of a graph (docs/graph.md, "A fault on a call"): an
// abort or a delay on each attempt, or on the call before its retries (where
// Istio's VirtualService fault and Envoy's fault filter sit: before the
// router, whose retries never see it).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "engines/engine.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

// Over the incident's steps [100, 200) only.
double in_window(const std::vector<double>& v) {
  return std::accumulate(v.begin() + 100, v.begin() + 200, 0.0);
}

RunResult run(const std::string& fault, const std::string& calls1 = "retries: 2, timeout_s: 1",
              const std::string& calls0 = "retries: 0, timeout_s: 5") {
  Scenario s = scenario_from_text(
      "horizon_s: 40\nstep_s: 0.1\nengine: agent\nservice_completes: end\n"
      "demand: {rate_per_s: 100}\n"
      "client: {backoff: {base_s: 0.001, multiplier: 1, jitter: none}}\n"
      "services: {api: {}, db: {capacity_per_s: 1000}}\n"
      "calls:\n  - {from: user, to: api, " +
          calls0 + "}\n  - {from: api, to: db, " + calls1 +
          "}\n"
          "incident: {start_s: 10, duration_s: 10, call: 1, " +
          fault + "}\n",
      "fault.yaml");
  validate(s);
  return run_engine(s);
}

TEST(CallFault, AnAbortOnEveryAttemptFailsTheCallAfterItsRetries) {
  RunResult r = run("abort_share: 1");
  const EdgeSeries& edge = r.graph.edges[1];
  // Each of the ~1,000 calls of the incident sends 3 attempts, all answered
  // by the fault; none reaches the db.
  EXPECT_NEAR(r.failed, 1000, 1);
  EXPECT_EQ(sum(edge.failed), r.failed);
  EXPECT_EQ(sum(edge.aborted), 3 * r.failed);
  EXPECT_EQ(sum(edge.retries) - in_window(edge.retries), 0);
  EXPECT_EQ(in_window(r.graph.services[1].first_attempts), 0);
  EXPECT_EQ(sum(edge.delayed), 0);
  // The capacity of the db is untouched: the incident is the fault alone.
  for (double c : r.series.capacity) EXPECT_EQ(c, 100);
  nlohmann::json j = graph_json(r);
  EXPECT_EQ(j["edges"][1]["totals"]["aborted"], 3 * r.failed);
  EXPECT_EQ(j["edges"][1]["series"]["aborted"].size(), 400u);
}

TEST(CallFault, OnTheCallItsOwnRetriesNeverSeeIt) {
  // fault_on calls: the call is answered before its client retries, so
  // calls[1] sends no retry; the user's client (one retry) asks again, and
  // that call is aborted as well.
  RunResult r = run("abort_share: 1, fault_on: calls", "retries: 2, timeout_s: 1",
                    "retries: 1, timeout_s: 5");
  const EdgeSeries& edge = r.graph.edges[1];
  EXPECT_EQ(sum(edge.retries), 0);
  EXPECT_NEAR(r.failed, 1000, 1);
  EXPECT_EQ(sum(r.graph.edges[0].retries), r.failed);
  EXPECT_EQ(sum(edge.aborted), 2 * r.failed);
  EXPECT_EQ(sum(edge.failed), sum(edge.aborted));
}

TEST(CallFault, TheAbortsAnswerTheirShareOfAttempts) {
  Scenario base = scenario_from_text(
      "horizon_s: 40\nstep_s: 0.1\nengine: agent\ndemand: {rate_per_s: 200, process: poisson}\n"
      "services: {api: {}, db: {capacity_per_s: 1000, service: exponential, slots: 4}}\n"
      "calls: [{from: user, to: api, retries: 0}, {from: api, to: db, retries: 0}]\n"
      "incident: {start_s: 10, duration_s: 10, call: 1, abort_share: 0.3, abort_status: '429'}\n",
      "share.yaml");
  validate(base);
  RunResult r = run_engine(base);
  double calls = in_window(r.graph.edges[1].calls), aborted = sum(r.graph.edges[1].aborted);
  ASSERT_GT(calls, 1800);
  // Binomial: within four standard deviations of 30%.
  double sd = std::sqrt(calls * 0.3 * 0.7);
  EXPECT_NEAR(aborted, 0.3 * calls, 4 * sd);
  EXPECT_EQ(r.failed, aborted);  // nothing else fails, nothing retries
}

TEST(CallFault, ADelayLongerThanTheTimeoutTimesOutEveryAttempt) {
  // 0.5 s of delay on attempts with a 0.2 s timeout: every attempt of the
  // incident times out, and none reaches the db (the reset reaches the
  // proxy holding it). A call fails when its third attempt, 0.402 s after
  // the first, is still inside the incident: those that came before 19.598 s.
  RunResult r = run("delay_s: 0.5", "retries: 2, timeout_s: 0.2");
  const EdgeSeries& edge = r.graph.edges[1];
  EXPECT_NEAR(r.failed, 960, 1);
  EXPECT_EQ(sum(edge.timeouts), sum(edge.delayed));
  EXPECT_GE(sum(edge.delayed), 3 * r.failed);
  EXPECT_EQ(in_window(r.graph.services[1].first_attempts), 0);
}

TEST(CallFault, OnTheCallTheDelayIsOutsideTheCallsTimeout) {
  // The same delay before the call's client (fault_on calls): its attempts
  // never time out, and the user's 5 s timeout waits it out.
  RunResult r = run("delay_s: 0.5, fault_on: calls", "retries: 2, timeout_s: 0.2");
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(sum(r.graph.edges[1].timeouts), 0);
  EXPECT_NEAR(sum(r.graph.edges[1].delayed), 1000, 1);
}

TEST(CallFault, ADelayAddsItsLengthToEachAnswer) {
  auto p50 = [](const std::string& fault) {
    Scenario s = scenario_from_text(
        "horizon_s: 20\nstep_s: 0.1\nengine: agent\nservice_completes: end\n"
        "demand: {rate_per_s: 100}\n"
        "services: {api: {}, db: {capacity_per_s: 1000}}\n"
        "calls: [{from: user, to: api}, {from: api, to: db}]\n"
        "incident: {start_s: 0, duration_s: 20, capacity_factor: 1" +
            fault + "}\n",
        "delay.yaml");
    validate(s);
    return *run_engine(s).success_latency.quantile(0.5);
  };
  double plain = p50(""), delayed = p50(", call: 1, delay_s: 0.05");
  EXPECT_NEAR(delayed - plain, 0.05, 0.0025);
  // Half the attempts delayed: the median sits between the two.
  double half = p50(", call: 1, delay_s: 0.05, delay_share: 0.4");
  EXPECT_LT(half, plain + 0.01);
}

TEST(CallFault, TheIncidentsServiceDropsOnlyWhenNamed) {
  RunResult r = run("abort_share: 0.1, service: db, capacity_factor: 0.5");
  EXPECT_EQ(r.series.capacity[50], 100);
  EXPECT_EQ(r.series.capacity[150], 50);
  EXPECT_GT(sum(r.graph.edges[1].aborted), 0);
}

}  // namespace
}  // namespace retrystorm
