// Client-side circuit breakers and adaptive throttling (issue 29, parts 1
// and 4; docs/policies.md, "Circuit breakers", "Client-side throttling"):
// each state machine against the rules of the code it names.
//   opossum lib/circuit.js: CircuitBreaker.call (emits 'fire' for every call,
//     rejects with EOPENBREAKER when !closed && !pendingClose), fail() (after
//     a failure: volumeThreshold, then failures / fires * 100 >
//     errorThresholdPercentage, or half-open), _startTimer / _halfOpen
//     (resetTimeout after open, PENDING_CLOSE lets one call through), the
//     'success' listener (closes when half-open); lib/status.js Status
//     (rollingCountBuckets rotated every rollingCountTimeout / buckets ms,
//     never cleared on open or close).
//   cockatiel src/CircuitBreakerPolicy.ts execute (Closed: breaker.success /
//     failure of the state captured when the call started; Open: lazy
//     half-open once Date.now() - openedAt >= duration), open() (does
//     nothing when already Open), recordHalfOpenSuccess / Failure (ignored
//     once the half-open state is gone); src/breaker/ConsecutiveBreaker.ts.
//   resilience4j CircuitBreakerStateMachine.java (OpenState.tryAcquirePermission:
//     now.isAfter(retryAfter); HalfOpenState: permittedNumberOfCallsInHalfOpenState
//     permits, others rejected), CircuitBreakerMetrics.checkIfThresholdsExceeded
//     (min(minimumNumberOfCalls, window) outcomes, then failure rate >= threshold).
//   Polly (v8) src/Polly.Core/CircuitBreaker/Controller/CircuitStateController.cs
//     (OnActionPreExecuteAsync: Open and now >= blockedUntil lets one probe
//     through and turns HalfOpen, never a second; OnUnhandledOutcomeAsync:
//     any success closes a HalfOpen circuit; OnHandledOutcomeAsync: any
//     failure reopens it; CloseCircuit_NeedsLock resets the metrics),
//     Controller/AdvancedCircuitBehavior.cs OnActionFailure (Closed: count,
//     then Throughput >= MinimumThroughput && FailureRate >= FailureRatio;
//     Open: count only; HalfOpen: count nothing), Health/RollingHealthMetrics.cs
//     UpdateCurrentWindow (a new window when the current one is
//     SamplingDuration / 10 old; windows SamplingDuration old or more dropped),
//     CircuitBreakerStrategyOptions (0.1, 100, 30 s, 5 s).
//   grpc-go balancer/rls/internal/adaptive/adaptive.go: Throttler.ShouldThrottle
//     ((requests - ratio x accepts) / (requests + padding), a throttled request
//     counted as a throttle), RegisterBackendResponse.
// The real opossum and cockatiel, run from npm, are the oracle in
// tests/conformance (breaker_conformance).
#include "policies/circuit_breaker.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "policies/adaptive_throttle.hpp"
#include "policies/rolling_bins.hpp"

