// Netflix concurrency-limits' Gradient2 and Vegas limits in a SimpleLimiter
// before the server (issue 29, part 3; docs/policies.md, "Adaptive
// concurrency"). The limits against the rules of
// concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/:
//   limit/Gradient2Limit.java _update (the raw sample as the short RTT, the
//     long RTT from ExpAvgMeasurement.add, its 0.95 decay when long / short
//     > 2, the app-limited return when inflight < limit / 2, the gradient
//     clamped to [0.5, 1], limit x gradient + queueSize smoothed then
//     clamped to [minLimit, maxConcurrency]) and its Builder's defaults;
//   limit/measurement/ExpAvgMeasurement.java add (the mean of the first 10
//     samples, then factor 2 / (window + 1));
//   limit/VegasLimit.java _update (probeCount, shouldProbe: jitter x
//     probeMultiplier x limit <= probeCount, rtt_noload the least sample)
//     and updateEstimatedLimit (the queue estimate ceil(limit x (1 -
//     noload / rtt)) against threshold, alpha and beta; a drop decreases;
//     clamped before smoothing); limit/functions/Log10RootIntFunction.java;
//   limiter/AbstractLimiter.java createListener (the in-flight count at
//     acquire, itself included) and SimpleLimiter.java acquire (no permit
//     left: rejected).
// Then runs where each rescues the collapsing order-status and where each
// hurts a healthy service.
#include "policies/concurrency_limits.hpp"

#include <gtest/gtest.h>

#include <map>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

NetflixLimitSettings gradient2() {
  Scenario s;
  s.server.concurrency.kind = ConcurrencyLimiter::gradient2;
  return netflix_limit_settings(s);
}

NetflixLimitSettings vegas() {
  Scenario s;
  s.server.concurrency.kind = ConcurrencyLimiter::vegas;
  return netflix_limit_settings(s);
}

TEST(NetflixLimits, TheBuildersDefaultsFillTheZeros) {
  NetflixLimitSettings g = gradient2();
  EXPECT_EQ(g.initial, 20);
  EXPECT_EQ(g.min, 20);
  EXPECT_EQ(g.max, 200);
  EXPECT_EQ(g.smoothing, 0.2);
  EXPECT_EQ(g.queue_size, 4);
  EXPECT_EQ(g.long_window, 600);
  EXPECT_EQ(g.rtt_tolerance, 1.5);
  NetflixLimitSettings v = vegas();
  EXPECT_EQ(v.initial, 20);
  EXPECT_EQ(v.min, 1);
  EXPECT_EQ(v.max, 1000);
  EXPECT_EQ(v.smoothing, 1.0);
  EXPECT_EQ(v.probe_multiplier, 30);
}

TEST(NetflixLimits, TheLimiterRefusesWithoutAPermitAndCountsItselfInFlight) {
  NetflixLimiter l(gradient2(), 1);
  for (uint32_t k = 1; k <= 20; ++k) EXPECT_EQ(l.admit(), k);  // incrementAndGet
  EXPECT_EQ(l.admit(), 0u);
  EXPECT_EQ(l.blocked(), 1);
  l.on_outcome(0.01, 20, false);
  EXPECT_EQ(l.in_flight(), 19);
  EXPECT_EQ(l.admit(), 20u);
}

TEST(ExpAvg, TheMeanOfTheFirstTenThenTheExponentialAverage) {
  ExpAvgMeasurement m(600);
  for (int i = 1; i <= 10; ++i) m.add(i);
  EXPECT_DOUBLE_EQ(m.value(), 5.5);
  EXPECT_DOUBLE_EQ(m.add(605.5), 5.5 * (1 - 2.0 / 601) + 605.5 * 2.0 / 601);
}

