// gRPC hedging (docs/conformance.md, "gRPC hedging"): the real grpc-js
// client with a hedgingPolicy against the scripted server, next to the agent
// engine running the same service config as imported. grpc-js hedges
// (retrying-call.ts: RetryingCall.maybeStartHedgingAttempt sends a hedge
// every hedgingDelay while attempts are left; handleProcessedStatus sends the
// next at once after a nonFatalStatusCodes answer and ends the call on any
// other; the first OK commits and cancels the rest). gRPC C-core does not
// hedge, so only grpc-js runs here.
#include <iostream>

#include "engines/agent/agent.hpp"
#include "formats/scenario_io.hpp"
#include "grpc_drivers.hpp"
#include "model/keys.hpp"

namespace retrystorm::conformance {
namespace {

using testing::TempDir;

std::string hedged_config(int max_attempts, const std::string& delay,
                          const std::string& non_fatal = "UNAVAILABLE") {
  json hp = {{"maxAttempts", max_attempts},
             {"hedgingDelay", delay},
             {"nonFatalStatusCodes", json::array({non_fatal})}};
  json mc = {{"name", json::array({{{"service", "rs.Scripted"}}})}, {"hedgingPolicy", hp}};
  return json{{"methodConfig", json::array({mc})}}.dump();
}

struct Row : AttemptSink {
  std::vector<AttemptRow> rows;
  void row(const AttemptRow& r) override { rows.push_back(r); }
};

// The agent engine on the imported keys, one request at a time, every answer
// taking `service_s`: the send instants of the first request's attempts
// after its first (s) and its latency.
std::pair<std::vector<double>, double> engine_prediction(const std::string& config,
                                                         double service_s) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  for (const auto& k : configs::import_configs({{"sc.json", config}}).keys)
    set_key(s, k.path, k.value);
  for (auto [path, value] : std::initializer_list<std::pair<const char*, const char*>>{
           {"engine", "agent"},
           {"horizon_s", "20"},
           {"demand.rate_per_s", "1"},
           {"demand.process", "deterministic"},
           {"server.slots", "10"},
           {"server.service", "deterministic"},
           {"incident.capacity_factor", "1"}})
    set_key_text(s, path, value);
  set_key(s, "server.capacity_per_s", 10 / service_s);
  validate(s);
  Row log;
  run_agent(s, {&log, nullptr});
  std::vector<double> sent;
  double answered = 0;
  for (const auto& row : log.rows) {
    if (row.request_id != 0 || row.layer != 1) continue;
    sent.push_back(row.sent_s);
    if (row.outcome == request_log::AttemptOutcome::ok) answered = row.done_s;
  }
  std::sort(sent.begin(), sent.end());
  const double first = sent.empty() ? 0 : sent.front();
  for (double& t : sent) t -= first;
  return {sent, answered - first};
}

class GrpcHedging : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!node_ready())
      GTEST_SKIP() << "no node or no tests/conformance/node/node_modules (scripts/setup.sh)";
  }
};

