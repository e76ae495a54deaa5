// Policies and the fluid engine against numbers worked out by hand from
// docs/fluid-model.md: backoff windows and jitter, the exact split
// of a delay range over steps, the two retry budgets, and one tiny scenario
// followed step by step under both service_completes conventions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "analysis/metrics.hpp"
#include "engines/fluid.hpp"
#include "model/keys.hpp"
#include "policies/backoff.hpp"
#include "policies/budget.hpp"

namespace retrystorm {
namespace {

constexpr double kTol = 1e-12;

// ---------------------------------------------------------------- backoff

TEST(BackoffWindow, GrowsByTheMultiplierFromTheBase) {
  Backoff b{1, 2, 0, Jitter::none};
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 1), 1);  // retry 1 sends attempt 2
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 2), 2);
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 3), 4);
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 10), 512);  // no cap: 2^9
}

TEST(BackoffWindow, IsCappedWhenTheCapIsPositive) {
  Backoff b{1, 2, 3, Jitter::none};
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 1), 1);
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 2), 2);
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 3), 3);  // 4 capped at 3
  EXPECT_DOUBLE_EQ(backoff_window_s(b, 8), 3);
  // primary-failover: 100 ms doubling, capped at 2 s.
  Backoff pf{0.1, 2, 2, Jitter::full};
  EXPECT_NEAR(backoff_window_s(pf, 5), 1.6, kTol);
  EXPECT_DOUBLE_EQ(backoff_window_s(pf, 6), 2);  // 3.2 capped
}

TEST(BackoffWindow, MultiplierOneIsConstantAndBaseZeroIsImmediate) {
  Backoff flat{0.5, 1, 0, Jitter::none};
  for (int k = 1; k <= 5; ++k) EXPECT_DOUBLE_EQ(backoff_window_s(flat, k), 0.5);
  Backoff zero{0, 2, 0, Jitter::none};
  EXPECT_DOUBLE_EQ(backoff_window_s(zero, 3), 0);
}

TEST(BackoffDelay, NoneIsThePointWindow) {
  DelayRange r = backoff_delay({1, 2, 0, Jitter::none}, 3);
  EXPECT_DOUBLE_EQ(r.low_s, 4);
  EXPECT_DOUBLE_EQ(r.high_s, 4);
}

TEST(BackoffDelay, FullIsZeroToTheWindow) {
  DelayRange r = backoff_delay({1, 2, 0, Jitter::full}, 2);
  EXPECT_DOUBLE_EQ(r.low_s, 0);
  EXPECT_DOUBLE_EQ(r.high_s, 2);
}

TEST(BackoffDelay, EqualIsHalfTheWindowToTheWindow) {
  DelayRange r = backoff_delay({1, 3, 5, Jitter::equal}, 2);  // w = 3
  EXPECT_DOUBLE_EQ(r.low_s, 1.5);
  EXPECT_DOUBLE_EQ(r.high_s, 3);
  r = backoff_delay({1, 3, 5, Jitter::equal}, 3);  // 9 capped at 5
  EXPECT_DOUBLE_EQ(r.low_s, 2.5);
  EXPECT_DOUBLE_EQ(r.high_s, 5);
}

// ------------------------------------------------- split_delay_over_steps

// step -> summed fraction, and the calls in order.
struct Split {
  std::map<long, double> by_step;
  std::vector<std::pair<long, double>> calls;
  double total() const {
    double t = 0;
    for (const auto& [step, f] : by_step) t += f;
    return t;
  }
};

Split split(DelayRange r, double origin_steps, double step_s, long earliest = 0) {
  Split s;
  split_delay_over_steps(r, origin_steps, step_s, earliest, [&](long step, double f) {
    s.by_step[step] += f;
    s.calls.emplace_back(step, f);
  });
  return s;
}

TEST(SplitDelay, FullJitterOverTwoStepsGivesTwoHalves) {
  // Window 0.1 s at step 0.05 s: [0, 0.1) covers steps 0 and 1 equally.
  Split s = split(backoff_delay({0.1, 2, 2, Jitter::full}, 1), 0, 0.05);
  ASSERT_EQ(s.by_step.size(), 2u);
  EXPECT_NEAR(s.by_step[0], 0.5, kTol);
  EXPECT_NEAR(s.by_step[1], 0.5, kTol);
  EXPECT_NEAR(s.total(), 1, kTol);
}