namespace retrystorm {
namespace {

BreakerSettings opossum(double open_s = 1) {
  return {.kind = BreakerKind::opossum,
          .failure_rate = 0.5,
          .window_s = 10,
          .buckets = 10,
          .min_calls = 0,
          .open_s = open_s,
          .trials = 1};
}

TEST(Opossum, OpensOnTheFirstFailureAboveTheRateOfFires) {
  CircuitBreaker b(opossum());
  uint32_t t = b.admit(0);
  ASSERT_NE(t, 0u);
  b.on_outcome(0.01, false, t);  // 1 failure of 1 fire: 100% > 50%
  EXPECT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.opened(), 1);
}

TEST(Opossum, HalfOfTheFiresFailingIsNotAboveTheThreshold) {
  CircuitBreaker b(opossum());
  uint32_t a = b.admit(0), c = b.admit(0);
  b.on_outcome(0.1, true, a);
  b.on_outcome(0.1, false, c);  // 1 of 2 = 50%: not > 50
  EXPECT_EQ(b.state(), BreakerState::closed);
  uint32_t d = b.admit(0.2);
  b.on_outcome(0.3, false, d);  // 2 of 3
  EXPECT_EQ(b.state(), BreakerState::open);
}

// One trial after resetTimeout; a second call meanwhile is rejected; the
// rejected calls were fires and stay in the window after the close, so the
// next failure finds 2 failures in 5 fires (40%) and the breaker closed.
TEST(Opossum, OneTrialAndTheRejectedCallsDiluteTheRateAfterClosing) {
  CircuitBreaker b(opossum(1));
  b.on_outcome(0.05, false, b.admit(0));
  ASSERT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(0.2), 0u);
  EXPECT_EQ(b.admit(0.4), 0u);
  uint32_t trial = b.admit(1.1);
  ASSERT_NE(trial, 0u);
  EXPECT_EQ(b.state(), BreakerState::half_open);
  EXPECT_EQ(b.admit(1.15), 0u);  // PENDING_CLOSE was cleared by the trial
  b.on_outcome(1.2, true, trial);
  EXPECT_EQ(b.state(), BreakerState::closed);
  b.on_outcome(1.3, false, b.admit(1.25));
  // fires: 1 + 2 rejected + trial + the rejected one + this = 6; failures 2.
  EXPECT_EQ(b.state(), BreakerState::closed);
  EXPECT_EQ(b.rejected(), 3);
}

TEST(Opossum, AFailureWhileHalfOpenOpensAgainForAnotherResetTimeout) {
  CircuitBreaker b(opossum(1));
  b.on_outcome(0, false, b.admit(0));
  uint32_t trial = b.admit(1);
  b.on_outcome(1.5, false, trial);
  EXPECT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(2.4), 0u);  // opened at 1.5: closed to calls until 2.5
  EXPECT_NE(b.admit(2.5), 0u);
  EXPECT_EQ(b.opened(), 2);
}

// The timer turns it half-open whether or not a call comes: a late answer
// of a call sent before it opened then decides (the 'success' listener).
TEST(Opossum, ALateSuccessAfterTheResetTimeoutClosesIt) {
  CircuitBreaker b(opossum(1));
  uint32_t early = b.admit(0);
  b.on_outcome(0.05, false, b.admit(0));  // 1 of 2 fires: not above 50%
  b.on_outcome(0.1, false, b.admit(0));   // 2 of 3
  ASSERT_EQ(b.state(), BreakerState::open);
  b.on_outcome(1.2, true, early);
  EXPECT_EQ(b.state(), BreakerState::closed);
}

TEST(Opossum, FailuresOlderThanTheWindowNoLongerCount) {
  CircuitBreaker b(opossum());
  for (int i = 0; i < 10; ++i) b.on_outcome(0.5, true, b.admit(0.1 * i));
  // 10 fires, 0 failures. 11 s later they have rolled out of the window.
  b.on_outcome(11.2, false, b.admit(11.1));
  EXPECT_EQ(b.state(), BreakerState::open);
}

TEST(Opossum, VolumeThresholdHoldsItClosedUntilEnoughFires) {
  BreakerSettings s = opossum();
  s.min_calls = 3;
  CircuitBreaker b(s);
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  EXPECT_EQ(b.state(), BreakerState::closed);  // 2 fires < volumeThreshold 3
  b.on_outcome(0, false, b.admit(0));
  EXPECT_EQ(b.state(), BreakerState::open);
}

BreakerSettings consecutive(int n) {
  return {.kind = BreakerKind::consecutive, .failures = n, .open_s = 2, .trials = 1};
}

TEST(Consecutive, OpensOnTheNthFailureInARowAndASuccessResetsTheCount) {
  CircuitBreaker b(consecutive(3));
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, true, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  EXPECT_EQ(b.state(), BreakerState::closed);
  b.on_outcome(0, false, b.admit(0));
  EXPECT_EQ(b.state(), BreakerState::open);
}