TEST(Gradient2, AtAnEvenRttTheLimitGrowsByTheSmoothedQueueSize) {
  NetflixLimiter l(gradient2(), 1);
  // gradient min(1, 1.5 x 10 / 10) = 1: 20 + 4 smoothed: 20 x 0.8 + 24 x 0.2.
  l.on_outcome(0.010, 20, false);
  EXPECT_DOUBLE_EQ(l.estimated(), 20.8);
  EXPECT_EQ(l.limit(), 20);  // (int) truncates
  l.on_outcome(0.010, 20, false);
  EXPECT_DOUBLE_EQ(l.estimated(), 20.8 * 0.8 + 24.8 * 0.2);
  EXPECT_EQ(l.limit(), 21);
}

TEST(Gradient2, FewerThanHalfTheLimitInFlightChangesNothing) {
  NetflixLimiter l(gradient2(), 1);
  l.on_outcome(0.010, 9, false);  // 9 < 20 / 2
  EXPECT_EQ(l.estimated(), 20);
  l.on_outcome(0.010, 10, false);  // 10 is not < 10
  EXPECT_DOUBLE_EQ(l.estimated(), 20.8);
}

TEST(Gradient2, ASlowSampleHalvesAtMostAndTheMinimumHolds) {
  NetflixLimitSettings s = gradient2();
  s.min = 5;
  s.initial = 100;
  NetflixLimiter l(s, 1);
  for (int i = 0; i < 10; ++i) l.on_outcome(0.010, 100, false);  // the long RTT: 10 ms
  const double before = l.estimated();
  // 1.5 x 10.1 / 40 = 0.38, clamped to 0.5: limit x 0.5 + 4, smoothed.
  l.on_outcome(0.040, 100, false);
  EXPECT_DOUBLE_EQ(l.estimated(), before * 0.8 + (before * 0.5 + 4) * 0.2);
  // A gentler sample: 1.5 x long / 20 ms between 0.5 and 1.
  const double at = l.estimated();
  const double long_rtt = 1e7 * (1 - 2.0 / 601) + 4e7 * (2.0 / 601);  // after the 40 ms sample
  const double next_long = long_rtt * (1 - 2.0 / 601) + 2e7 * (2.0 / 601);
  l.on_outcome(0.020, 100, false);
  const double g = 1.5 * next_long / 2e7;
  EXPECT_DOUBLE_EQ(l.estimated(), at * 0.8 + (at * g + 4) * 0.2);
}

TEST(Gradient2, TheLongRttDecaysWhenTheSamplesFallBelowHalfOfIt) {
  NetflixLimitSettings s = gradient2();
  s.rtt_tolerance = 1;  // so that the gradient reads the long RTT as it is
  NetflixLimiter a(s, 1), b(s, 1);
  for (int i = 0; i < 10; ++i) a.on_outcome(0.100, 1, false), b.on_outcome(0.100, 1, false);
  // a: a 40 ms sample (100 / 40 > 2): the stored long RTT decays by 0.95
  // after this sample is judged; b: 60 ms does not decay.
  a.on_outcome(0.040, 1, false);
  b.on_outcome(0.060, 1, false);
  // Both then see 100 ms at full load: a's gradient reads the decayed long RTT.
  a.on_outcome(0.100, 40, false);
  b.on_outcome(0.100, 40, false);
  const double f = 2.0 / 601;
  const double la = ((1e8 * (1 - f) + 4e7 * f) * 0.95) * (1 - f) + 1e8 * f;
  const double lb = (1e8 * (1 - f) + 6e7 * f) * (1 - f) + 1e8 * f;
  EXPECT_DOUBLE_EQ(a.estimated(), 20 * 0.8 + (20 * (la / 1e8) + 4) * 0.2);
  EXPECT_DOUBLE_EQ(b.estimated(), 20 * 0.8 + (20 * (lb / 1e8) + 4) * 0.2);
  EXPECT_LT(a.estimated(), b.estimated());
}

TEST(Gradient2, TheMaximumCapsTheLimit) {
  NetflixLimitSettings s = gradient2();
  s.max = 22;
  NetflixLimiter l(s, 1);
  for (int i = 0; i < 100; ++i) l.on_outcome(0.010, 1000, false);
  EXPECT_EQ(l.limit(), 22);
}