TEST(SplitDelay, FullJitterOverThreeStepsGivesThirds) {
  // 0.15 / 0.05 is 2.9999999999999996 in binary: still three equal steps,
  // and nothing in step 3.
  Split s = split({0, 0.15}, 0, 0.05);
  ASSERT_EQ(s.by_step.size(), 3u);
  for (long step = 0; step < 3; ++step) EXPECT_NEAR(s.by_step[step], 1.0 / 3, 1e-9) << step;
  EXPECT_EQ(s.by_step.count(3), 0u);
  EXPECT_NEAR(s.total(), 1, kTol);
}

TEST(SplitDelay, EqualJitterCoversTheUpperHalfOfTheWindow) {
  // w = 0.2: [0.1, 0.2) at 0.05 s steps, from a failure at step 10: steps 12, 13.
  Split s = split(backoff_delay({0.1, 2, 0, Jitter::equal}, 2), 10, 0.05);
  ASSERT_EQ(s.by_step.size(), 2u);
  EXPECT_NEAR(s.by_step[12], 0.5, kTol);
  EXPECT_NEAR(s.by_step[13], 0.5, kTol);
}

TEST(SplitDelay, PartialOverlapIsProportional) {
  // [0.5, 2) s at 1 s steps: a third of the range in step 0, two thirds in step 1.
  Split s = split({0.5, 2}, 0, 1);
  ASSERT_EQ(s.by_step.size(), 2u);
  EXPECT_NEAR(s.by_step[0], 0.5 / 1.5, kTol);
  EXPECT_NEAR(s.by_step[1], 1.0 / 1.5, kTol);
  // From a failure in the middle of a step (origin 10.5): [11, 12.5).
  s = split({0.5, 2}, 10.5, 1);
  ASSERT_EQ(s.by_step.size(), 2u);
  EXPECT_NEAR(s.by_step[11], 1.0 / 1.5, kTol);
  EXPECT_NEAR(s.by_step[12], 0.5 / 1.5, kTol);
}

TEST(SplitDelay, PointDelaysLandInTheStepHoldingTheInstant) {
  EXPECT_EQ(split({0.1, 0.1}, 0, 0.05).calls, (std::vector<std::pair<long, double>>{{2, 1.0}}));
  EXPECT_EQ(split({0.07, 0.07}, 0, 0.05).calls, (std::vector<std::pair<long, double>>{{1, 1.0}}));
  // 0.15 / 0.05 = 2.9999999999999996: the instant is the start of step 3.
  EXPECT_EQ(split({0.15, 0.15}, 0, 0.05).calls, (std::vector<std::pair<long, double>>{{3, 1.0}}));
  EXPECT_EQ(split({1, 1}, 5, 1).calls, (std::vector<std::pair<long, double>>{{6, 1.0}}));
  EXPECT_EQ(split({8, 8}, 64, 1).calls, (std::vector<std::pair<long, double>>{{72, 1.0}}));
  EXPECT_EQ(split({0, 0}, 7, 1).calls, (std::vector<std::pair<long, double>>{{7, 1.0}}));
}

TEST(SplitDelay, NothingLandsBeforeTheEarliestStep) {
  // A zero delay from a failure at step 7 may not land before step 8.
  EXPECT_EQ(split({0, 0}, 7, 1, 8).calls, (std::vector<std::pair<long, double>>{{8, 1.0}}));
  // Full jitter over [0, 0.1) at 0.05 s from origin 20, earliest 21: both halves in 21.
  Split s = split({0, 0.1}, 20, 0.05, 21);
  ASSERT_EQ(s.by_step.size(), 1u);
  EXPECT_NEAR(s.by_step[21], 1.0, kTol);
  // Only the part before the earliest step moves.
  s = split({0, 4}, 0, 1, 2);
  EXPECT_NEAR(s.by_step[2], 0.75, kTol);
  EXPECT_NEAR(s.by_step[3], 0.25, kTol);
  EXPECT_EQ(s.by_step.count(0) + s.by_step.count(1), 0u);
}