// Lazy: Open until a call comes at openedAt + duration or later, which
// becomes the trial. A failure of a call sent while closed counts with the
// closed rule: the count was not reset at open, so it opens a half-open
// breaker at once, and the trial's answer, arriving later, is ignored.
TEST(Consecutive, ALateFailureOfAClosedCallReopensAndTheTrialIsThenIgnored) {
  CircuitBreaker b(consecutive(2));
  uint32_t slow = b.admit(0);
  b.on_outcome(0.1, false, b.admit(0));
  b.on_outcome(0.2, false, b.admit(0));
  ASSERT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(2.1), 0u) << "opened at 0.2: until 2.2";
  uint32_t trial = b.admit(2.25);
  ASSERT_NE(trial, 0u);
  EXPECT_EQ(b.admit(2.3), 0u) << "one trial (cockatiel makes the others wait; see docs)";
  b.on_outcome(2.4, false, slow);
  EXPECT_EQ(b.state(), BreakerState::open);
  b.on_outcome(2.5, true, trial);
  EXPECT_EQ(b.state(), BreakerState::open);
  // A success of the trial of the next half-open state closes it.
  EXPECT_EQ(b.admit(4.3), 0u) << "opened again at 2.4";
  uint32_t next = b.admit(4.5);
  b.on_outcome(4.6, true, next);
  EXPECT_EQ(b.state(), BreakerState::closed);
}

BreakerSettings r4j() {
  return {.kind = BreakerKind::resilience4j,
          .failure_rate = 0.5,
          .window_calls = 10,
          .min_calls = 4,
          .open_s = 5,
          .trials = 3};
}

TEST(Resilience4j, NoVerdictBelowTheMinimumThenFailureRateAtLeastTheThreshold) {
  CircuitBreaker b(r4j());
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  b.on_outcome(0, false, b.admit(0));
  EXPECT_EQ(b.state(), BreakerState::closed);  // 3 < minimumNumberOfCalls 4
  b.on_outcome(0, true, b.admit(0));           // 3 of 4 = 75%
  EXPECT_EQ(b.state(), BreakerState::open);
  CircuitBreaker even(r4j());
  for (bool ok : {true, false, true, false}) even.on_outcome(0, ok, even.admit(0));
  EXPECT_EQ(even.state(), BreakerState::open) << "50% >= 50%";
}

// A threshold of 55% is the percent 55 to both libraries (opossum compares
// failures / fires * 100 > errorThresholdPercentage; resilience4j's
// SnapshotImpl.getFailureRate is failed * 100.0f / total, compared >= the
// float failureRateThreshold), where 0.55 x 100 is 55.00000000000001.
TEST(BreakerSettings, ARateThresholdIsThePercentAsTyped) {
  BreakerSettings o = opossum();
  o.failure_rate = 0.55;
  CircuitBreaker at(o);
  std::vector<uint32_t> calls;
  for (int i = 0; i < 20; ++i) calls.push_back(at.admit(0));
  for (int i = 0; i < 9; ++i) at.on_outcome(0.1, true, calls[static_cast<size_t>(i)]);
  for (int i = 9; i < 19; ++i) at.on_outcome(0.1, false, calls[static_cast<size_t>(i)]);
  EXPECT_EQ(at.state(), BreakerState::closed) << "10 of 19 fires: 52.6% is not above 55%";
  // 11 / 20 x 100 is 55.00000000000001 in JavaScript's doubles too: above
  // the typed 55, so opossum opens (ours did not while it compared with
  // 0.55 x 100, the same 55.00000000000001).
  at.on_outcome(0.1, false, calls[19]);
  EXPECT_EQ(at.state(), BreakerState::open) << "11 of 20 fires, as opossum computes it";
  BreakerSettings r = r4j();
  r.failure_rate = 0.55;
  r.window_calls = 100;
  r.min_calls = 100;
  CircuitBreaker even(r);
  for (int i = 0; i < 100; ++i) even.on_outcome(0, i >= 55, even.admit(0));
  EXPECT_EQ(even.state(), BreakerState::open) << "55 of 100 failed: 55% >= 55%";
}

