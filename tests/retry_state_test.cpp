// RetryState: the policy's decision and the budget's admission as one answer,
// for one request (agent engine, lab) and for cohorts (fluid engine); and
// ClientPolicy built once from its settings (docs/policies.md, "When a budget
// decides").
#include "policies/retry_state.hpp"

#include <gtest/gtest.h>

#include "systems/import.hpp"

namespace retrystorm {
namespace {

ClientPolicy one_layer(int retries, Budget budget, double deadline_s = 0,
                       DeadlineRule rule = DeadlineRule::none) {
  ClientPolicy::Settings s;
  s.layer_retries = {retries};
  s.layer_timeouts_s = {s.timeout_s};
  s.backoff = {1, 2, 0, Jitter::none};
  s.budget = budget;
  s.deadline_s = deadline_s;
  s.deadline_rule = rule;
  return ClientPolicy(std::move(s));
}

Budget envoy_budget() {
  Budget b;
  b.kind = BudgetKind::envoy_concurrency;
  b.ratio = 0.2;
  b.min_concurrency = 3;
  b.clients = 1;
  return b;
}

double never(double, double) {
  ADD_FAILURE() << "a fixed ladder draws no random number";
  return 0;
}

TEST(RetryState, ARetryLeftWithoutABudgetRetriesAfterItsBackoff) {
  ClientPolicy p = one_layer(2, Budget{});
  RetryState state(p, RetryBudget(p, 100, 1));
  RetryOutcome o = state.on_failure(Failure{.layer = 0, .attempt = 1}, InFlight{}, never);
  EXPECT_EQ(o.action, RetryAction::retry);
  EXPECT_EQ(o.decision.retry, 1);
  EXPECT_DOUBLE_EQ(o.decision.delay_s, 1);
  EXPECT_EQ(o.admitted, 1);
  EXPECT_EQ(o.denied, 0);
  EXPECT_EQ(o.cause, RetryCause::error);
  EXPECT_TRUE(state.on_due(InFlight{}, o.cause));
}

TEST(RetryState, NoAttemptsLeftFailsWithoutAskingTheBudget) {
  ClientPolicy p = one_layer(1, envoy_budget());
  RetryState state(p, RetryBudget(p, 100, 1));
  // A held slot for every retry allowed: a budget asked would refuse.
  InFlight full{.attempts = 10, .retries = 3};
  RetryOutcome o =
      state.on_failure(Failure{.layer = 0, .attempt = 2, .timed_out = true}, full, never);
  EXPECT_EQ(o.action, RetryAction::fail);
  EXPECT_EQ(o.decision.verdict, RetryVerdict::exhausted);
  EXPECT_EQ(o.denied, 0);
  EXPECT_EQ(o.cause, RetryCause::timeout);
}

// Envoy's budget decides at the failure (RetryStateImpl::shouldRetry): with
// 10 requests in flight the limit is max(floor(0.2 x 10), 3) = 3 retries.
TEST(RetryState, ABudgetThatAdmitsAtTheFailureDecidesBeforeTheBackoff) {
  ClientPolicy p = one_layer(3, envoy_budget());
  RetryState state(p, RetryBudget(p, 100, 1));
  EXPECT_TRUE(state.admits_at_failure());
  Failure f{.layer = 0, .attempt = 1};
  EXPECT_EQ(state.on_failure(f, InFlight{10, 2}, never).action, RetryAction::retry);
  RetryOutcome refused = state.on_failure(f, InFlight{10, 3}, never);
  EXPECT_EQ(refused.action, RetryAction::denied);
  EXPECT_EQ(refused.admitted, 0);
  EXPECT_EQ(refused.denied, 1);
  // The retry was admitted already: when it is due, nothing more is asked.
  EXPECT_TRUE(state.on_due(InFlight{10, 99}, RetryCause::error));
}

TEST(RetryState, ACohortIsAdmittedInPart) {
  ClientPolicy p = one_layer(3, envoy_budget());
  RetryState state(p, RetryBudget(p, 100, 1));
  RetryOutcome o = state.on_failure(Failure{.attempt = 1}, 10.0, InFlight{10, 1});
  EXPECT_EQ(o.action, RetryAction::retry);
  EXPECT_DOUBLE_EQ(o.admitted, 2);
  EXPECT_DOUBLE_EQ(o.denied, 8);
}

// The spec'd window budget decides when the retry is due; one request takes
// a whole retry, and the parts the budget grants are banked until they make one.
TEST(RetryState, AWindowBudgetDecidesWhenTheRetryIsDueAndBanksParts) {
  Budget window;
  window.kind = BudgetKind::window;
  window.ratio = 0.1;
  window.window_s = 10;
  ClientPolicy p = one_layer(3, window);
  RetryState state(p, RetryBudget(p, 100, 1));
  EXPECT_FALSE(state.admits_at_failure());
  state.budget().begin_step(5);  // 0.5 retries allowed
  RetryOutcome o = state.on_failure(Failure{.layer = 0, .attempt = 1}, InFlight{}, never);
  EXPECT_EQ(o.action, RetryAction::retry);
  EXPECT_FALSE(state.on_due(InFlight{}, o.cause));  // half a retry banked
  state.budget().begin_step(5);                     // 0.5 more
  EXPECT_TRUE(state.on_due(InFlight{}, o.cause));
  EXPECT_FALSE(state.on_due(InFlight{}, o.cause));
  // A cohort takes what there is.
  state.budget().begin_step(5);
  EXPECT_DOUBLE_EQ(state.on_due(3.0, InFlight{}, RetryCause::timeout), 0.5);
}

// gRPC's throttling counts every retryable failure, also the last attempt's
// (grpc/grpc src/core/client_channel/retry_interceptor.cc,
// RetryState::ShouldRetry: RecordFailure() before the max_attempts check).
TEST(RetryState, ThrottlingCountsAFailureThatIsNotRetried) {
  Budget throttling;
  throttling.kind = BudgetKind::grpc_throttling;
  throttling.max_tokens = 10;
  throttling.token_ratio = 0.1;
  throttling.clients = 1;
  ClientPolicy p = one_layer(1, throttling);
  auto after_exhausted = [&](int failures) {
    RetryState state(p, RetryBudget(p, 100, 1));
    for (int i = 0; i < failures; ++i)
      EXPECT_EQ(state.on_failure(Failure{.layer = 0, .attempt = 2}, InFlight{}, never).action,
                RetryAction::fail);
    return state.on_failure(Failure{.layer = 0, .attempt = 1}, InFlight{}, never).action;
  };
  EXPECT_EQ(after_exhausted(3), RetryAction::retry);   // 10 - 4 = 6 tokens, above half
  EXPECT_EQ(after_exhausted(4), RetryAction::denied);  // 10 - 5 = 5, not above half
}

// The fluid engine's planned deadline rule: a retry that cannot fit still
// backs off and holds what the budget admitted; the request fails when its
// deadline fires. Timeout 5 s + the first backoff (1 s) > 4 s.
TEST(RetryState, APlannedDeadlineFailsAtTheDeadlineWithTheBudgetsAdmission) {
  ClientPolicy p = one_layer(3, envoy_budget(), 4, DeadlineRule::planned_mean);
  ASSERT_EQ(p.last_planned_attempt(), 1);
  RetryState state(p, RetryBudget(p, 100, 1));
  RetryOutcome o = state.on_failure(Failure{.attempt = 1}, 10.0, InFlight{10, 1});
  EXPECT_EQ(o.action, RetryAction::fail_at_deadline);
  EXPECT_EQ(o.decision.verdict, RetryVerdict::past_deadline);
  EXPECT_DOUBLE_EQ(o.admitted, 2);
  EXPECT_DOUBLE_EQ(o.denied, 8);
}

// The sessions' fail-fast rule ends the request at once instead.
TEST(RetryState, AFailFastDeadlineFailsAtOnce) {
  ClientPolicy p = one_layer(3, Budget{}, 4, DeadlineRule::rest_of_ladder_mean);
  RetryState state(p, RetryBudget(p, 100, 1));
  RetryOutcome o =
      state.on_failure(Failure{.layer = 0, .attempt = 1, .now_s = 5, .start_s = 0}, 1.0, {});
  EXPECT_EQ(o.action, RetryAction::fail);
  EXPECT_EQ(o.decision.verdict, RetryVerdict::past_deadline);
}

// A policy is whole once built: one built from an imported layer decides its
// ladder without a further step (before, its deadline plan was left at one
// attempt until refresh() was called).
TEST(ClientPolicySettings, APolicyFromAnImportedLayerDecidesItsWholeLadder) {
  const std::string config = R"({"methodConfig": [{"name": [{}], "retryPolicy": {
      "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})";
  auto imported = configs::import_configs({{"service-config.json", config}}, false);
  ClientPolicy p = imported.layers.at(0).policy();
  EXPECT_EQ(p.attempts(), 3);
  EXPECT_EQ(p.last_planned_attempt(), 3);
  EXPECT_TRUE(p.decide(Failure{.attempt = 1}).retries());
  EXPECT_TRUE(p.decide(Failure{.attempt = 2}).retries());
  EXPECT_EQ(p.decide(Failure{.attempt = 3}).verdict, RetryVerdict::exhausted);
}

TEST(ClientPolicySettings, ThePolicyOfAScenarioIsItsSettingsBuiltOnce) {
  Scenario s;
  s.client.retries = 2;
  s.client.deadline_s = 7;
  s.engine = Engine::fluid;
  ClientPolicy of = ClientPolicy::of(s);
  ClientPolicy rebuilt(of.settings());
  EXPECT_EQ(rebuilt.attempts(), of.attempts());
  EXPECT_EQ(rebuilt.last_planned_attempt(), of.last_planned_attempt());
  EXPECT_EQ(rebuilt.deadline_rule(), DeadlineRule::planned_mean);
  for (int a = 1; a <= of.attempts(); ++a) {
    EXPECT_EQ(rebuilt.decide(Failure{.attempt = a}).verdict,
              of.decide(Failure{.attempt = a}).verdict);
    EXPECT_DOUBLE_EQ(rebuilt.deadline_left_s(a), of.deadline_left_s(a));
  }
}

}  // namespace
}  // namespace retrystorm