TEST(SplitDelay, FractionsSumToOneOverManyRanges) {
  for (double step : {0.05, 0.1, 0.25, 1.0})
    for (double lo : {0.0, 0.03, 0.1, 0.5, 1.7})
      for (double width : {0.0, 0.01, 0.05, 0.15, 0.3, 2.0, 7.3}) {
        Split s = split({lo, lo + width}, 3, step);
        EXPECT_NEAR(s.total(), 1.0, 1e-9) << step << " " << lo << " " << width;
        for (const auto& [st, f] : s.calls) {
          EXPECT_GT(f, 0);
          EXPECT_GE(st, 3);
        }
      }
}

// ---------------------------------------------------------------- budgets

Scenario budget_scenario(BudgetKind kind, double demand, double ratio, double window_s,
                         double step_s = 1, int layers = 1) {
  Scenario s;
  s.step_s = step_s;
  s.demand.rate_per_s = demand;
  s.client.layers = layers;
  s.client.budget.kind = kind;
  s.client.budget.ratio = ratio;
  s.client.budget.window_s = window_s;
  return s;
}

TEST(RetryBudgetNone, AllowsEverything) {
  RetryBudget b(budget_scenario(BudgetKind::none, 100, 0.1, 10));
  EXPECT_FALSE(b.enabled());
  b.begin_step(100);
  EXPECT_EQ(b.take(1e9), 1e9);
  EXPECT_EQ(b.take(5), 5);
}

TEST(RetryBudgetTokenBucket, StartsFullAtRatioTimesDemandTimesWindow) {
  // 0.1 x 100/s x 10 s = 100 tokens.
  RetryBudget b(budget_scenario(BudgetKind::token_bucket, 100, 0.1, 10));
  EXPECT_TRUE(b.enabled());
  b.begin_step(0);  // nothing deposited; the bucket is full from the start
  EXPECT_NEAR(b.take(1000), 100, kTol);
  EXPECT_NEAR(b.take(1), 0, kTol);
}

TEST(RetryBudgetTokenBucket, DepositsAreCappedAndTakesSpendTokens) {
  RetryBudget b(budget_scenario(BudgetKind::token_bucket, 100, 0.1, 10));
  b.begin_step(100);                               // +10, capped at 100
  EXPECT_NEAR(b.take(30), 30, kTol);               // 70 left
  EXPECT_NEAR(b.take(80), 70, kTol);               // 0 left
  b.begin_step(100);                               // +10
  EXPECT_NEAR(b.take(15), 10, kTol);               // 0 left
  b.begin_step(50);                                // +5
  EXPECT_NEAR(b.take(3), 3, kTol);                 // 2 left
  b.begin_step(0);                                 // +0
  EXPECT_NEAR(b.take(5), 2, kTol);                 // 0 left
  for (int i = 0; i < 30; ++i) b.begin_step(100);  // +300, capped at 100
  EXPECT_NEAR(b.take(1000), 100, kTol);
}

TEST(RetryBudgetTokenBucket, IsSizedFromTheBaseDemandNotTheSurge) {
  // Demand 100/s, ratio 0.5, window 2 s: 100 tokens. A step with 1000 first
  // attempts (a surge) deposits 500 but the bucket still holds only 100.
  RetryBudget b(budget_scenario(BudgetKind::token_bucket, 100, 0.5, 2));
  b.begin_step(1000);
  EXPECT_NEAR(b.take(1e6), 100, kTol);
  b.begin_step(1000);
  EXPECT_NEAR(b.take(1e6), 100, kTol);
}

TEST(RetryBudgetWindow, RollingWindowIncludesThisStep) {
  // Window 3 steps of 1 s, ratio 0.1, one layer: ratio_eff = 0.1.
  RetryBudget b(budget_scenario(BudgetKind::window, 100, 0.1, 3));
  // Step 1: first 100 (window 100); retries allowed 10.
  b.begin_step(100);
  EXPECT_NEAR(b.take(50), 10, kTol);
  // Step 2: window first 200, retries 10: 10 more.
  b.begin_step(100);
  EXPECT_NEAR(b.take(5), 5, kTol);
  EXPECT_NEAR(b.take(100), 5, kTol);
  // Step 3: window first 300, retries 20: 10 more; take 4.
  b.begin_step(100);
  EXPECT_NEAR(b.take(4), 4, kTol);
  // Step 4: step 1 leaves (100 first, 10 retries): first 300, retries 14: 16.
  b.begin_step(100);
  EXPECT_NEAR(b.take(100), 16, kTol);
  // Step 5: step 2 leaves (100, 10): first 200 (steps 3, 4, 5 = 100+100+0),
  // retries 4 + 16 = 20: nothing.
  b.begin_step(0);
  EXPECT_NEAR(b.take(5), 0, kTol);
  // Step 6: step 3 leaves (100, 4): first 100, retries 16: nothing.
  b.begin_step(0);
  EXPECT_NEAR(b.take(5), 0, kTol);
  // Step 7: step 4 leaves (100, 16): first 0 + 0 + 50 = 50, retries 0: 5.
  b.begin_step(50);
  EXPECT_NEAR(b.take(100), 5, kTol);
}