TEST(Resilience4j, HalfOpenLetsItsPermitsThroughAndJudgesThemOnAFreshWindow) {
  CircuitBreaker b(r4j());
  for (int i = 0; i < 4; ++i) b.on_outcome(0, false, b.admit(0));
  ASSERT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(5), 0u) << "isAfter: strictly after openedAt + wait";
  uint32_t a = b.admit(5.01), c = b.admit(5.02), d = b.admit(5.03);
  EXPECT_NE(a * c * d, 0u);
  EXPECT_EQ(b.admit(5.04), 0u) << "3 permits";
  b.on_outcome(5.1, true, a);
  b.on_outcome(5.1, false, c);
  EXPECT_EQ(b.state(), BreakerState::half_open) << "min(4, 3) = 3 outcomes decide";
  b.on_outcome(5.2, true, d);  // 1 of 3 failed: 33% < 50%
  EXPECT_EQ(b.state(), BreakerState::closed);
  // A fresh closed window: the old failures are gone.
  for (int i = 0; i < 3; ++i) b.on_outcome(6, false, b.admit(6));
  EXPECT_EQ(b.state(), BreakerState::closed);
}

TEST(Resilience4j, TheWindowKeepsTheLastCallsOnly) {
  CircuitBreaker b(r4j());
  for (int i = 0; i < 4; ++i) b.on_outcome(0, false, b.admit(0));
  uint32_t trial[3] = {b.admit(6), b.admit(6), b.admit(6)};
  for (uint32_t t : trial) b.on_outcome(6, true, t);
  ASSERT_EQ(b.state(), BreakerState::closed);
  // 10 successes, then 5 failures: the window of 10 holds 5 of each.
  for (int i = 0; i < 10; ++i) b.on_outcome(7, true, b.admit(7));
  for (int i = 0; i < 4; ++i) b.on_outcome(7, false, b.admit(7));
  EXPECT_EQ(b.state(), BreakerState::closed);  // 4 of 10
  b.on_outcome(7, false, b.admit(7));
  EXPECT_EQ(b.state(), BreakerState::open);  // 5 of 10
}

TEST(BreakerSettings, EachLibrarysDefaultsFillTheZeros) {
  Scenario s;
  s.client.breaker.kind = BreakerKind::resilience4j;
  BreakerSettings r = breaker_settings(s);
  EXPECT_EQ(r.open_s, 60);  // waitDurationInOpenState
  EXPECT_EQ(r.trials, 10);  // permittedNumberOfCallsInHalfOpenState
  EXPECT_EQ(r.min_calls, 100);
  s.client.breaker.kind = BreakerKind::opossum;
  BreakerSettings o = breaker_settings(s);
  EXPECT_EQ(o.open_s, 30);  // resetTimeout
  EXPECT_EQ(o.trials, 1);
  EXPECT_EQ(o.min_calls, 0);  // volumeThreshold
  EXPECT_EQ(o.window_s, 10);  // rollingCountTimeout
}

// ---- Polly ------------------------------------------------------------------

BreakerSettings polly(int min_calls = 4) {
  return {.kind = BreakerKind::polly,
          .failure_rate = 0.5,
          .window_s = 10,
          .min_calls = min_calls,
          .open_s = 5,
          .trials = 1};
}

// Runs one call admitted and ended at now_s.
void call(CircuitBreaker& b, double now_s, bool ok) {
  uint32_t t = b.admit(now_s);
  ASSERT_NE(t, 0u) << "refused at " << now_s;
  b.on_outcome(now_s, ok, t);
}

TEST(Polly, OpensOnAFailureOnceThroughputAndRatioAreBothReached) {
  CircuitBreaker b(polly());
  call(b, 0, false);
  call(b, 0.1, false);
  call(b, 0.2, true);  // 2 of 3 failed, but throughput 3 < 4
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 0.3, true);  // a success never breaks: 2 of 4 is judged on the next failure
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 0.4, false);  // 3 of 5 >= 0.5, 5 >= 4
  EXPECT_EQ(b.state(), BreakerState::open);
}

TEST(Polly, TheRatioIsAtLeastTheThresholdNotAboveIt) {
  CircuitBreaker b(polly());
  call(b, 0, true);
  call(b, 0.1, true);
  call(b, 0.2, false);
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 0.3, false);  // exactly 2 of 4 = 0.5 opens (>=); opossum's > would not
  EXPECT_EQ(b.state(), BreakerState::open);
}