TEST(Vegas, TheFirstSampleSetsTheNoLoadRttThenNoQueueGrowsFast) {
  NetflixLimiter l(vegas(), 1);
  l.on_outcome(0.010, 20, false);  // rtt_noload was 0: set, no change
  EXPECT_EQ(l.limit(), 20);
  l.on_outcome(0.010, 20, false);  // queue ceil(20 x 0) = 0 <= threshold 1: + beta 6
  EXPECT_EQ(l.limit(), 26);
  // queue ceil(26 x (1 - 10/20)) = 13 > beta 6: - 1
  l.on_outcome(0.020, 26, false);
  EXPECT_EQ(l.limit(), 25);
  // queue ceil(25 x (1 - 10/11)) = 3: alpha 3 <= 3 <= beta 6, no change
  l.on_outcome(0.011, 25, false);
  EXPECT_EQ(l.limit(), 25);
  // queue ceil(25 x (1 - 10/10.5)) = 2 < alpha 3: + 1
  l.on_outcome(0.0105, 25, false);
  EXPECT_EQ(l.limit(), 26);
  // A shorter RTT is the new no-load RTT, no change.
  l.on_outcome(0.008, 26, false);
  EXPECT_EQ(l.limit(), 26);
}

TEST(Vegas, ADropDecreasesEvenWhenAppLimitedAndAppLimitedHoldsOtherwise) {
  NetflixLimiter l(vegas(), 1);
  l.on_outcome(0.010, 20, false);
  l.on_outcome(0.010, 9, false);  // 9 x 2 < 20: app-limited, no change
  EXPECT_EQ(l.limit(), 20);
  l.on_outcome(0.010, 1, true);  // a drop: - log10 root (1)
  EXPECT_EQ(l.limit(), 19);
}

TEST(Vegas, AboveAHundredTheThresholdsDouble) {
  NetflixLimitSettings s = vegas();
  s.initial = 150;  // Log10RootIntFunction(150) = 2: threshold 2, alpha 6, beta 12
  NetflixLimiter l(s, 1);
  l.on_outcome(0.010, 150, false);
  l.on_outcome(0.010, 150, false);  // queue 0 <= 2: + 12
  EXPECT_EQ(l.limit(), 162);
  // queue ceil(162 x (1 - 10/10.2)) = 4: 2 < 4 < alpha 6: + 2
  l.on_outcome(0.0102, 162, false);
  EXPECT_EQ(l.limit(), 164);
  l.on_outcome(0.010, 1, true);  // a drop: - 2
  EXPECT_EQ(l.limit(), 162);
}

TEST(Vegas, TheNoLoadRttIsProbedAgainWithinAMultipleOfTheLimit) {
  NetflixLimitSettings s = vegas();
  s.probe_multiplier = 1;  // a probe within 0.5 x 20 to 1 x 20 samples
  NetflixLimiter l(s, 7);
  l.on_outcome(0.010, 20, false);  // no-load 10 ms
  // App-limited 30 ms samples change no limit, but one of the next 20 is a
  // probe that takes 30 ms as the no-load RTT.
  for (int i = 0; i < 20; ++i) l.on_outcome(0.030, 1, false);
  EXPECT_EQ(l.limit(), 20);
  // Queue 0 against 30 ms: + 6 (one of two may itself be a probe; two in a
  // row cannot be). Against 10 ms it would have been 14 > beta: - 1 each.
  l.on_outcome(0.030, 20, false);
  l.on_outcome(0.030, 20, false);
  EXPECT_TRUE(l.limit() == 26 || l.limit() == 32) << l.limit();
}

