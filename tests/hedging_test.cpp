// Hedging (issue 26, part 2; docs/policies.md, "Hedging"): a hedging layer
// sends its next attempt when its timeout passes without an answer and keeps
// the earlier ones in flight; the first answer wins and the others are
// cancelled. gRPC's hedgingPolicy (grpc-js retrying-call.ts
// RetryingCall.maybeStartHedgingAttempt, handleProcessedStatus) sends the next
// hedge at once, and at once after any hedge's nonFatalStatusCodes answer;
// Envoy's hedge_on_per_try_timeout (router.cc Filter::onSoftPerTryTimeout,
// RetryStateImpl::shouldHedgeRetryPerTryTimeout) after the backoff, and
// retries only the latest attempt's failure (onUpstreamHeaders: an attempt
// already retried is not retried again).
#include <gtest/gtest.h>

#include <map>

#include "analysis/metrics.hpp"
#include "configs_helpers.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "policies/client_policy.hpp"
#include "preset_scenario.hpp"
#include "session_log/request_log.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"

namespace retrystorm {
namespace {

using request_log::AttemptOutcome;

struct Rows : AttemptSink {
  std::vector<AttemptRow> rows;
  void row(const AttemptRow& r) override { rows.push_back(r); }
};

// The attempts at the server of each request, by attempt number.
std::map<uint64_t, std::map<int, AttemptRow>> by_request(const Scenario& s) {
  Rows log;
  run_agent(s, {&log, nullptr});
  std::map<uint64_t, std::map<int, AttemptRow>> out;
  for (const auto& r : log.rows)
    if (r.layer == 1) out[r.request_id][r.attempt] = r;
  return out;
}

// No incident, service always `service_s` (slots / capacity), a tenth of the
// slots busy: nothing queues, every attempt takes exactly service_s.
// The backoff: none for gRPC (a hedgingPolicy has none), 50 ms for Envoy.
Scenario slow_answers(const std::string& hedging, const std::string& service_s) {
  std::string backoff = hedging == "envoy" ? "0.05" : "0";
  return testing::preset("primary-failover",
                         {{"engine", "agent"},
                          {"horizon_s", "20"},
                          {"demand.rate_per_s", "5"},
                          {"demand.process", "deterministic"},
                          {"server.slots", "100"},
                          {"server.capacity_per_s", std::to_string(100 / std::stod(service_s))},
                          {"server.service", "deterministic"},
                          {"incident.capacity_factor", "1"},
                          {"client.timeout_s", "0.1"},
                          {"client.backoff.base_s", backoff},
                          {"client.backoff.cap_s", backoff},
                          {"client.backoff.jitter", "none"},
                          {"client.hedging", hedging}});
}

// Answers take 0.3 s, the timeout is 0.1 s: retrying fails every request,
// gRPC hedging answers every one in 0.3 s with 3 attempts at 0, 0.1, 0.2 s.
TEST(Hedging, GrpcHedgesKeepTheSlowAttemptsAndTheFirstAnswerWins) {
  Scenario hedged = slow_answers("grpc", "0.3");
  RunResult r = run_engine(hedged);
  ASSERT_GT(r.user_requests, 90);
  EXPECT_EQ(r.succeeded + r.in_flight, r.user_requests);
  EXPECT_EQ(r.failed, 0);
  EXPECT_NEAR(*r.success_latency.quantile(0.5), 0.3, 0.01);
  EXPECT_NEAR(*r.success_latency.quantile(0.99), 0.3, 0.01);
  for (const auto& [request, attempts] : by_request(hedged)) {
    if (attempts.at(1).sent_s > 19) continue;  // near the horizon
    ASSERT_EQ(attempts.size(), 3u) << "request " << request;
    double start = attempts.at(1).sent_s;
    EXPECT_NEAR(attempts.at(2).sent_s - start, 0.1, 1e-9);
    EXPECT_NEAR(attempts.at(3).sent_s - start, 0.2, 1e-9);
    EXPECT_EQ(attempts.at(1).outcome, AttemptOutcome::ok);
    EXPECT_EQ(attempts.at(2).outcome, AttemptOutcome::late);  // served in vain
    EXPECT_EQ(attempts.at(3).outcome, AttemptOutcome::late);
  }
  Metrics m = compute_metrics(r);
  EXPECT_NEAR(m.served_late, 2 * r.succeeded, 2.5);
  // The same policy retrying: every attempt times out.
  RunResult retried = run_engine(slow_answers("none", "0.3"));
  EXPECT_EQ(retried.succeeded, 0);
}

// Envoy hedges after the backoff (50 ms here): attempts at 0, 0.15, 0.3 s;
// the answer of the first, 0.4 s after it, wins.
TEST(Hedging, EnvoyHedgesAfterTheBackoff) {
  Scenario hedged = slow_answers("envoy", "0.4");
  RunResult r = run_engine(hedged);
  EXPECT_EQ(r.failed, 0);
  EXPECT_NEAR(*r.success_latency.quantile(0.5), 0.4, 0.01);
  for (const auto& [request, attempts] : by_request(hedged)) {
    if (attempts.at(1).sent_s > 19) continue;
    ASSERT_EQ(attempts.size(), 3u) << "request " << request;
    double start = attempts.at(1).sent_s;
    EXPECT_NEAR(attempts.at(2).sent_s - start, 0.15, 1e-9);
    EXPECT_NEAR(attempts.at(3).sent_s - start, 0.3, 1e-9);
  }
}

// The primary-failover outage answering 503 at once: a gRPC hedging call
// sends its next hedge at the instant a hedge fails, an answer outside
// nonFatalStatusCodes ends the call after one attempt, and Envoy waits the
// backoff before the next.
Scenario failing_fast(const std::string& hedging, const std::string& retry_on = "all") {
  std::string backoff = hedging == "envoy" ? "0.1" : "0";  // full jitter, doubling
  return testing::preset("primary-failover", {{"engine", "agent"},
                                              {"client.backoff.base_s", backoff},
                                              {"horizon_s", "40"},
                                              {"demand.rate_per_s", "50"},
                                              {"server.capacity_per_s", "100"},
                                              {"incident.failure", "503"},
                                              {"client.retry_on", retry_on},
                                              {"client.hedging", hedging}});
}

TEST(Hedging, AFailedHedgeBringsTheNextOneAtOnceOrEndsTheCall) {
  int checked = 0;
  for (const auto& [request, attempts] : by_request(failing_fast("grpc"))) {
    const AttemptRow& first = attempts.at(1);
    if (first.sent_s < 11 || first.sent_s > 24) continue;  // well inside the outage
    ASSERT_EQ(attempts.size(), 3u) << "request " << request;
    for (const auto& [n, a] : attempts) {
      EXPECT_EQ(a.outcome, AttemptOutcome::rejected);
      EXPECT_EQ(a.sent_s, first.sent_s) << "attempt " << n;
    }
    ++checked;
  }
  EXPECT_GT(checked, 500);
  // A backoff given by hand does not hold gRPC's next hedge back after an
  // answer (handleProcessedStatus starts it at once).
  Scenario by_hand = failing_fast("grpc");
  set_key_text(by_hand, "client.backoff.base_s", "0.1");
  validate(by_hand);
  checked = 0;
  for (const auto& [request, attempts] : by_request(by_hand)) {
    if (attempts.at(1).sent_s < 11 || attempts.at(1).sent_s > 24) continue;
    ASSERT_EQ(attempts.size(), 3u) << "request " << request;
    for (const auto& [n, a] : attempts) EXPECT_EQ(a.sent_s, attempts.at(1).sent_s);
    ++checked;
  }
  EXPECT_GT(checked, 500);
  for (const auto& [request, attempts] : by_request(failing_fast("grpc", "none"))) {
    if (attempts.at(1).sent_s < 11 || attempts.at(1).sent_s > 24) continue;
    EXPECT_EQ(attempts.size(), 1u) << "request " << request;
  }
  for (const auto& [request, attempts] : by_request(failing_fast("envoy"))) {
    if (attempts.at(1).sent_s < 11 || attempts.at(1).sent_s > 20) continue;
    ASSERT_EQ(attempts.size(), 3u) << "request " << request;
    for (int n : {2, 3}) {
      double gap = attempts.at(n).sent_s - attempts.at(n - 1).done_s;
      EXPECT_GT(gap, 0);
      EXPECT_LT(gap, 0.1 * (n == 2 ? 1 : 2));  // full jitter over 100 ms, then 200 ms
    }
  }
}

// A hedging layer hedges when its timeout passes whatever it retries:
// Envoy's hedge_on_per_try_timeout does not read retry_on
// (RetryStateImpl::shouldHedgeRetryPerTryTimeout), gRPC's hedgingDelay no
// status. client.retry_on_timeout false stopped every hedge.
TEST(Hedging, TheTimeoutHedgesWhateverTimeoutsRetry) {
  for (const char* kind : {"grpc", "envoy"}) {
    Scenario s = slow_answers(kind, "0.3");
    set_key_text(s, "client.retry_on_timeout", "false");
    validate(s);
    int hedged = 0;
    for (const auto& [request, attempts] : by_request(s)) hedged += attempts.size() > 1;
    EXPECT_GT(hedged, 50) << kind;
  }
}

// gRPC's throttling counts failed hedges and stops new ones below half its
// tokens (gRPC's retry design, A6): fewer attempts reach the server.
TEST(Hedging, ThrottlingBoundsHedges) {
  Scenario free = failing_fast("grpc");
  Scenario throttled = free;
  set_key_text(throttled, "client.budget.kind", "grpc_throttling");
  set_key_text(throttled, "client.budget.clients", "1");
  validate(throttled);
  Metrics a = compute_metrics(run_engine(free));
  RunResult t = run_engine(throttled);
  Metrics b = compute_metrics(t);
  double denied = 0;
  for (double d : t.series.budget_denied) denied += d;
  EXPECT_GT(denied, 500);  // about one per request of the outage
  EXPECT_LT(b.retries, a.retries / 2);
}

TEST(Hedging, TheKeyNamesEachLayerAndRefusesOtherWords) {
  Scenario s = testing::preset("two-layer-stack", {{"engine", "agent"}});
  set_key_text(s, "client.hedging", "grpc,retry");
  EXPECT_EQ(ClientPolicy::of(s).hedging(0), Hedging::grpc);
  EXPECT_EQ(ClientPolicy::of(s).hedging(1), Hedging::none);
  set_key_text(s, "client.hedging", "envoy");
  EXPECT_EQ(ClientPolicy::of(s).hedging(1), Hedging::envoy);
  // The fluid engine has no hedging: it reads the layers as retrying.
  set_key_text(s, "engine", "fluid");
  EXPECT_EQ(ClientPolicy::of(s).hedging(0), Hedging::none);
  for (const char* bad : {"maybe", "grpc", "grpc,retry,retry"}) {
    Scenario b = testing::preset("primary-failover", {{"engine", "agent"}});
    set_key_text(b, "client.hedging", bad);
    if (std::string(bad) == "grpc") set_key_text(b, "client.hedging", "grpc,grpc");
    try {
      validate(b);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("client.hedging: '"), std::string::npos) << e.what();
    }
  }
}

using configs::testing::has_key;
using configs::testing::str;

bool mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

constexpr const char* kHedgedGrpc =
    R"({"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.1s",
"nonFatalStatusCodes":["UNAVAILABLE"]}}]})";