TEST(RetryBudgetWindow, WindowCountsStepsNotSeconds) {
  // 0.5 s window at 0.25 s steps: two steps.
  RetryBudget b(budget_scenario(BudgetKind::window, 100, 0.5, 0.5, 0.25));
  b.begin_step(10);
  EXPECT_NEAR(b.take(100), 5, kTol);  // 0.5 x 10
  b.begin_step(10);
  EXPECT_NEAR(b.take(100), 5, kTol);  // 0.5 x 20 - 5
  b.begin_step(10);                   // first step leaves: 20 first, 5 retries
  EXPECT_NEAR(b.take(100), 5, kTol);
}

TEST(RetryBudgetWindow, RatioCompoundsOverTwoLayers) {
  // ratio_eff = (1 + 0.1)^2 - 1 = 0.21.
  RetryBudget b(budget_scenario(BudgetKind::window, 100, 0.1, 1, 1, 2));
  b.begin_step(100);
  EXPECT_NEAR(b.take(1000), 21, 1e-9);
  b.begin_step(200);  // one-step window: only this step's 200
  EXPECT_NEAR(b.take(1000), 42, 1e-9);
  // Three layers: 1.1^3 - 1 = 0.331.
  RetryBudget c(budget_scenario(BudgetKind::window, 100, 0.1, 1, 1, 3));
  c.begin_step(1000);
  EXPECT_NEAR(c.take(1e6), 331, 1e-9);
}

// ------------------------------------------------------- tiny fluid by hand

// 1 s steps, horizon 10 s, capacity 10/s, demand 8/s, timeout 2 s (K = 2),
// an outage (capacity 0) from 2 s, 1 retry (2 attempts), no backoff (base 0:
// the retry is due in the step after the give-up).
Scenario tiny(ServiceCompletes completes, double outage_s) {
  Scenario s;
  s.name = "tiny";
  s.horizon_s = 10;
  s.step_s = 1;
  s.service_completes = completes;
  s.demand.rate_per_s = 8;
  s.server.capacity_per_s = 10;
  s.incident.start_s = 2;
  s.incident.duration_s = outage_s;
  s.incident.capacity_factor = 0;
  s.client.timeout_s = 2;
  s.client.layers = 1;
  s.client.retries = 1;
  s.client.backoff = {0, 2, 0, Jitter::none};
  s.client.budget.kind = BudgetKind::none;
  validate(s);
  return s;
}

using V = std::vector<double>;

void expect_series(std::span<const double> got, const V& want, const char* name) {
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-9) << name << " at step " << i;
}

// service_completes = start, a 2-step outage (steps 2 and 3): an attempt sent
// in step 2 is given up at 4 s, after step 4's service, and step 4 serves it
// at 4 s, exactly on time. The backlog of 16 then drains 2 a step, every
// attempt on time: no give-up, no retry.
//   t   cap  queue after enqueue           served (on time)    backlog
//   2   0    8@2                           -                    8
//   3   0    8@2 8@3                       -                   16
//   4   10   8@2 8@3 8@4                   8@2 2@3             14
//   5   10   6@3 8@4 8@5                   6@3 4@4             12
//   6   10   4@4 8@5 8@6                   4@4 6@5             10
//   7   10   2@5 8@6 8@7                   2@5 8@6              8
//   8   10   8@7 8@8                       8@7 2@8              6
//   9   10   6@8 8@9                       6@8 4@9              4
TEST(TinyFluidByHand, StartConventionTwoStepOutageOnlyQueues) {
  RunResult r = run_fluid(tiny(ServiceCompletes::start, 2));
  const Series& x = r.series;
  expect_series(x.t_s, V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "t_s");
  expect_series(x.capacity, V{10, 10, 0, 0, 10, 10, 10, 10, 10, 10}, "capacity");
  expect_series(x.first_attempts, V(10, 8), "first_attempts");
  expect_series(x.retries, V(10, 0), "retries");
  expect_series(x.goodput, V{8, 8, 0, 0, 10, 10, 10, 10, 10, 10}, "goodput");
  expect_series(x.served_late, V(10, 0), "served_late");
  expect_series(x.gave_up, V(10, 0), "gave_up");
  expect_series(x.failed, V(10, 0), "failed");
  expect_series(x.backlog, V{0, 0, 8, 16, 14, 12, 10, 8, 6, 4}, "backlog");
  EXPECT_DOUBLE_EQ(r.user_requests, 80);
  EXPECT_DOUBLE_EQ(r.succeeded, 76);
  EXPECT_DOUBLE_EQ(r.failed, 0);
  EXPECT_DOUBLE_EQ(r.in_flight, 4);
}

