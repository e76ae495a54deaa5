// The budgets and jitters of real systems (docs/policies.md), against cases
// worked by hand. Semantics: docs/configs.md ("Sources").
#include <gtest/gtest.h>

#include "policies/backoff.hpp"
#include "policies/budget.hpp"

namespace retrystorm {
namespace {

Scenario with_budget(BudgetKind kind) {
  Scenario s;
  s.step_s = 1;
  s.client.budget.kind = kind;
  s.client.budget.clients = 1;
  return s;
}

TEST(GrpcJitter, MultipliesTheWindowByPointEightToOnePointTwo) {
  Backoff b{1, 2, 0, Jitter::grpc};
  DelayRange d = backoff_delay(b, 2);  // window 2 s
  EXPECT_DOUBLE_EQ(d.low_s, 1.6);
  EXPECT_DOUBLE_EQ(d.high_s, 2.4);
}

TEST(DecorrelatedJitter, RangesFromBaseToThreeToTheKTimesBaseUnderTheCap) {
  Backoff b{1, 2, 0, Jitter::decorrelated};
  EXPECT_DOUBLE_EQ(backoff_delay(b, 1).low_s, 1);
  EXPECT_DOUBLE_EQ(backoff_delay(b, 1).high_s, 3);
  EXPECT_DOUBLE_EQ(backoff_delay(b, 2).high_s, 9);
  b.cap_s = 5;
  EXPECT_DOUBLE_EQ(backoff_delay(b, 2).high_s, 5);
}

TEST(EnvoyConcurrencyBudget, RetriesHeldReachPercentOfRequestsOrTheMinimum) {
  // Issue 11 item 2: the engine counts the retries held (admitted at their
  // failure, in backoff or in flight) in InFlight::retries; the limit is
  // truncated (envoyproxy/envoy source/common/upstream/resource_manager_impl.h
  // RetryBudgetImpl::max, canCreate).
  Scenario s = with_budget(BudgetKind::envoy_concurrency);
  s.client.budget.ratio = 0.2;
  s.client.budget.min_concurrency = 3;
  RetryBudget b(s);
  EXPECT_TRUE(b.admits_at_failure());
  b.begin_step(10);
  // 50 requests in flight, no retries held: max(floor(0.2 x 50), 3) = 10.
  EXPECT_DOUBLE_EQ(b.take(100, {50, 0}), 10);
  // Those 10 held: none left until one resolves.
  EXPECT_DOUBLE_EQ(b.take(100, {50, 10}), 0);
  EXPECT_DOUBLE_EQ(b.take(100, {54, 9}), 1);  // floor(10.8) = 10
  // Few requests in flight: the minimum concurrency holds: max(0, 3) - 1 = 2.
  EXPECT_DOUBLE_EQ(b.take(100, {1, 1}), 2);
}

TEST(GrpcThrottling, RetriesOnlyWhileTokensAreAboveHalf) {
  Scenario s = with_budget(BudgetKind::grpc_throttling);
  s.client.budget.max_tokens = 10;
  s.client.budget.token_ratio = 0.1;
  RetryBudget b(s);
  b.begin_step(0);
  EXPECT_DOUBLE_EQ(b.take(5), 5);  // 10 tokens > 5: not throttled
  b.on_attempt_failed(5);          // 10 - 5 = 5, not above half
  EXPECT_DOUBLE_EQ(b.take(3), 0);
  b.on_success(10, 1);  // 5 + 10 x 0.1 = 6
  EXPECT_DOUBLE_EQ(b.take(3), 3);
  b.on_success(1000, 1);   // capped at 10
  b.on_attempt_failed(4);  // 6: still above half
  EXPECT_DOUBLE_EQ(b.take(1), 1);
}

TEST(AwsQuota, RetriesCostTokensAndSuccessesRefundThem) {
  Scenario s = with_budget(BudgetKind::aws_quota);
  s.client.budget.quota_tokens = 500;
  s.client.budget.timeout_cost = 10;
  s.client.budget.success_reward = 1;
  RetryBudget b(s);
  b.begin_step(0);
  EXPECT_DOUBLE_EQ(b.take(60), 50);  // 500 tokens pay for 50 retries after timeouts
  EXPECT_DOUBLE_EQ(b.take(1), 0);    // empty: the retry fails fast
  b.on_success(2, 2);                // two retries succeed: 2 x 10 back
  EXPECT_DOUBLE_EQ(b.take(5), 2);
  b.on_success(5, 1);  // five first attempts succeed: 5 x 1
  EXPECT_DOUBLE_EQ(b.take(5), 0.5);
}

// Linkerd ServiceProfile budget: deposits only from non-retryable outcomes,
// reserve min_per_sec x whole seconds of ttl, ratio 1/floor(1/r)
// (linkerd/linkerd2-proxy linkerd/app/outbound/src/http/retry.rs
// RetryPolicy::retry: deposit() when not retryable, withdraw() otherwise;
// tower-rs/tower tower/src/retry/budget/tps_budget.rs TpsBudget::new).
TEST(RatioTtlBudget, AReserveOverTheTtlPlusARatioOfDeposits) {
  Scenario s = with_budget(BudgetKind::ratio_ttl);
  s.client.budget.ratio = 0.2;
  s.client.budget.min_retries_per_s = 10;
  s.client.budget.ttl_s = 10;
  RetryBudget b(s);
  b.begin_step(50);  // requests deposit nothing
  b.on_success(50, 1);
  // 10/s x 10 s = 100 always, plus 0.2 x 50 successes = 110.
  EXPECT_DOUBLE_EQ(b.take(200), 110);
  b.begin_step(50);
  b.on_attempt_failed(50, true);   // retryable failures deposit nothing
  b.on_attempt_failed(50, false);  // outcomes that end the request do
  // 100 + 0.2 x 100 - 110 already taken in the window = 10.
  EXPECT_DOUBLE_EQ(b.take(50), 10);
}

TEST(RatioTtlBudget, LinkerdEffectiveRatio) {
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(0.2), 0.2);
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(0.3), 1.0 / 3);
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(0.15), 1.0 / 6);
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(0.6), 1);
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(2.5), 2.5);
  EXPECT_DOUBLE_EQ(RetryBudget::linkerd_ratio(0), 0);  // only the reserve
}