// Every answer takes 400 ms; hedgingDelay 100 ms, 3 attempts: hedges arrive
// at 0, 100 and 200 ms and the call ends OK with the first answer, at 400 ms.
TEST_F(GrpcHedging, SlowAnswersBringAHedgeEveryDelayAndTheFirstAnswerWins) {
  TempDir dir("grpc_hedging_slow");
  std::string config = hedged_config(3, "0.1s");
  ASSERT_EQ(model_of(config).hedging(0), Hedging::grpc);
  auto [model_sent, model_latency] = engine_prediction(config, 0.4);
  ASSERT_EQ(model_sent.size(), 3u);
  ScriptedServer server(dir.path(), "slow", {{"then", {{"status", "OK"}, {"delay_ms", 400}}}},
                        "grpc");
  ASSERT_GT(server.port(), 0);
  ClientRun run = run_client(Client::node, dir.path(), server.port(), config,
                             {"--calls", "6", "--gap-ms", "600"});
  ASSERT_EQ(run.calls.size(), 6u);
  auto record = server.stop_and_record();
  for (const auto& call : run.calls) {
    EXPECT_EQ(call.status, "OK") << call.message;
    if (call.request == "r-1") continue;  // its first attempt waits for the connection
    EXPECT_GE(call.elapsed_ms, model_latency * 1000 - kSchedulingToleranceMs);
    EXPECT_LE(call.elapsed_ms, model_latency * 1000 + 8 * kSchedulingToleranceMs);  // node is slow
    auto attempts = attempts_of(record, call.request);
    ASSERT_EQ(attempts.size(), model_sent.size()) << call.request;
    for (size_t k = 1; k < attempts.size(); ++k) {
      double gap = attempts[k].t_ms - attempts[0].t_ms;
      EXPECT_GE(gap, model_sent[k] * 1000 - kSchedulingToleranceMs) << call.request << " " << k;
      EXPECT_LE(gap, model_sent[k] * 1000 + 3 * kSchedulingToleranceMs) << call.request << " " << k;
    }
  }
  std::cout << "[ hedging ] model: hedges at +100, +200 ms, answer at " << model_latency * 1000
            << " ms; grpc-js: answer at " << median([&] {
                 std::vector<double> v;
                 for (const auto& c : run.calls) v.push_back(c.elapsed_ms);
                 return v;
               }())
            << " ms\n";
}

// A non-fatal answer (UNAVAILABLE after 30 ms) brings the next hedge at once,
// before the 100 ms delay; an answer outside nonFatalStatusCodes (UNAVAILABLE
// where only RESOURCE_EXHAUSTED is) ends the call after one attempt. The model decides both with
// the imported policy: retried answer -> next hedge now, other answer -> the call fails.
TEST_F(GrpcHedging, ANonFatalAnswerBringsTheNextHedgeAtOnceAFatalOneEndsTheCall) {
  TempDir dir("grpc_hedging_answers");
  std::string config = hedged_config(3, "0.1s");
  ClientPolicy model = model_of(config);
  Failure unavailable;
  unavailable.answer = FailureClass::http_503;  // UNAVAILABLE, as a proxy's 503 reaches gRPC
  EXPECT_TRUE(model.retryable(unavailable));
  EXPECT_EQ(model.decide(unavailable).delay.high_s, 0);  // no backoff: at once
  {
    ScriptedServer server(
        dir.path(), "nonfatal",
        {{"answers", json::array({{{"status", "UNAVAILABLE"}, {"delay_ms", 30}}})},
         {"then", {{"status", "OK"}}}},
        "grpc");
    ASSERT_GT(server.port(), 0);
    ClientRun run = run_client(Client::node, dir.path(), server.port(), config,
                               {"--calls", "6", "--gap-ms", "200"});
    ASSERT_EQ(run.calls.size(), 6u);
    auto record = server.stop_and_record();
    for (const auto& call : run.calls) {
      EXPECT_EQ(call.status, "OK") << call.message;
      auto attempts = attempts_of(record, call.request);
      ASSERT_EQ(attempts.size(), 2u) << call.request;
      double gap = attempts[1].t_ms - attempts[0].end_ms;
      EXPECT_GE(gap, -1) << call.request;
      EXPECT_LE(gap, 3 * kSchedulingToleranceMs) << call.request;  // not the 100 ms delay
    }
  }
  std::string only_429 = hedged_config(3, "0.1s", "RESOURCE_EXHAUSTED");
  EXPECT_FALSE(model_of(only_429).retryable(unavailable));
  ScriptedServer server(dir.path(), "fatal",
                        {{"then", {{"status", "UNAVAILABLE"}, {"delay_ms", 30}}}}, "grpc");
  ASSERT_GT(server.port(), 0);
  ClientRun run = run_client(Client::node, dir.path(), server.port(), only_429, {"--calls", "4"});
  ASSERT_EQ(run.calls.size(), 4u);
  auto record = server.stop_and_record();
  for (const auto& call : run.calls) {
    EXPECT_EQ(call.status, "UNAVAILABLE") << call.message;
    EXPECT_EQ(attempts_of(record, call.request).size(), 1u) << call.request;
  }
}

}  // namespace
}  // namespace retrystorm::conformance