TEST(Hedging, GrpcAndEnvoyImportHowTheyHedge) {
  EXPECT_EQ(str(configs::import_configs({{"sc.json", kHedgedGrpc}}), "client.hedging"), "grpc");
  // Envoy: hedge_on_per_try_timeout with a per_try_timeout; Envoy never
  // reads initial_requests (route_components.proto marks it not implemented).
  auto envoy = configs::import_configs(
      {{"e.yaml",
        "routes:\n- match: {prefix: /}\n  route:\n    cluster: api\n"
        "    hedge_policy: {hedge_on_per_try_timeout: true, initial_requests: 2}\n"
        "    retry_policy: {retry_on: connect-failure, num_retries: 2, per_try_timeout: 0.2s}\n"}});
  EXPECT_EQ(str(envoy, "client.hedging"), "envoy");
  EXPECT_TRUE(
      configs::testing::flag(envoy, "client.retry_on_timeout"));  // hedged whatever retry_on says
  EXPECT_TRUE(mentions(envoy.warnings, "initial_requests is not implemented by Envoy"));
  // Without a per-try timeout nothing is hedged.
  auto untimed =
      configs::import_configs({{"e.yaml",
                                "routes:\n- match: {prefix: /}\n  route:\n    cluster: api\n"
                                "    hedge_policy: {hedge_on_per_try_timeout: true}\n"
                                "    retry_policy: {retry_on: 5xx, num_retries: 2}\n"}});
  EXPECT_FALSE(has_key(untimed, "client.hedging"));
  // A stack: the gRPC client hedges, the Envoy below it retries.
  auto stack = configs::import_configs(
      {{"sc.json", kHedgedGrpc},
       {"e.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 2\n  per_try_timeout: 1s\n"}});
  EXPECT_EQ(str(stack, "client.hedging"), "grpc,retry");
}

TEST(Hedging, ExportWritesTheHedgingOfEachSystemAndReadsItBack) {
  Scenario s = testing::preset("primary-failover", {{"engine", "agent"},
                                                    {"client.hedging", "grpc"},
                                                    {"client.timeout_s", "0.1"},
                                                    {"client.backoff.base_s", "0.05"}});
  configs::ExportResult grpc = configs::export_config(s, configs::System::grpc);
  EXPECT_NE(grpc.text.find("\"hedgingPolicy\""), std::string::npos) << grpc.text;
  EXPECT_EQ(grpc.text.find("\"retryPolicy\""), std::string::npos) << grpc.text;
  EXPECT_EQ(str(configs::import_configs({{"sc.json", grpc.text}}), "client.hedging"), "grpc");
  set_key_text(s, "client.hedging", "envoy");
  configs::ExportResult envoy = configs::export_config(s, configs::System::envoy);
  EXPECT_NE(envoy.text.find("hedge_on_per_try_timeout: true"), std::string::npos) << envoy.text;
  EXPECT_EQ(str(configs::import_configs({{"e.yaml", envoy.text}}), "client.hedging"), "envoy");
}

}  // namespace
}  // namespace retrystorm
