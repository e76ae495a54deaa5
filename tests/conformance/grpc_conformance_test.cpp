// gRPC retries, backoff and retryThrottling (docs/conformance.md, "gRPC"):
// both real clients against the scripted server, compared with ClientPolicy
// and RetryBudget read from the same service config.
#include <iostream>

#include "grpc_drivers.hpp"

namespace retrystorm::conformance {
namespace {

using testing::TempDir;

// maxAttempts above 5 is clamped to 5 (C-core retry_service_config.cc
// "clamped retryPolicy.maxAttempts"; grpc-js retrying-call.ts
// DEFAULT_MAX_ATTEMPTS_LIMIT); only retryableStatusCodes are retried; the
// attempt number is announced in grpc-previous-rpc-attempts.
TEST_P(GrpcConformance, AttemptsPerCallAndRetryableCodes) {
  TempDir dir("grpc_attempts");
  std::string config = service_config(
      retry_policy(7, "0.005s", "0.01s", 2, json::array({"UNAVAILABLE", "RESOURCE_EXHAUSTED"})));
  ClientPolicy model = model_of(config);
  ASSERT_EQ(model.attempts(), 5);

  struct Case {
    json schedule;
    std::string final_status;
    int failures;  // retryable failures before success (INT_MAX: all)
    bool retryable;
  };
  std::vector<Case> cases = {
      {{{"then", {{"status", "UNAVAILABLE"}}}}, "UNAVAILABLE", INT_MAX, true},
      {{{"answers",
         json::array({{{"status", "RESOURCE_EXHAUSTED"}}, {{"status", "RESOURCE_EXHAUSTED"}}})},
        {"then", {{"status", "OK"}}}},
       "OK",
       2,
       true},
      {{{"then", {{"status", "INTERNAL"}}}}, "INTERNAL", INT_MAX, false},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.schedule.dump());
    ScriptedServer server(dir.path(), "s" + std::to_string(++n), c.schedule, "grpc");
    ASSERT_GT(server.port(), 0);
    ClientRun run = this->run(dir.path(), server.port(), config, {"--calls", "3"});
    ASSERT_EQ(run.calls.size(), 3u);
    auto record = server.stop_and_record();
    // A code outside retryableStatusCodes ends the call: the model's engines
    // see it as a failure that is not retried (no decide() call).
    int expected = c.retryable ? model_attempts(model, c.failures) : 1;
    for (const auto& call : run.calls) {
      EXPECT_EQ(call.status, c.final_status) << call.message;
      auto attempts = attempts_of(record, call.request);
      ASSERT_EQ(static_cast<int>(attempts.size()), expected) << call.request;
      for (int k = 0; k < expected; ++k) {
        if (k == 0)
          EXPECT_FALSE(attempts[0].announced.has_value());
        else
          EXPECT_EQ(attempts[k].announced, std::to_string(k));
      }
    }
  }
}

// Backoff: C-core 1.51 (retry_filter.cc, RETRY_BACKOFF_JITTER 0.2, and
// src/core/lib/backoff/backoff.cc BackOff::NextAttemptTime) waits exactly
// initialBackoff before attempt 2, then min(initialBackoff x multiplier^(n-1),
// maxBackoff) x U(0.8, 1.2); grpc-js (retrying-call.ts getNextRetryBackoffMs)
// jitters every delay by U(0.8, 1.2). The model (Jitter::grpc) draws every
// delay from [0.8 w, 1.2 w). Over >= 500 delays: KS at alpha = 0.001 on the
// position of each delay in its model range, plus min / max inside the range.
//
// A measured gap (server sent the failure -> next attempt arrived) is the
// delay plus an offset (loopback, scheduling, timer ticks), subtracted.
TEST_P(GrpcConformance, BackoffDelaysFollowTheModelsRanges) {
  TempDir dir("grpc_backoff");
  std::string config = service_config(retry_policy(5, "0.08s", "0.32s", 2));
  ClientPolicy model = model_of(config);
  const json failing = {{"then", {{"status", "UNAVAILABLE"}}}};
  ScriptedServer server(dir.path(), "backoff", failing, "grpc");
  ASSERT_GT(server.port(), 0);
  // The offset is estimated in the same run, under the same machine load.
  // C-core: its first retry is not jittered (below), so the retry-1 gaps minus
  // initialBackoff are the calibration. grpc-js: the median of (gap - w) over
  // every retry, where w is the middle of the model's range; this fits only
  // the location, so the KS below still tests the shape of the jitter and
  // the 5th / 95th percentiles its width (a wrong window would show as an
  // offset of tens of ms, refused below).
  // 220 calls, 40 at a time; the first wave (the client warming up: channel,
  // JIT) is left out, 180 calls are measured.
  ClientRun run =
      this->run(dir.path(), server.port(), config, {"--calls", "220", "--concurrency", "40"});
  ASSERT_EQ(run.calls.size(), 220u);
  auto gaps = retry_gaps(server.stop_and_record(), 40);
  const bool fixed_first = GetParam() == Client::c_core;
  const double first_w = backoff_window_s(model.backoff(), 1) * 1000;
  std::vector<double> beyond_middle;
  for (int k = 1; k <= 4; ++k)
    for (double g : gaps[k])
      beyond_middle.push_back(g - 500 * (model.delay(k).low_s + model.delay(k).high_s));
  const double offset = fixed_first ? median(gaps[1]) - first_w : median(beyond_middle);
  ASSERT_LT(std::abs(offset), 10.0) << "loopback offset out of bounds; machine overloaded?";

  std::vector<double> positions;
  for (int k = 1; k <= 4; ++k) {
    DelayRange r = model.delay(k);
    SCOPED_TRACE("retry " + std::to_string(k));
    ASSERT_EQ(gaps[k].size(), 180u);
    std::vector<double> delays;
    for (double g : gaps[k]) delays.push_back(g - offset);
    if (k == 1 && fixed_first) {
      // The mismatch, pinned: C-core 1.51 does not jitter the first retry.
      // The model's U(0.8 w, 1.2 w) spreads the middle half over 0.2 w.
      EXPECT_LT(quantile(delays, 0.75) - quantile(delays, 0.25), 0.1 * first_w);
      continue;
    }
    // Scheduling noise (pauses of a loaded machine hold several attempts at
    // once, up to a few % of them): min and max are read as the 5th and 95th
    // percentiles, still far from what another jitter kind gives (full
    // jitter's 5th percentile is 0.05 w).
    EXPECT_GE(quantile(delays, 0.05), r.low_s * 1000 - kSchedulingToleranceMs);
    EXPECT_LE(quantile(delays, 0.95), r.high_s * 1000 + kSchedulingToleranceMs);
    std::cout << "[ backoff  ] retry " << k << ": model [" << r.low_s * 1000 << ", "
              << r.high_s * 1000 << ") ms, measured min " << quantile(delays, 0) << ", max "
              << quantile(delays, 1) << " ms\n";
    for (double d : delays) positions.push_back(position_in(r, d / 1000));
  }
  ASSERT_GE(positions.size(), 500u);
  KsResult ks = ks_test(positions, uniform_cdf({0, 1}));
  // For docs/conformance.md, written from a run.
  std::cout << "[ backoff  ] n = " << ks.n << ", D = " << ks.d << ", critical = " << ks.critical
            << ", offset = " << offset << " ms\n";
  EXPECT_FALSE(ks.rejects()) << "D = " << ks.d << " > " << ks.critical << " (n = " << ks.n
                             << ", offset " << offset << " ms)";
}

// retryThrottling: tokens start at maxTokens; each retryable failure -1 (the
// last attempt's too), each success +tokenRatio; a retry only while tokens >
// maxTokens / 2 after the failure (C-core retry_throttle.cc
// ServerRetryThrottleData::RecordFailure / RecordSuccess, called from
// retry_filter.cc ShouldRetry; grpc-js RetryThrottler, checked after the
// backoff). A global schedule (a burst of failures, successes, failures
// again) runs through the real client and through RetryBudget: the attempts
// of every call must match exactly.
TEST_P(GrpcConformance, ThrottlingAfterABurstAndTheRecovery) {
  TempDir dir("grpc_throttling");
  std::string config =
      service_config(retry_policy(3, "0.001s", "0.001s", 1),
                     {{"retryThrottling", {{"maxTokens", 10}, {"tokenRatio", 0.5}}}});
  ClientPolicy model = model_of(config);
  ASSERT_EQ(model.budget().kind, BudgetKind::grpc_throttling);
  // Arrivals 1-30 fail, 31-43 succeed (+6.5 tokens from 0), 44-53 fail.
  auto fails = [](int arrival) { return arrival <= 30 || (arrival >= 44 && arrival <= 53); };
  json answers = json::array();
  for (int n = 1; n <= 53; ++n) answers.push_back({{"status", fails(n) ? "UNAVAILABLE" : "OK"}});
  const int calls = 45;

  std::vector<int> expected;
  RetryBudget budget(model, 1, 1);
  for (int call = 1, arrival = 0; call <= calls; ++call) {
    int attempt = 1;
    for (;; ++attempt) {
      if (!fails(++arrival)) {
        budget.on_success(1, attempt);
        break;
      }
      Failure f;
      f.attempt = attempt;
      budget.on_attempt_failed(1, model.retryable(f));
      if (!model.decide(f).retries() || budget.take(1) < 1) break;
    }
    expected.push_back(attempt);
  }

  ScriptedServer server(dir.path(), "throttle", {{"mode", "global"}, {"answers", answers}}, "grpc");
  ASSERT_GT(server.port(), 0);
  ClientRun run = this->run(dir.path(), server.port(), config,
                            {"--calls", std::to_string(calls), "--concurrency", "1"});
  ASSERT_EQ(run.calls.size(), static_cast<size_t>(calls));
  auto record = server.stop_and_record();
  std::vector<int> real;
  for (const auto& c : run.calls)
    real.push_back(static_cast<int>(attempts_of(record, c.request).size()));
  EXPECT_EQ(real, expected);
  std::cout << "[ throttle ] attempts per call:";
  for (int a : real) std::cout << ' ' << a;
  std::cout << "\n";
}

// Server pushback: an UNAVAILABLE answer with grpc-retry-pushback-ms 300 is
// retried 300 ms later, not after the 10 ms backoff (C-core 1.51
// retry_filter.cc CallAttempt::ShouldRetry: server_pushback sets the next
// attempt's time; grpc-js retrying-call.ts: the pushback replaces the
// backoff). The model: client.pushback exact, imported with every gRPC
// service config, waits exactly the pushback (docs/policies.md, "Pushback").
TEST_P(GrpcConformance, ServerPushbackReplacesTheBackoff) {
  TempDir dir("grpc_pushback");
  std::string config = service_config(retry_policy(4, "0.01s", "0.01s", 1));
  ClientPolicy model = model_of(config);
  ASSERT_EQ(model.pushback(), Pushback::exact);
  const json pushed = {{"status", "UNAVAILABLE"}, {"headers", {{"grpc-retry-pushback-ms", "300"}}}};
  ScriptedServer server(dir.path(), "pushback",
                        {{"answers", json::array({pushed, pushed})}, {"then", {{"status", "OK"}}}},
                        "grpc");
  ASSERT_GT(server.port(), 0);
  ClientRun run =
      this->run(dir.path(), server.port(), config, {"--calls", "4", "--concurrency", "2"});
  ASSERT_EQ(run.calls.size(), 4u);
  for (const auto& call : run.calls) EXPECT_EQ(call.status, "OK") << call.message;
  auto gaps = retry_gaps(server.stop_and_record());
  Failure f;
  f.answer = FailureClass::http_503;  // UNAVAILABLE, as a proxy's 503 reaches a gRPC client
  f.pushback_s = 0.3;
  DelayRange expected = model.decide(f).delay;
  EXPECT_EQ(expected.low_s, 0.3);
  EXPECT_EQ(expected.high_s, 0.3);
  for (int k : {1, 2}) {
    ASSERT_EQ(gaps[k].size(), 4u) << "retry " << k;
    for (double g : gaps[k]) {
      EXPECT_GE(g, 300 - kSchedulingToleranceMs) << "retry " << k;
      EXPECT_LE(g, 300 + 3 * kSchedulingToleranceMs) << "retry " << k;  // a busy machine is late
    }
    std::cout << "[ pushback ] retry " << k << ": model 300 ms, measured " << quantile(gaps[k], 0)
              << " to " << quantile(gaps[k], 1) << " ms\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Clients, GrpcConformance, ::testing::Values(Client::c_core, Client::node),
                         client_name);

}  // namespace
}  // namespace retrystorm::conformance