TEST(RatioTtlBudget, LinkerdReserveUsesWholeSecondsAndOutagesGetOnlyIt) {
  Scenario s = with_budget(BudgetKind::ratio_ttl);
  s.client.budget.ratio = 0.2;
  s.client.budget.min_retries_per_s = 10;
  s.client.budget.ttl_s = 1.5;
  EXPECT_DOUBLE_EQ(RetryBudget(s).take(1000), 10);  // ttl.as_secs(): 1, not 15
  // A full outage: every attempt fails retryably, nothing deposits; 100
  // retries per 10 s window whatever the demand.
  s.client.budget.ttl_s = 10;
  RetryBudget b(s);
  double retries = 0;
  for (int t = 0; t < 10; ++t) {
    b.begin_step(1000);
    b.on_attempt_failed(1000, true);
    retries += b.take(1000);
  }
  EXPECT_DOUBLE_EQ(retries, 100);
}

TEST(RatioTtlBudget, ScalesItsMinimumWithTheClients) {
  Scenario s = with_budget(BudgetKind::ratio_ttl);
  s.client.budget.ratio = 0;
  s.client.budget.min_retries_per_s = 10;
  s.client.budget.ttl_s = 10;
  s.client.budget.clients = 3;
  RetryBudget b(s);
  b.begin_step(0);
  EXPECT_DOUBLE_EQ(b.take(1000), 300);
}

}  // namespace
}  // namespace retrystorm
