// The exact Markov chains of `risk` (docs/risk.md): the solver against
// closed forms, metafor's published model against metafor's own figures,
// and the project's own rules against their balance laws.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "analysis/markov/chain.hpp"
#include "analysis/markov/retry_chain.hpp"
#include "model/keys.hpp"

namespace retrystorm::markov {
namespace {

// M/M/1/K: states 0..k, up at lambda, down at mu.
Chain birth_death(int k, double lambda, double mu) {
  Chain c(k + 1);
  for (int n = 0; n < k; ++n) c.add(n, n + 1, lambda), c.add(n + 1, n, mu);
  return c;
}

TEST(MarkovChain, StationaryOfAFiniteQueueIsGeometric) {
  const double lambda = 3, mu = 5, rho = lambda / mu;
  const int k = 12;
  const std::vector<double> pi = birth_death(k, lambda, mu).stationary();
  const double norm = (1 - rho) / (1 - std::pow(rho, k + 1));
  for (int n = 0; n <= k; ++n) EXPECT_NEAR(pi[n], norm * std::pow(rho, n), 1e-12) << n;
}

TEST(MarkovChain, HittingTimesOfABirthDeathChain) {
  // From 0 up to m in an M/M/1 queue: sum over j < m of the mean time to
  // climb from j to j + 1, t_j = (1 + mu t_{j-1}) / lambda.
  const double lambda = 2, mu = 3;
  const int k = 10, m = 6;
  Chain c = birth_death(k, lambda, mu);
  std::vector<bool> target(k + 1, false);
  for (int n = m; n <= k; ++n) target[n] = true;
  double climb = 0, total = 0;
  for (int j = 0; j < m; ++j) total += climb = (1 + mu * climb) / lambda;
  EXPECT_NEAR(c.hitting_times(target)[0], total, 1e-9 * total);
  EXPECT_EQ(c.hitting_times(target)[m], 0);
}

TEST(MarkovChain, UnreachableTargetsTakeForever) {
  Chain c(3);
  c.add(0, 1, 1), c.add(1, 0, 1);  // state 2 is never reached
  EXPECT_TRUE(std::isinf(c.hitting_times({false, false, true})[0]));
}

TEST(MarkovChain, RelaxationTimeOfAFiniteQueue) {
  // The eigenvalues of M/M/1/K: -(lambda + mu) + 2 sqrt(lambda mu) cos(j pi / (K + 1)).
  const double lambda = 4, mu = 5;
  const int k = 30;
  Chain c = birth_death(k, lambda, mu);
  const double gap =
      lambda + mu - 2 * std::sqrt(lambda * mu) * std::cos(std::numbers::pi / (k + 1));
  EXPECT_NEAR(c.relaxation_time_s(c.stationary()), 1 / gap, 1e-8 / gap);
}

// A cycle of k states at rate r: eigenvalues r (exp(2 pi i j / k) - 1),
// complex pairs; the slowest decays at r (1 - cos(2 pi / k)), the pair's
// real part, not its modulus.
TEST(MarkovChain, RelaxationTimeOfAComplexPair) {
  const int k = 10;
  const double r = 2;
  Chain c(k);
  for (int n = 0; n < k; ++n) c.add(n, (n + 1) % k, r);
  const double decay = r * (1 - std::cos(2 * std::numbers::pi / k));
  EXPECT_NEAR(c.relaxation_time_s(c.stationary()), 1 / decay, 1e-8 / decay);
}

// A state of no weight adds nothing, even an infinite value: 0 x infinity
// made the mean time to leave NaN.
TEST(MarkovChain, AnExpectationLeavesOutStatesOfNoWeight) {
  const double never = std::numeric_limits<double>::infinity();
  EXPECT_EQ(expect({0.0, 0.25, 0.75}, {never, 2, 4}), 3.5);
  EXPECT_TRUE(std::isinf(expect({0.5, 0.5}, {never, 1})));
}

TEST(MarkovChain, ReachWithinAHorizon) {
  Chain c(2);
  c.add(0, 1, 0.5);
  c.add(1, 0, 7);  // ignored: the target is absorbing
  for (double t : {0.1, 1.0, 4.0})
    EXPECT_NEAR(c.reach_within({false, true}, t)[0], 1 - std::exp(-0.5 * t), 1e-10) << t;
  EXPECT_THROW(c.reach_within({false, true}, 1e9), InputError);
}

// metafor's README example, solved by metafor itself (SingleServerCTMC with
// its defaults, numpy and scipy; mixing time as its get_mixing_time):
// mean queue 96.8631, P(queue >= 90) 0.978522, empty to queue >= 90 in
// 61.1688 s, second eigenvalue -0.0244510 (mixing 271.722 s).
TEST(MarkovChain, ReproducesMetaforsSingleServerModel) {
  RetryChainParams p;
  p.rules = Rules::metafor;
  p.arrival_per_s = 9.5, p.service_per_s = 10, p.slots = 1;
  p.queue = 100, p.orbit = 20, p.timeout_s = 3, p.retries = 4;
  p.bad_from = 90;
  const RetryChainFigures f = solve_retry_chain(p);
  EXPECT_EQ(f.states, 2000);
  EXPECT_NEAR(f.mean_backlog, 96.86310, 1e-4);
  EXPECT_NEAR(f.bad_share, 0.9785220, 1e-6);
  EXPECT_NEAR(f.enter_bad_s, 61.16878, 1e-4);
  EXPECT_NEAR(f.relaxation_s, 1 / 0.024450967, 1e-5);
  EXPECT_NEAR(f.mixing_metafor_s, 271.7216, 1e-3);
}

TEST(MarkovChain, MetaforsTimeoutBoundIsChebyshevs) {
  // 10 waiting at 10/s: mean 1 s, sigma sqrt(10)/10; timeout 3 s.
  const double sigma = std::sqrt(10.0) / 10;
  EXPECT_NEAR(metafor_timeout_bound(10, 1, 10, 3), std::pow(sigma / 2, 2), 1e-15);
  EXPECT_EQ(metafor_timeout_bound(0, 1, 10, 3), 0);
  EXPECT_EQ(metafor_timeout_bound(40, 1, 10, 3), 1);  // past the timeout: certain
}

RetryChainParams own(double lambda, int retries) {
  RetryChainParams p;
  p.arrival_per_s = lambda, p.service_per_s = 10, p.slots = 1;
  p.queue = 30, p.orbit = 20, p.timeout_s = 1, p.retries = retries, p.retry_delay_s = 0.2;
  return p;
}

TEST(MarkovChain, OwnRulesConserveAttempts) {
  // In the long run, attempts that enter the server leave it served.
  const RetryChainParams p = own(8, 3);
  const RetryChain rc = build_retry_chain(p);
  const std::vector<double> pi = rc.chain.stationary();
  double entered = 0, served = 0;
  for (int s = 0; s < rc.chain.states(); ++s) {
    if (rc.backlog[s] < p.queue)
      entered += pi[s] * (p.arrival_per_s + rc.retrying[s] / p.retry_delay_s);
    served += pi[s] * std::min(rc.backlog[s], p.slots) * p.service_per_s;
  }
  EXPECT_NEAR(entered, served, 1e-9 * served);
}

TEST(MarkovChain, OwnRulesWithoutRetriesNeverWaitToRetry) {
  const RetryChainFigures f = solve_retry_chain(own(8, 0));
  EXPECT_NEAR(f.mean_retrying, 0, 1e-12);
}

TEST(MarkovChain, RetriesMakeTheBadModeSticky) {
  // At 80 % load the bad mode (one timeout of work queued) is rare without
  // retries; with three retries the chain spends more time there and takes
  // longer to leave it.
  const RetryChainFigures none = solve_retry_chain(own(8, 0));
  const RetryChainFigures three = solve_retry_chain(own(8, 3));
  EXPECT_EQ(none.bad_from, 10);
  EXPECT_LT(none.bad_share, three.bad_share);
  EXPECT_GT(none.enter_bad_s, three.enter_bad_s);
  EXPECT_LT(none.leave_bad_s, three.leave_bad_s);
}

// One timeout of work past 2^31 attempts (a 10^6 s timeout at 10,000/s):
// the threshold is past the queue, not an int's overflow.
TEST(MarkovChain, AThresholdPastTheQueueIsNeverReached) {
  RetryChainParams p = own(8, 2);
  p.service_per_s = 10000, p.arrival_per_s = 8000, p.timeout_s = 1e6, p.queue = 10;
  EXPECT_EQ(bad_threshold(p), p.queue + 1);
  const RetryChainFigures f = solve_retry_chain(p);
  EXPECT_EQ(f.bad_share, 0);
  EXPECT_TRUE(std::isinf(f.enter_bad_s));
}

// One retry after 10 ms at 1.6 times the capacity: lambda_2 is the complex
// pair -2.77407 +- 0.2622i (a dense eigensolver on the 1,386 states), so
// the relaxation is 1 / 2.77407 s.
TEST(MarkovChain, AChainWithAComplexSecondEigenvalueRelaxes) {
  RetryChainParams p;
  p.arrival_per_s = 16, p.service_per_s = 10, p.queue = 10, p.orbit = 20;
  p.timeout_s = 0.5, p.retries = 1, p.retry_delay_s = 0.01, p.bad_from = 6;
  const RetryChainFigures f = solve_retry_chain(p);
  EXPECT_NEAR(f.relaxation_s, 1 / 2.77407, 1e-5);
}

TEST(MarkovChain, RefusesChainsTooLargeOrMalformed) {
  RetryChainParams p = own(8, 3);
  p.queue = 2000;
  EXPECT_THROW(build_retry_chain(p), InputError);
  p = own(8, 3);
  p.retry_delay_s = 0;
  EXPECT_THROW(build_retry_chain(p), InputError);
  p = own(-1, 3);
  EXPECT_THROW(build_retry_chain(p), InputError);
}

}  // namespace
}  // namespace retrystorm::markov
