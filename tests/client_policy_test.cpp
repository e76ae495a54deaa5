// ClientPolicy: attempts, the backoff ladder as a distribution, the decision
// after a failure, the per-engine table and the AWS quota's two prices
// (docs/policies.md).
#include "policies/client_policy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>

#include "engines/engine.hpp"
#include "policies/budget.hpp"

namespace retrystorm {
namespace {

ClientPolicy policy(Backoff b, int retries, double deadline_s = 0) {
  Scenario s;
  s.client.backoff = b;
  s.client.retries = retries;
  s.client.deadline_s = deadline_s;
  return ClientPolicy::of(s);
}

// --- attempts ---

TEST(ClientPolicyAttempts, LayersMultiplyRetriesPlusOne) {
  Scenario s;
  s.client.retries = 3;
  s.client.layers = 2;
  EXPECT_EQ(ClientPolicy::of(s).attempts(), 16);
  EXPECT_EQ(ClientPolicy::of(s).retries(), 15);  // the stack read as one ladder
  EXPECT_EQ(ClientPolicy::of(s).retries(1), 3);
  s.client.stack_retries = "2,1";
  ClientPolicy p = ClientPolicy::of(s);
  EXPECT_EQ(p.attempts(), 6);
  EXPECT_EQ(p.layer_attempts(0), 3);
  EXPECT_EQ(p.layer_attempts(1), 2);
  EXPECT_EQ(p.attempts(), s.attempts());
}

TEST(ClientPolicyAttempts, TheSessionModelHasOneLadderOfClientRetries) {
  Scenario s;
  s.client.retries = 4;
  s.client.layers = 2;
  EXPECT_EQ(ClientPolicy::of(s, Engine::sessions).attempts(), 5);
}

// --- the ladder, worked by hand for each jitter ---

TEST(LadderDistribution, NoJitterIsAPoint) {
  ClientPolicy p = policy({1, 2, 0, Jitter::none}, 3);  // 1 + 2 + 4
  LadderStats st = p.ladder_stats();
  EXPECT_DOUBLE_EQ(st.min_s, 7);
  EXPECT_DOUBLE_EQ(st.mean_s, 7);
  EXPECT_DOUBLE_EQ(st.max_s, 7);
  EXPECT_DOUBLE_EQ(st.p99_s, 7);
  EXPECT_EQ(p.p_exceeds(6.9), 1);
  EXPECT_EQ(p.p_exceeds(7), 0);
  // Every attempt timing out after 5 s adds 4 x 5 s.
  EXPECT_DOUBLE_EQ(p.ladder_stats(Failure::kAllLayers, 5).max_s, 27);
  EXPECT_EQ(p.p_exceeds(26.9, Failure::kAllLayers, 5), 1);
}

TEST(LadderDistribution, FullJitterIsASumOfUniformsFromZero) {
  // U(0,1) + U(0,2): P(sum <= 1) = (1/2) / 2, P(sum <= 2) = (2 - 1/2) / 2.
  ClientPolicy p = policy({1, 2, 0, Jitter::full}, 2);
  EXPECT_DOUBLE_EQ(p.ladder_stats().mean_s, 1.5);
  EXPECT_DOUBLE_EQ(p.ladder_stats().max_s, 3);
  EXPECT_NEAR(p.p_exceeds(1), 0.75, 1e-6);
  EXPECT_NEAR(p.p_exceeds(2), 0.25, 1e-6);
  // 1 - F(x) = (3 - x)^2 / 4 above 2: the 99th percentile is 3 - 0.2.
  EXPECT_NEAR(p.ladder_stats().p99_s, 2.8, 1e-4);
}

TEST(LadderDistribution, EqualWindowsOfOneIsIrwinHall) {
  // Three U(0.5, 1) (multiplier 1): twice the sum is Irwin-Hall n = 3 over [3, 6).
  ClientPolicy p = policy({1, 1, 0, Jitter::equal}, 3);
  EXPECT_NEAR(1 - p.p_exceeds(1.5 + 0.5 / 2), 1.0 / 48, 1e-6);  // F_IH(0.5) = 0.5^3 / 6
  EXPECT_NEAR(p.p_exceeds(2.25), 0.5, 1e-6);                    // symmetric about the mean
  // F_IH(x) = 1 - (3 - x)^3 / 6 near the top: p99 at x = 3 - 0.06^(1/3), halved, plus 1.5.
  EXPECT_NEAR(p.ladder_stats().p99_s, 1.5 + (3 - std::cbrt(0.06)) / 2, 1e-4);
}

TEST(LadderDistribution, EqualJitterShiftsByHalfWindows) {
  // U(1, 2) + U(2, 4): min 3, max 6; P(sum <= 4) = P(U(0,1) + U(0,2) <= 1) = 0.25.
  ClientPolicy p = policy({2, 2, 0, Jitter::equal}, 2);
  LadderStats st = p.ladder_stats();
  EXPECT_DOUBLE_EQ(st.min_s, 3);
  EXPECT_DOUBLE_EQ(st.max_s, 6);
  EXPECT_DOUBLE_EQ(st.mean_s, 4.5);
  EXPECT_NEAR(p.p_exceeds(4), 0.75, 1e-6);
}

TEST(LadderDistribution, GrpcJitterIsPlusMinusTwentyPercent) {
  ClientPolicy p = policy({1, 2, 0, Jitter::grpc}, 1);  // U(0.8, 1.2)
  EXPECT_NEAR(p.p_exceeds(1.1), 0.25, 1e-9);
  EXPECT_NEAR(p.ladder_stats().p99_s, 0.8 + 0.4 * 0.99, 1e-9);
}

TEST(LadderDistribution, DecorrelatedUsesItsWholeRange) {
  // Retry 1 in [1, 3), retry 2 in [1, 9): min 2, max 12, mean 2 + 5; the
  // mean-of-jitter shortcut (half the window) would say 1.5.
  ClientPolicy p = policy({1, 2, 0, Jitter::decorrelated}, 2);
  LadderStats st = p.ladder_stats();
  EXPECT_DOUBLE_EQ(st.min_s, 2);
  EXPECT_DOUBLE_EQ(st.max_s, 12);
  EXPECT_DOUBLE_EQ(st.mean_s, 7);
  // P(sum <= 4) = P(U(0,2) + U(0,8) <= 2) = (2 x 2 / 2) / 16.
  EXPECT_NEAR(1 - p.p_exceeds(4), 0.125, 1e-6);
}

// --- the ladder against a Monte Carlo of the draws the engines make ---

struct Drawn {
  std::vector<double> totals;
  double share_over(double x) const {
    return static_cast<double>(
               std::count_if(totals.begin(), totals.end(), [x](double t) { return t > x; })) /
           static_cast<double>(totals.size());
  }
};

Drawn draw_ladders(const ClientPolicy& p, int n) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  Drawn d;
  for (int i = 0; i < n; ++i) {
    double total = 0;
    for (int a = 1; a < p.attempts(); ++a) {
      RetryDecision r =
          p.decide({.attempt = a}, [&](double lo, double hi) { return lo + (hi - lo) * u(rng); });
      total += r.delay_s;
    }
    d.totals.push_back(total);
  }
  std::sort(d.totals.begin(), d.totals.end());
  return d;
}

TEST(LadderDistribution, MatchesAMonteCarloOfTheDrawsForEveryJitter) {
  for (Jitter j : {Jitter::full, Jitter::equal, Jitter::decorrelated, Jitter::grpc}) {
    ClientPolicy p = policy({1, 2, 20, j}, 6);
    LadderDistribution dist = p.ladder_distribution();
    Drawn mc = draw_ladders(p, 200000);
    double mean = 0;
    for (double t : mc.totals) mean += t / static_cast<double>(mc.totals.size());
    EXPECT_NEAR(dist.mean_s(), mean, 0.01 * dist.mean_s()) << static_cast<int>(j);
    EXPECT_LE(mc.totals.back(), dist.max_s());
    EXPECT_NEAR(dist.quantile(0.99), mc.totals[static_cast<size_t>(0.99 * 200000)],
                0.005 * dist.max_s())
        << static_cast<int>(j);
    for (double q : {0.1, 0.5, 0.9}) {
      double x = dist.quantile(q);
      EXPECT_NEAR(mc.share_over(x), 1 - q, 0.005) << static_cast<int>(j) << " q " << q;
    }
  }
}

// --- the decision after a failure ---

TEST(RetryDecision, ExhaustedAfterTheLastAttemptOfTheLayer) {
  Scenario s;
  s.client.stack_retries = "2,1";
  ClientPolicy p = ClientPolicy::of(s, Engine::agent);
  EXPECT_TRUE(p.decide({.layer = 0, .attempt = 2}).retries());
  EXPECT_EQ(p.decide({.layer = 0, .attempt = 3}).verdict, RetryVerdict::exhausted);
  EXPECT_EQ(p.decide({.layer = 1, .attempt = 2}).verdict, RetryVerdict::exhausted);
  RetryDecision d = p.decide({.layer = 1, .attempt = 1});
  EXPECT_EQ(d.retry, 1);
  EXPECT_DOUBLE_EQ(d.delay.low_s, 1);  // base 1 s, no jitter
}

TEST(RetryDecision, TimeoutsAreNotRetriedWhenRetryOnTimeoutIsOff) {
  Scenario s;
  s.client.retry_on_timeout = false;
  ClientPolicy p = ClientPolicy::of(s);
  EXPECT_EQ(p.decide({.attempt = 1, .timed_out = true}).verdict, RetryVerdict::timeout_not_retried);
  EXPECT_TRUE(p.decide({.attempt = 1, .timed_out = false}).retries());
}

TEST(RetryDecision, AFixedLadderDrawsNoRandomNumber) {
  ClientPolicy p = policy({1, 2, 0, Jitter::none}, 3);
  int draws = 0;
  RetryDecision d = p.decide({.attempt = 2}, [&](double, double) { return ++draws, 0.0; });
  EXPECT_EQ(draws, 0);
  EXPECT_DOUBLE_EQ(d.delay_s, 2);
}

TEST(RetryDecision, FluidPlansTheDeadlineWithTimeoutsAndMeanBackoffs) {
  // Timeout 5 s, backoff 1, 2, 4 s: 6, 13, 22 s; a 15 s deadline ends the
  // ladder at attempt 3.
  Scenario s;
  s.client.deadline_s = 15;
  ClientPolicy p = ClientPolicy::of(s, Engine::fluid);
  EXPECT_EQ(p.last_planned_attempt(), 3);
  EXPECT_TRUE(p.decide({.attempt = 2}).retries());
  EXPECT_EQ(p.decide({.attempt = 3}).verdict, RetryVerdict::past_deadline);
  EXPECT_EQ(p.decide({.attempt = 4}).verdict, RetryVerdict::exhausted);
}

TEST(RetryDecision, AgentLeavesTheDeadlineToItsTimer) {
  // Issue 11 item 9: Envoy's route timeout and gRPC's deadline end the
  // request when they fire; the decision does not look at them
  // (tests/upstream_engine_test.cpp has the engine's side and the sources).
  Scenario s;
  s.client.deadline_s = 10;
  s.client.backoff.jitter = Jitter::full;  // retry 2: U(0, 2)
  ClientPolicy p = ClientPolicy::of(s, Engine::agent);
  EXPECT_EQ(p.deadline_rule(), DeadlineRule::fires);
  Failure f{.layer = 0, .attempt = 2, .now_s = 108.5, .start_s = 100};
  EXPECT_TRUE(p.decide(f, [](double lo, double hi) { return lo + 0.7 * (hi - lo); }).retries());
  EXPECT_TRUE(p.decide(f, [](double lo, double hi) { return lo + 0.8 * (hi - lo); }).retries());
}

TEST(RetryDecision, DeadlineAwareSessionsFailFastWhenTheRestOfTheLadderCannotFit) {
  Scenario s;
  s.engine = Engine::sessions;
  s.client.retries = 3;  // 1, 2, 4 s
  s.client.deadline_s = 10;
  s.sessions.deadline_aware = true;
  ClientPolicy p = ClientPolicy::of(s);
  EXPECT_EQ(p.deadline_rule(), DeadlineRule::rest_of_ladder_mean);
  // From retry 2, the rest is 2 + 4 s: fits from 103.9, not from 104.1.
  EXPECT_TRUE(p.decide({.layer = 0, .attempt = 2, .now_s = 103.9, .start_s = 100}).retries());
  EXPECT_EQ(p.decide({.layer = 0, .attempt = 2, .now_s = 104.1, .start_s = 100}).verdict,
            RetryVerdict::past_deadline);
  s.sessions.deadline_aware = false;  // the deadline timer ends the session instead
  EXPECT_EQ(ClientPolicy::of(s).deadline_rule(), DeadlineRule::none);
}

// --- the engine table ---

TEST(EngineTable, NamesAndFactsOfEachEngine) {
  EXPECT_STREQ(engine_name(Engine::fluid), "fluid");
  EXPECT_STREQ(engine_name(Engine::agent), "agent");
  EXPECT_STREQ(engine_name(Engine::sessions), "sessions");
  EXPECT_TRUE(engine_facts(Engine::fluid).run);
  EXPECT_TRUE(engine_facts(Engine::agent).random);
  EXPECT_FALSE(engine_facts(Engine::sessions).run);
  EXPECT_FALSE(engine_facts(Engine::sessions).per_try_timeout);
  Scenario s;
  set_key(s, "engine", std::string("agent"));
  EXPECT_EQ(s.engine, Engine::agent);
  EXPECT_EQ(std::get<std::string>(key_or_throw("engine").get(s)), "agent");
  s.engine = Engine::sessions;
  EXPECT_THROW(require_step_run(s), InputError);
}

double sum_of(std::span<const double> v) {
  double total = 0;
  for (double x : v) total += x;
  return total;
}

// --- the AWS quota's two prices ---
// botocore/retries/standard.py, RetryQuotaChecker: acquire_retry_quota takes
// _TIMEOUT_RETRY_REQUEST = 10 after ConnectTimeoutError / ReadTimeoutError
// and _RETRY_COST = 5 after any other retryable error; release_retry_quota
// gives back the last acquisition's amount when a retried call succeeds, and
// _NO_RETRY_INCREMENT = 1 when it succeeded without retry.

TEST(AwsQuota, ARetryAfterAnErrorCostsRetryCostAfterATimeoutTimeoutCost) {
  Scenario s;
  s.client.budget.kind = BudgetKind::aws_quota;
  s.client.budget.clients = 1;
  s.client.budget.quota_tokens = 20;
  RetryBudget errors(s);
  EXPECT_DOUBLE_EQ(errors.take(10, {}, RetryCause::error), 4);  // 20 / 5
  RetryBudget timeouts(s);
  EXPECT_DOUBLE_EQ(timeouts.take(10, {}, RetryCause::timeout), 2);  // 20 / 10
  // A successful retry refunds what it cost: one error retry back.
  errors.on_success(1, 2, RetryCause::error);
  EXPECT_DOUBLE_EQ(errors.take(10, {}, RetryCause::error), 1);
  s.client.budget.retry_cost = 1;
  EXPECT_DOUBLE_EQ(RetryBudget(s).take(100, {}, RetryCause::error), 20);
}

TEST(AwsQuota, RetryCostChangesARunWithErrorAnswers) {
  // A queue limit rejects attempts (error answers): their retries are priced
  // by retry_cost, so 1 and 1e6 tokens per retry no longer run alike.
  Scenario s;
  s.server.queue_limit = 50;
  s.client.budget.kind = BudgetKind::aws_quota;
  s.client.budget.clients = 1;
  for (Engine e : {Engine::fluid, Engine::agent}) {
    s.engine = e;
    s.client.budget.retry_cost = 1;
    RunResult cheap = run_engine(s);
    s.client.budget.retry_cost = 1e6;
    RunResult dear = run_engine(s);
    EXPECT_GT(sum_of(dear.series.budget_denied), sum_of(cheap.series.budget_denied))
        << engine_name(e);
  }
}

}  // namespace
}  // namespace retrystorm