TEST(Polly, OneProbeAfterTheBreakAndNoSecondWhileItRuns) {
  CircuitBreaker b(polly(2));
  call(b, 0, false);
  call(b, 0, false);
  ASSERT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(4.999), 0u);  // blocked until 5 s
  uint32_t probe = b.admit(5);    // now >= blockedUntil
  EXPECT_NE(probe, 0u);
  EXPECT_EQ(b.state(), BreakerState::half_open);
  // v8 never lets a second probe through while half-open, however long.
  EXPECT_EQ(b.admit(100), 0u);
  EXPECT_EQ(b.rejected(), 2);
  b.on_outcome(100.5, true, probe);
  EXPECT_EQ(b.state(), BreakerState::closed);
}

TEST(Polly, AnyOutcomeWhileHalfOpenDecidesWhicheverCallItIs) {
  CircuitBreaker b(polly(2));
  uint32_t slow = b.admit(0);  // sent while closed, ends later
  call(b, 0, false);
  call(b, 0, false);
  ASSERT_EQ(b.state(), BreakerState::open);
  uint32_t probe = b.admit(6);
  ASSERT_NE(probe, 0u);
  b.on_outcome(6.5, true, slow);  // the old call's success closes it
  EXPECT_EQ(b.state(), BreakerState::closed);
  // A failure of the probe now lands in a closed circuit with fresh counts.
  b.on_outcome(6.6, false, probe);
  EXPECT_EQ(b.state(), BreakerState::closed);  // 1 call < 2: no break
  call(b, 6.7, false);                         // 2 of 2
  EXPECT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.opened(), 2);
}

TEST(Polly, AFailedProbeReopensForAnotherBreak) {
  CircuitBreaker b(polly(2));
  call(b, 0, false);
  call(b, 0, false);
  call(b, 5, false);  // the probe fails: open again until 10 s
  EXPECT_EQ(b.state(), BreakerState::open);
  EXPECT_EQ(b.admit(9.9), 0u);
  EXPECT_NE(b.admit(10), 0u);
}

TEST(Polly, FailuresWhileOpenCountAndClosingForgetsThem) {
  CircuitBreaker b(polly(4));
  uint32_t late[3] = {b.admit(0), b.admit(0), b.admit(0)};
  call(b, 0, false);
  call(b, 0.1, false);
  call(b, 0.2, false);
  call(b, 0.3, false);
  ASSERT_EQ(b.state(), BreakerState::open);
  for (uint32_t t : late) b.on_outcome(1, false, t);  // counted, no new break
  EXPECT_EQ(b.opened(), 1);
  call(b, 5.5, true);  // the probe closes it and resets the counts
  // Three failures after closing: throughput 3 < 4, the 7 before are gone.
  call(b, 6, false);
  call(b, 6, false);
  call(b, 6, false);
  EXPECT_EQ(b.state(), BreakerState::closed);
}

TEST(Polly, WindowsStartAtTheFirstOutcomeAndLeaveAfterTheSamplingDuration) {
  CircuitBreaker b(polly(4));
  call(b, 0.5, true);   // a window starts at 0.5 (not on a grid from 0)
  call(b, 1.4, false);  // still in it: 1 s windows
  call(b, 1.6, false);  // a second window from 1.6
  // At 10.5 the window from 0.5 is 10 s old: dropped (>=). Left: the one
  // from 1.6 (a failure) and this failure: throughput 2 < 4.
  call(b, 10.5, false);
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 10.6, false);  // 3 < 4
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 10.7, false);  // 4 failures of 4
  EXPECT_EQ(b.state(), BreakerState::open);
}

TEST(Polly, RefusedCallsAreNotCounted) {
  CircuitBreaker b(polly(2));
  call(b, 0, false);
  call(b, 0, false);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(b.admit(1), 0u);
  call(b, 5, true);  // closes; had refusals counted as successes, nothing would change either
  EXPECT_EQ(b.state(), BreakerState::closed);
  call(b, 5.1, false);
  call(b, 5.2, false);  // 2 of 2 since closing
  EXPECT_EQ(b.state(), BreakerState::open);
}