// service_completes = end, the same 2-step outage. Give-ups of attempts sent
// in step s are processed after the service of step s + K - 1 = s + 1; the
// failure instant is (s + 2) s, so the retry (no backoff) is due in step s + 2.
// r = retry (attempt 2), ab = given up but still queued (served late).
//   t  due  queue after enqueue (head first)           served            gave up        failed
//   3  -    8@2 8@3                                     -                 8@2            -
//   4  8    8@2ab 8@3 8r@4 8@4                          8@2 late, 2@3     6@3            -
//   5  6    6@3ab 8r@4 8@4 6r@5 8@5                     6@3 late, 4r@4    4r@4 8@4       4
//   6  8    4r@4ab 8@4ab 6r@5 8@5 8r@6 8@6              10 late           6r@5 8@5       6
//   7  8    2@4ab 6r@5ab 8@5ab 8r@6 8@6 8r@7 8@7        10 late           8r@6 8@6       8
//   8  8    6@5ab 8r@6ab 8@6ab ... 8r@8 8@8             10 late           8r@7 8@7       8
//   9  8    4r@6ab 8@6ab ... 8r@9 8@9                   10 late           8r@8 8@8       8
// The retry of 8@8 would be due in step 10, past the horizon: in flight.
TEST(TinyFluidByHand, EndConventionTwoStepOutageStartsAStorm) {
  RunResult r = run_fluid(tiny(ServiceCompletes::end, 2));
  const Series& x = r.series;
  expect_series(x.capacity, V{10, 10, 0, 0, 10, 10, 10, 10, 10, 10}, "capacity");
  expect_series(x.first_attempts, V(10, 8), "first_attempts");
  expect_series(x.retries, V{0, 0, 0, 0, 8, 6, 8, 8, 8, 8}, "retries");
  expect_series(x.goodput, V{8, 8, 0, 0, 2, 4, 0, 0, 0, 0}, "goodput");
  expect_series(x.served_late, V{0, 0, 0, 0, 8, 6, 10, 10, 10, 10}, "served_late");
  expect_series(x.gave_up, V{0, 0, 0, 8, 6, 12, 14, 16, 16, 16}, "gave_up");
  expect_series(x.failed, V{0, 0, 0, 0, 0, 4, 6, 8, 8, 8}, "failed");
  expect_series(x.backlog, V{0, 0, 8, 16, 22, 26, 32, 38, 44, 50}, "backlog");
  expect_series(x.shed, V(10, 0), "shed");
  expect_series(x.rejected, V(10, 0), "rejected");
  EXPECT_DOUBLE_EQ(r.user_requests, 80);
  EXPECT_DOUBLE_EQ(r.succeeded, 22);
  EXPECT_DOUBLE_EQ(r.failed, 34);
  // 8 retries due past the horizon + 16 live attempts (8r@9, 8@9).
  EXPECT_DOUBLE_EQ(r.in_flight, 24);
  Metrics m = compute_metrics(r);
  EXPECT_DOUBLE_EQ(m.peak_amplification, 2);
  EXPECT_DOUBLE_EQ(m.wasted_fraction, 54.0 / 76.0);
  EXPECT_TRUE(m.backlog_growing);
  EXPECT_FALSE(m.failure_recovery_s.has_value());
}

