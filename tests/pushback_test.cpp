// Server pushback (issue 26, part 1; docs/policies.md, "Pushback"): a 503 or
// 429 rejection may say when to come back (Retry-After, gRPC's
// grpc-retry-pushback-ms), and a client that reads it waits that instead of
// its backoff: gRPC exactly, Envoy's rate_limited_retry_back_off in
// [p, 1.5 p) up to max_interval; such a retry starts gRPC's backoff ladder
// again and leaves Envoy's where it was. The agent engine runs it; the fluid
// engine refuses it; gRPC and Envoy configurations import it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "policies/client_policy.hpp"
#include "preset_scenario.hpp"
#include "session_log/request_log.hpp"
#include "systems/import.hpp"

namespace retrystorm {
namespace {

ClientPolicy policy_with(Pushback pushback, double max_s = 300) {
  ClientPolicy::Settings s;
  s.layer_retries = {3};
  s.backoff = Backoff{0.1, 2, 1, Jitter::full};
  s.pushback = pushback;
  s.pushback_max_s = max_s;
  return ClientPolicy(std::move(s));
}

Failure rejected(double pushback_s, bool timed_out = false) {
  Failure f;
  f.attempt = 1;
  f.timed_out = timed_out;
  f.answer = FailureClass::http_429;
  f.pushback_s = pushback_s;
  return f;
}

TEST(Pushback, EachClientWaitsThePushbackItsWay) {
  const DelayRange backoff{0, 0.1};
  // ignore: the backoff, whatever the answer says.
  DelayRange ignore = policy_with(Pushback::ignore).decide(rejected(2)).delay;
  EXPECT_EQ(ignore.low_s, backoff.low_s);
  EXPECT_EQ(ignore.high_s, backoff.high_s);
  // gRPC: exactly the pushback.
  DelayRange exact = policy_with(Pushback::exact).decide(rejected(2)).delay;
  EXPECT_EQ(exact.low_s, 2);
  EXPECT_EQ(exact.high_s, 2);
  // Envoy: [p, 1.5 p), and above max_interval back to the backoff.
  DelayRange envoy = policy_with(Pushback::envoy).decide(rejected(2)).delay;
  EXPECT_EQ(envoy.low_s, 2);
  EXPECT_EQ(envoy.high_s, 3);
  DelayRange too_long = policy_with(Pushback::envoy, 1).decide(rejected(2)).delay;
  EXPECT_EQ(too_long.high_s, backoff.high_s);
  // No pushback, or a timed-out attempt (no answer, no header): the backoff.
  EXPECT_EQ(policy_with(Pushback::exact).decide(rejected(0)).delay.high_s, backoff.high_s);
  EXPECT_EQ(policy_with(Pushback::exact).decide(rejected(2, true)).delay.high_s, backoff.high_s);
  // Attempts and answers retried are decided as before.
  Failure last = rejected(2);
  last.attempt = 4;
  EXPECT_FALSE(policy_with(Pushback::exact).decide(last).retries());
}

// The ranges of retries 1..n of one request whose attempts fail as
// `pushbacks` says (above 0: that pushback; 0: none), each failure carrying
// the ladder offset the decision before it left, as the engines pass it on.
std::vector<DelayRange> retries_of(const ClientPolicy& p, const std::vector<double>& pushbacks) {
  std::vector<DelayRange> out;
  int offset = 0;
  for (size_t k = 0; k < pushbacks.size(); ++k) {
    Failure f = rejected(pushbacks[k]);
    f.attempt = static_cast<int>(k) + 1;
    f.ladder_offset = offset;
    RetryDecision d = p.decide(f);
    EXPECT_TRUE(d.retries()) << "retry " << f.attempt;
    out.push_back(d.delay);
    offset = d.ladder_offset;
  }
  return out;
}

void expect_range(DelayRange got, DelayRange want, const std::string& what) {
  EXPECT_DOUBLE_EQ(got.low_s, want.low_s) << what;
  EXPECT_DOUBLE_EQ(got.high_s, want.high_s) << what;
}

// Envoy: a retry that waits a rate-limited reset header does not step the
// exponential ladder on. envoy source/common/router/retry_state_impl.cc,
// RetryStateImpl::enableBackoffTimer: with ratelimited_backoff_strategy_ set
// (shouldRetryHeaders, from parseResetInterval) only its nextBackOffMs is
// called, not backoff_strategy_'s, whose JitteredExponentialBackOffStrategy::
// nextBackOffMs (source/common/common/backoff_strategy.cc) doubles
// next_interval_. So the next ordinary retry draws the step it would have
// drawn without the rate-limited one.
TEST(Pushback, EnvoysRateLimitedRetryLeavesTheLadderWhereItWas) {
  const ClientPolicy envoy = policy_with(Pushback::envoy);
  const std::vector<DelayRange> without = retries_of(envoy, {0, 0});
  std::vector<DelayRange> first = retries_of(envoy, {2, 0});
  expect_range(first[0], {2, 3}, "the rate-limited retry");
  expect_range(first[1], without[0], "the ordinary retry after it: step 1, not 2");
  std::vector<DelayRange> between = retries_of(envoy, {0, 2, 0});
  expect_range(between[0], without[0], "step 1");
  expect_range(between[2], without[1], "step 2 after the rate-limited retry, not 3");
  // A pushback above max_interval is not waited: the ladder steps on.
  std::vector<DelayRange> too_long = retries_of(policy_with(Pushback::envoy, 1), {2, 0});
  expect_range(too_long[1], {0, 0.2}, "step 2");
}

// gRPC: a retry that waits a pushback starts the ladder again. C-core
// src/core/client_channel/retry_filter_legacy_call_data.cc,
// RetryFilter::LegacyCallData::StartRetryTimer: with server_pushback the
// delay is the pushback and retry_backoff_.Reset() (grpc-go shouldRetry:
// numRetriesSincePushback = 0; grpc-js RetryingCall.maybeRetryCall:
// nextRetryBackoffSec = initialRetryBackoffSec).
TEST(Pushback, GrpcsPushbackStartsTheLadderAgain) {
  const ClientPolicy grpc = policy_with(Pushback::exact);
  std::vector<DelayRange> r = retries_of(grpc, {0, 0.5, 0});
  expect_range(r[0], {0, 0.1}, "step 1");
  expect_range(r[1], {0.5, 0.5}, "the pushback");
  expect_range(r[2], {0, 0.1}, "step 1 again, not 3");
  // A client that ignores the pushback steps on with every retry (AWS SDKs,
  // Envoy without rate_limited_retry_back_off).
  std::vector<DelayRange> ignored = retries_of(policy_with(Pushback::ignore), {0, 0.5, 0});
  expect_range(ignored[2], {0, 0.4}, "step 3");
}

struct Rows : AttemptSink {
  std::vector<AttemptRow> rows;
  void row(const AttemptRow& r) override { rows.push_back(r); }
};

// A queue of 20 that rejects with 429 and Retry-After 2 s during a deep
// capacity drop: with pushback exact every retry after a rejection starts
// exactly 2 s after it; ignoring it, within the 100 ms backoff. `more`
// sets further keys.
Scenario rejecting(const std::string& pushback, std::map<std::string, std::string> more = {}) {
  std::map<std::string, std::string> keys = {{"engine", "agent"},
                                             {"horizon_s", "30"},
                                             {"incident.start_s", "5"},
                                             {"incident.duration_s", "5"},
                                             {"incident.capacity_factor", "0.1"},
                                             {"server.queue_limit", "20"},
                                             {"server.reject_status", "429"},
                                             {"server.retry_after_s", "2"},
                                             {"client.backoff.base_s", "0.1"},
                                             {"client.backoff.cap_s", "0.1"},
                                             {"client.pushback", pushback}};
  for (auto& [key, value] : more) keys[key] = value;
  Scenario s = testing::preset("primary-failover", keys);
  validate(s);
  return s;
}

// The gap from each rejected attempt to the next attempt of its request.
std::vector<double> gaps_after_rejections(const Scenario& s) {
  Rows log;
  run_agent(s, {&log, nullptr});
  std::map<std::pair<uint64_t, int>, const AttemptRow*> by_attempt;
  for (const auto& r : log.rows) by_attempt[{r.request_id, r.attempt}] = &r;
  std::vector<double> gaps;
  for (const auto& r : log.rows) {
    if (r.outcome != request_log::AttemptOutcome::rejected) continue;
    auto next = by_attempt.find({r.request_id, r.attempt + 1});
    if (next != by_attempt.end()) gaps.push_back(next->second->sent_s - r.done_s);
  }
  return gaps;
}

TEST(Pushback, TheAgentEngineRetriesARejectionAfterItsPushback) {
  std::vector<double> exact = gaps_after_rejections(rejecting("exact"));
  ASSERT_GT(exact.size(), 100u);
  for (double g : exact) EXPECT_NEAR(g, 2, 1e-9);
  std::vector<double> envoy = gaps_after_rejections(rejecting("envoy"));
  ASSERT_GT(envoy.size(), 100u);
  for (double g : envoy) {
    EXPECT_GE(g, 2 - 1e-9);
    EXPECT_LT(g, 3);
  }
  std::vector<double> ignored = gaps_after_rejections(rejecting("ignore"));
  ASSERT_GT(ignored.size(), 100u);
  for (double g : ignored) EXPECT_LT(g, 0.1 + 1e-9);
  // Waiting the pushback spreads the retries out: fewer attempts reach the server.
  Metrics with = compute_metrics(run_engine(rejecting("exact")));
  Metrics without = compute_metrics(run_engine(rejecting("ignore")));
  EXPECT_LT(with.rejected, without.rejected);
}

// Rejections (429, Retry-After 2 s) in a capacity drop, injected 503s
// without a header throughout, and a ladder without jitter (0.1, 0.2,
// 0.4 s): a gap of 2 s or more before a retry was a pushback, any other
// gap is a step of the ladder.
Scenario mixed(const std::string& pushback) {
  return rejecting(pushback, {{"server.error_share", "0.2"},
                              {"server.error_status", "503"},
                              {"client.retries", "3"},
                              {"client.backoff.cap_s", "0"},
                              {"client.backoff.jitter", "none"}});
}

struct LadderWalk {
  int pushbacks = 0;       // retries that waited a pushback
  int ordinary = 0;        // retries that waited the ladder
  int after_pushback = 0;  // of those, after a pushback of the same request
};

// Each request's retries, its ladder moved as `mode` moves it: every
// ordinary retry's gap must be the step the policy says.
LadderWalk walk_ladders(Pushback mode) {
  const Scenario s = mixed(mode == Pushback::exact   ? "exact"
                           : mode == Pushback::envoy ? "envoy"
                                                     : "ignore");
  Rows log;
  run_agent(s, {&log, nullptr});
  std::map<uint64_t, std::map<int, const AttemptRow*>> by_request;
  for (const auto& r : log.rows) by_request[r.request_id][r.attempt] = &r;
  LadderWalk w;
  for (const auto& [id, attempts] : by_request) {
    int offset = 0;
    for (const auto& [a, r] : attempts) {
      auto next = attempts.find(a + 1);
      if (next == attempts.end()) break;
      const bool answered = r->outcome == request_log::AttemptOutcome::rejected;
      const double failed_s = answered ? r->done_s : r->sent_s + s.client.timeout_s;
      const double gap = next->second->sent_s - failed_s;
      if (gap >= 2 - 1e-9) {  // longer than any step: a pushback
        ++w.pushbacks;
        offset = mode == Pushback::exact ? a : offset + 1;
        continue;
      }
      EXPECT_NEAR(gap, 0.1 * std::pow(2, a - offset - 1), 1e-9)
          << "request " << id << " retry " << a;
      ++w.ordinary;
      if (offset > 0) ++w.after_pushback;
    }
  }
  return w;
}

TEST(Pushback, TheAgentEngineMovesTheLadderAsEachClientDoes) {
  for (Pushback mode : {Pushback::envoy, Pushback::exact}) {
    LadderWalk w = walk_ladders(mode);
    EXPECT_GT(w.pushbacks, 100);
    EXPECT_GT(w.after_pushback, 20) << "ordinary retries after a pushback";
  }
  LadderWalk ignored = walk_ladders(Pushback::ignore);
  EXPECT_EQ(ignored.pushbacks, 0);
  EXPECT_GT(ignored.ordinary, 100);
}

TEST(Pushback, TheFluidEngineRefusesItAndTheDefaultChangesNothing) {
  try {
    testing::preset("primary-failover",
                    {{"server.retry_after_s", "2"}, {"client.pushback", "exact"}});
    ADD_FAILURE() << "the fluid engine ran a pushback";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("client.pushback: waiting a rejection's "
                                         "server.retry_after_s runs with engine=agent"),
              std::string::npos)
        << e.what();
  }
  // A pushback nobody reads, or a client with nothing to read: both run.
  validate(testing::preset("primary-failover", {{"server.retry_after_s", "2"}}));
  validate(testing::preset("primary-failover", {{"client.pushback", "exact"}}));
  // The default is today's run: the same bytes as without the keys.
  Scenario plain = testing::preset("primary-failover", {{"engine", "agent"}});
  Scenario keyed =
      testing::preset("primary-failover", {{"engine", "agent"}, {"client.pushback", "exact"}});
  EXPECT_EQ(compute_metrics(run_engine(plain)).failed, compute_metrics(run_engine(keyed)).failed);
}

std::string key_of(const configs::ImportResult& r, const std::string& path) {
  for (const auto& k : r.keys)
    if (k.path == path) return to_string(k.value);
  return "(not imported)";
}

TEST(Pushback, GrpcAndEnvoyImportTheirWayOfWaitingIt) {
  // Every gRPC client waits grpc-retry-pushback-ms exactly (C-core
  // RetryFilter CallAttempt::ShouldRetry; grpc-js RetryingCall).
  auto grpc = configs::import_configs(
      {{"sc.json",
        R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s",
"maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})"}});
  EXPECT_EQ(key_of(grpc, "client.pushback"), "exact");
  // Envoy only with rate_limited_retry_back_off (RetryStateImpl::parseResetInterval).
  auto envoy = configs::import_configs(
      {{"e.yaml",
        "retry_policy:\n  retry_on: retriable-status-codes\n  retriable_status_codes: [429]\n"
        "  num_retries: 2\n  rate_limited_retry_back_off:\n    reset_headers:\n"
        "    - name: Retry-After\n      format: SECONDS\n    max_interval: 30s\n"}});
  EXPECT_EQ(key_of(envoy, "client.pushback"), "envoy");
  EXPECT_EQ(key_of(envoy, "client.pushback_max_s"), "30");
  auto plain =
      configs::import_configs({{"e.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 2\n"}});
  EXPECT_EQ(key_of(plain, "client.pushback"), "(not imported)");
  EXPECT_THROW(configs::import_configs({{"e.yaml",
                                         "retry_policy:\n  retry_on: 5xx\n  num_retries: 2\n"
                                         "  rate_limited_retry_back_off: {}\n"}}),
               InputError);
}

}  // namespace
}  // namespace retrystorm