TEST(BreakerSettings, PollysDefaultsFillTheZeros) {
  Scenario s;
  s.client.breaker.kind = BreakerKind::polly;
  BreakerSettings p = breaker_settings(s);
  EXPECT_EQ(p.open_s, 5);       // BreakDuration
  EXPECT_EQ(p.min_calls, 100);  // MinimumThroughput
  EXPECT_EQ(p.trials, 1);       // one probe
}

// ---- client-side adaptive throttling -------------------------------------

TEST(AdaptiveThrottle, TheProbabilityIsTheSreBooksFormula) {
  AdaptiveThrottle t({.k = 2, .padding = 1, .window_s = 120, .bins = 100});
  EXPECT_EQ(t.reject_probability(0), 0);
  for (int i = 0; i < 30; ++i) t.on_answer(1, true);
  for (int i = 0; i < 70; ++i) t.on_answer(1, false);
  // requests 100, accepts 30: (100 - 60) / 101.
  EXPECT_DOUBLE_EQ(t.reject_probability(2), 40.0 / 101);
  // A request rejected locally is a throttle: requests 101, accepts 30.
  EXPECT_TRUE(t.throttles(2, 0.0));
  EXPECT_DOUBLE_EQ(t.reject_probability(2), 41.0 / 102);
  EXPECT_FALSE(t.throttles(2, 0.99));
  EXPECT_EQ(t.rejected(), 1);
}

TEST(AdaptiveThrottle, NoRejectionWhileAcceptsTimesKCoverTheRequests) {
  AdaptiveThrottle t({.k = 2, .padding = 8, .window_s = 30, .bins = 100});
  for (int i = 0; i < 50; ++i) t.on_answer(1, true);
  for (int i = 0; i < 50; ++i) t.on_answer(1, false);
  EXPECT_EQ(t.reject_probability(1), 0);  // 100 - 2 x 50 = 0
  t.on_answer(1, false);
  EXPECT_DOUBLE_EQ(t.reject_probability(1), 1.0 / 109);  // gRPC's padding 8
}

TEST(AdaptiveThrottle, HistoryOlderThanTheWindowIsForgotten) {
  AdaptiveThrottle t({.k = 2, .padding = 1, .window_s = 120, .bins = 100});
  for (int i = 0; i < 100; ++i) t.on_answer(0, false);
  EXPECT_GT(t.reject_probability(119), 0.9);
  EXPECT_EQ(t.reject_probability(121), 0);  // the bin of t = 0 has expired
}

// The window's total is kept as bins come and go rather than summed at every
// question: on generated sequences of counts and jumps in time (within a bin,
// across a few, past the whole window) it equals the sum of the bins still in
// the window, recounted from the history.
TEST(RollingBins, TheTotalIsTheSumOfTheBinsStillInTheWindow) {
  struct Count {
    double n = 0;
    Count& operator+=(const Count& o) { return n += o.n, *this; }
    Count& operator-=(const Count& o) { return n -= o.n, *this; }
  };
  constexpr size_t kBins = 7;
  constexpr double kWidth = 0.5, kStart = 0.25;
  std::mt19937_64 rng(29);
  for (int round = 0; round < 200; ++round) {
    RollingBins<Count> bins(kBins, kWidth, kStart);
    std::vector<std::pair<int64_t, double>> history;  // (bin, count) as added
    double now = kStart;
    for (int k = 0; k < 300; ++k) {
      const double jump[] = {0.0, 0.01, 0.3, 1.7, 4.0};
      now += jump[rng() % 5];
      const double n = double(rng() % 4);
      bins.add(now, {n});
      const auto bin = static_cast<int64_t>(std::floor((now - kStart) / kWidth));
      history.push_back({bin, n});
      double expected = 0;
      for (const auto& [b, c] : history)
        if (b > bin - int64_t(kBins)) expected += c;
      ASSERT_EQ(bins.total(now).n, expected) << "round " << round << ", step " << k;
    }
  }
}

}  // namespace
}  // namespace retrystorm