// service_completes = start, a 3-step outage (steps 2, 3, 4): now attempts
// from step 2 are given up after step 4's service with nothing served. The
// failure instant is (s + 2) s, in step s + 2, so the retry is due in s + 3.
//   t  due  queue after enqueue (head first)          served                gave up      failed
//   4  -    8@2 8@3 8@4                                -                     8@2          -
//   5  8    8@2ab 8@3 8@4 8r@5 8@5                     8@2 late, 2@3         6@3          -
//   6  6    6@3ab 8@4 8r@5 8@5 6r@6 8@6                6@3 late, 4@4         4@4          -
//   7  4    4@4ab 8r@5 8@5 6r@6 8@6 4r@7 8@7           4@4 late, 6r@5        2r@5 8@5     2
//   8  8    2r@5ab 8@5ab 6r@6 8@6 4r@7 8@7 8r@8 8@8    2r@5 8@5 late         6r@6 8@6     6
//   9  8    6r@6ab 8@6ab 4r@7 8@7 8r@8 8@8 8r@9 8@9    6r@6 4@6 late         4r@7 8@7     4
TEST(TinyFluidByHand, StartConventionThreeStepOutageStartsAStorm) {
  RunResult r = run_fluid(tiny(ServiceCompletes::start, 3));
  const Series& x = r.series;
  expect_series(x.capacity, V{10, 10, 0, 0, 0, 10, 10, 10, 10, 10}, "capacity");
  expect_series(x.retries, V{0, 0, 0, 0, 0, 8, 6, 4, 8, 8}, "retries");
  expect_series(x.goodput, V{8, 8, 0, 0, 0, 2, 4, 6, 0, 0}, "goodput");
  expect_series(x.served_late, V{0, 0, 0, 0, 0, 8, 6, 4, 10, 10}, "served_late");
  expect_series(x.gave_up, V{0, 0, 0, 0, 8, 6, 4, 10, 14, 12}, "gave_up");
  expect_series(x.failed, V{0, 0, 0, 0, 0, 0, 0, 2, 6, 4}, "failed");
  expect_series(x.backlog, V{0, 0, 8, 16, 24, 30, 34, 36, 42, 48}, "backlog");
  EXPECT_DOUBLE_EQ(r.user_requests, 80);
  EXPECT_DOUBLE_EQ(r.succeeded, 28);
  EXPECT_DOUBLE_EQ(r.failed, 12);
  // The retry of 8@7 is due in step 10 (past the horizon) + 32 live attempts.
  EXPECT_DOUBLE_EQ(r.in_flight, 40);
}

// The same 3-step outage with shed_abandoned: a given-up attempt leaves the
// queue at once, so nothing is ever served late.
//   t  due  queue after enqueue (head first)   served (all on time)   shed (retry due)
//   4  -    8@2 8@3 8@4                        -                      8@2 (step 5)
//   5  8    8@3 8@4 8r@5 8@5                   8@3 2@4                -
//   6  -    6@4 8r@5 8@5 8@6                   6@4 4r@5               -
//   7  -    4r@5 8@5 8@6 8@7                   4r@5 6@5               2@5 (step 8)
//   8  2    8@6 8@7 2r@8 8@8                   8@6 2@7                -
//   9  -    6@7 2r@8 8@8 8@9                   6@7 2r@8 2@8           -
TEST(TinyFluidByHand, StartConventionThreeStepOutageWithSheddingRecovers) {
  Scenario s = tiny(ServiceCompletes::start, 3);
  s.server.shed_abandoned = true;
  RunResult r = run_fluid(s);
  const Series& x = r.series;
  expect_series(x.retries, V{0, 0, 0, 0, 0, 8, 0, 0, 2, 0}, "retries");
  expect_series(x.goodput, V{8, 8, 0, 0, 0, 10, 10, 10, 10, 10}, "goodput");
  expect_series(x.served_late, V(10, 0), "served_late");
  expect_series(x.shed, V{0, 0, 0, 0, 8, 0, 0, 2, 0, 0}, "shed");
  expect_series(x.gave_up, V{0, 0, 0, 0, 8, 0, 0, 2, 0, 0}, "gave_up");
  expect_series(x.failed, V(10, 0), "failed");
  expect_series(x.backlog, V{0, 0, 8, 16, 16, 22, 20, 16, 16, 14}, "backlog");
  EXPECT_DOUBLE_EQ(r.succeeded, 66);
  EXPECT_DOUBLE_EQ(r.failed, 0);
  EXPECT_DOUBLE_EQ(r.in_flight, 14);
}

}  // namespace
}  // namespace retrystorm
