// Closed-loop clients (issue 29, part 5; docs/agent-engine.md, "Closed-loop
// clients"): N clients that each send their next request only after the
// last one ended and a think time. Brooker's "What is Backoff For?": backoff
// barely changes what open-loop users send during an overload, and cuts
// what closed-loop clients send, because a client in backoff sends nothing
// new. presets/closed-loop-clients.yaml is the scenario.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

Scenario example(std::map<std::string, std::string> sets = {}) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/presets/closed-loop-clients.yaml");
  std::stringstream text;
  text << in.rdbuf();
  Scenario s = scenario_from_text(text.str(), "closed-loop-clients.yaml");
  for (const auto& [path, value] : sets) set_key_text(s, path, value);
  validate(s);
  return s;
}

// Attempts sent per second while the incident lasts.
double incident_load(const RunResult& r) {
  const Scenario& s = r.scenario;
  double sent = 0;
  int steps = 0;
  for (size_t i = 0; i < r.series.size(); ++i)
    if (s.in_incident(static_cast<int>(i))) sent += attempts_sent(r.series, i), ++steps;
  return sent / (steps * s.step_s);
}

TEST(ClosedLoop, BackoffCutsWhatClosedLoopClientsSendNotWhatOpenLoopUsersSend) {
  double closed = incident_load(run_engine(example()));
  double closed_at_once = incident_load(run_engine(example({{"client.backoff.base_s", "0"}})));
  double open = incident_load(run_engine(example({{"demand.clients", "0"}})));
  double open_at_once =
      incident_load(run_engine(example({{"demand.clients", "0"}, {"client.backoff.base_s", "0"}})));
  std::printf(
      "  attempts/s during the incident: closed loop %.1f with backoff, %.1f without; "
      "open loop %.1f with, %.1f without\n",
      closed, closed_at_once, open, open_at_once);
  EXPECT_LT(closed, 0.65 * closed_at_once);  // about 40% less
  EXPECT_GT(open, 0.75 * open_at_once);      // about 15% less
  EXPECT_LT(closed_at_once, 0.3 * open_at_once) << "closed-loop clients cannot pile up";
}

TEST(ClosedLoop, NoClientHasTwoRequestsAtOnceAndTheRateFollowsTheThinkTime) {
  Scenario s = example({{"incident.capacity_factor", "1"},
                        {"demand.process", "deterministic"},
                        {"server.service", "deterministic"}});
  RunResult r = run_engine(s);
  EXPECT_LE(r.in_flight, s.demand.clients);
  // Each client: a request every think time plus its service time (10 ms).
  double per_s = r.user_requests / s.horizon_s;
  EXPECT_NEAR(per_s, s.demand.clients / (s.demand.think_s + 0.01), 1.0);
  EXPECT_EQ(r.failed, 0);
  EXPECT_LE(r.user_requests, s.requests_bound());
}

TEST(ClosedLoop, TheSameSeedGivesTheSameRun) {
  RunResult a = run_engine(example()), b = run_engine(example());
  for (const SeriesField& f : kSeriesFields) {
    auto x = a.series.*f.member, y = b.series.*f.member;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << f.name;
  }
}

// demand.rate_per_s is not read with clients: a token bucket is sized from
// what the clients send at most, not from a rate they do not have.
TEST(ClosedLoop, ATokenBucketDoesNotReadTheOpenLoopRate) {
  std::vector<double> failed;
  for (const char* rate : {"1", "40", "1000"}) {
    RunResult r = run_engine(example({{"client.budget.kind", "token_bucket"},
                                      {"client.budget.ratio", "0.1"},
                                      {"demand.rate_per_s", rate}}));
    failed.push_back(r.failed);
  }
  EXPECT_EQ(failed[0], failed[1]);
  EXPECT_EQ(failed[1], failed[2]);
}

TEST(ClosedLoop, WhatIsNotModelledIsRefused) {
  auto message = [](std::map<std::string, std::string> sets) {
    try {
      example(sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({{"engine", "fluid"}})
                .find("demand.clients: 40 closed-loop clients run with "
                      "engine=agent"),
            std::string::npos);
  EXPECT_NE(message({{"demand.process", "bursty"}}).find("bursty is open loop"), std::string::npos);
  EXPECT_NE(message({{"demand.think_s", "0"}}).find("demand.think_s"), std::string::npos);
}

}  // namespace
}  // namespace retrystorm