TEST(NetflixLimits, AnAnswerInTheInstantItWasLetThroughIsNoSample) {
  NetflixLimiter v(vegas(), 1);
  ASSERT_EQ(v.admit(), 1u);
  v.on_outcome(0, 1, false);  // VegasLimit throws on rtt 0
  EXPECT_EQ(v.in_flight(), 0);
  for (int i = 0; i < 2; ++i) v.on_outcome(0.010, v.admit() + 19, false);
  EXPECT_EQ(v.limit(), 26);  // the first real sample set the no-load RTT
}

double failed(std::map<std::string, std::string> sets) {
  sets["engine"] = "agent";
  return compute_metrics(run_engine(testing::preset("order-status", sets))).failed_fraction;
}

// order-status's slowdown fills the queue with attempts whose callers gave
// up; each limit keeps what is in flight near what the server turns round.
TEST(NetflixLimits, EachRescuesTheCollapsingOrderStatus) {
  const double stuck = failed({});
  ASSERT_GT(stuck, 0.6);
  for (const char* kind : {"gradient2", "vegas"}) {
    Metrics m = compute_metrics(run_engine(testing::preset(
        "order-status", {{"engine", "agent"}, {"server.adaptive_concurrency", kind}})));
    EXPECT_TRUE(m.recovered) << kind;
    EXPECT_LT(m.failed_fraction, 0.03) << kind;
    EXPECT_LT(m.wasted_fraction, 0.01) << kind;
  }
}

// A healthy service whose answers take a second on average, exponentially
// spread (100 slots, 80 in flight): both limits read the spread as
// queueing. Gradient2's long RTT decays whenever a sample is under half of
// it, so its gradient stays below 1 and the limit sits at minLimit 20;
// Vegas's no-load RTT is the shortest answer, so nearly every sample looks
// queued. Both fail most requests that would have succeeded. With the same
// mean and no spread they let nearly all through.
TEST(NetflixLimits, EachHurtsAHealthyServiceWhoseLatencySpreads) {
  std::map<std::string, std::string> healthy = {{"server.slots", "100"},
                                                {"server.service", "exponential"},
                                                {"incident.duration_s", "0"},
                                                {"client.retries", "0"}};
  EXPECT_LT(failed(healthy), 0.01);
  healthy["server.adaptive_concurrency"] = "gradient2";
  EXPECT_GT(failed(healthy), 0.6);
  healthy["server.adaptive_concurrency"] = "vegas";
  EXPECT_GT(failed(healthy), 0.8);
  healthy["server.service"] = "deterministic";
  EXPECT_LT(failed(healthy), 0.01);
  healthy["server.adaptive_concurrency"] = "gradient2";
  EXPECT_LT(failed(healthy), 0.01);
}

// Gradient2's maxConcurrency of 200 caps a healthy service that needs 400
// in flight (400 a second, a second each): half the requests are refused.
TEST(NetflixLimits, Gradient2sDefaultMaximumCapsABusyHealthyService) {
  std::map<std::string, std::string> busy = {{"server.slots", "500"},
                                             {"server.capacity_per_s", "500"},
                                             {"demand.rate_per_s", "400"},
                                             {"server.service", "deterministic"},
                                             {"incident.duration_s", "0"},
                                             {"client.retries", "0"},
                                             {"server.adaptive_concurrency", "gradient2"}};
  EXPECT_GT(failed(busy), 0.45);
  busy["server.max_limit"] = "1000";
  EXPECT_LT(failed(busy), 0.02);
}

TEST(NetflixLimits, TheirKeysMatterOnlyWithTheirLimit) {
  auto when = [](const std::string& path) {
    const KeySpec& k = key_or_throw(path);
    EXPECT_EQ(k.when_path, "server.adaptive_concurrency") << path;
    return k.when_values;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(when("server.initial_limit"), (V{"gradient2", "vegas"}));
  EXPECT_EQ(when("server.limit_long_window"), (V{"gradient2"}));
  EXPECT_EQ(when("server.limit_probe_multiplier"), (V{"vegas"}));
  EXPECT_EQ(when("server.min_rtt_requests"), (V{"envoy"}));
}

}  // namespace
}  // namespace retrystorm
