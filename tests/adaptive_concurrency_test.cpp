// Envoy's adaptive concurrency filter (issue 29, part 3; docs/policies.md,
// "Adaptive concurrency"). The state machine against the rules of
// envoy/source/extensions/filters/http/adaptive_concurrency/controller/
// gradient_controller.cc (GradientController::calculateNewLimit,
// forwardingDecision, recordLatencySample, enterMinRTTSamplingWindow,
// updateMinRTT, updateConcurrencyLimit, applyJitter), then a run where the
// filter rescues the collapsing order-status and one where it hurts a
// healthy service whose latency is long.
#include "policies/adaptive_concurrency.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "cli_run.hpp"
#include "configs_helpers.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "systems/export.hpp"

namespace retrystorm {
namespace {

GradientSettings quick() {
  GradientSettings g;
  g.min_rtt_requests = 4;
  g.jitter = 0;
  return g;
}

// Answers `n` requests sent at `sent` with the latency given, at `at`.
void answer(GradientController& c, int n, double sent, double at) {
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(c.admit(sent));
    c.on_answer(at, sent);
  }
}

TEST(AdaptiveConcurrency, StartsByMeasuringMinRttAtTheMinimum) {
  GradientController c(quick(), 1);
  EXPECT_TRUE(c.measuring_min_rtt());
  EXPECT_EQ(c.limit(), 3);  // concurrency_limit_ starts at min_concurrency
  // forwardingDecision: forward while outstanding < limit, else block.
  EXPECT_TRUE(c.admit(0.001));
  EXPECT_TRUE(c.admit(0.001));
  EXPECT_TRUE(c.admit(0.001));
  EXPECT_FALSE(c.admit(0.001));
  EXPECT_EQ(c.blocked(), 1);
  EXPECT_EQ(c.outstanding(), 3);
  for (int i = 0; i < 3; ++i) c.on_answer(0.011, 0.001);  // 10 ms each
  EXPECT_TRUE(c.measuring_min_rtt());                     // 3 of 4 samples
  answer(c, 1, 0.011, 0.021);
  // updateMinRTT: the percentile of the window's samples; the limit goes
  // back to the deferred value (the minimum it started with).
  EXPECT_FALSE(c.measuring_min_rtt());
  EXPECT_NEAR(c.min_rtt_s(), 0.010, 1e-12);
  EXPECT_EQ(c.limit(), 3);
}

TEST(AdaptiveConcurrency, TheLimitFollowsTheGradientWithItsHeadroom) {
  GradientController c(quick(), 1);
  answer(c, 4, 0, 0.010);  // minRTT 10 ms, at 0.010 s; the next update at 0.110 s
  // Latency at minRTT: gradient = min(2, 10 x 1.25 / 10) = 1.25;
  // limit 3 x 1.25 = 3.75, + sqrt(3.75) = 5.69, truncated: 5.
  answer(c, 3, 0.05, 0.06);
  ASSERT_TRUE(c.admit(0.111));  // the update fires first
  EXPECT_EQ(c.limit(), 5);
  c.on_cancel(0.111);
  // Much slower answers: the gradient is clamped at 0.5; 5 x 0.5 = 2.5, + 1.58
  // = 4.08: 4.
  answer(c, 3, 0.15, 0.19);
  c.admit(0.211);
  EXPECT_EQ(c.limit(), 4);
  c.on_cancel(0.211);
  // Fast again: clamped at 2: 4 x 2 = 8, + 2.83: 10.
  answer(c, 3, 0.3, 0.301);
  c.admit(0.311);
  EXPECT_EQ(c.limit(), 10);
  c.on_cancel(0.311);
  // A window without answers leaves the limit as it was.
  c.admit(0.411);
  EXPECT_EQ(c.limit(), 10);
}

TEST(AdaptiveConcurrency, TheLimitStaysWithinItsBounds) {
  GradientSettings g = quick();
  g.max_concurrency = 12;
  GradientController c(g, 1);
  answer(c, 4, 0, 0.010);
  for (double t = 0.02; t < 2; t += 0.1) {
    answer(c, 2, t, t + 0.001);  // ever faster than minRTT: gradient 2
    EXPECT_LE(c.limit(), 12);
  }
  EXPECT_EQ(c.limit(), 12);
}

TEST(AdaptiveConcurrency, MinRttIsMeasuredAgainAfterItsIntervalWithJitter) {
  GradientSettings g = quick();
  g.min_rtt_interval_s = 10;
  g.jitter = 0.15;  // applyJitter: 10 s + (random % 1,500 ms)
  GradientController c(g, 7);
  answer(c, 4, 0, 0.010);
  answer(c, 2, 5, 5.001);
  c.admit(5.05);
  const int before = c.limit();
  ASSERT_GT(before, 3);
  c.on_cancel(5.05);
  c.admit(11.6);  // by 11.51 s a new window has begun
  EXPECT_TRUE(c.measuring_min_rtt());
  EXPECT_EQ(c.limit(), 3);
  // Answers to requests sent before the window began are not samples.
  c.on_answer(11.7, 9.0);
  answer(c, 3, 11.7, 11.72);
  EXPECT_TRUE(c.measuring_min_rtt());
  answer(c, 1, 11.7, 11.72);
  EXPECT_FALSE(c.measuring_min_rtt());
  EXPECT_NEAR(c.min_rtt_s(), 0.02, 1e-9);
}

TEST(AdaptiveConcurrency, FiveUpdatesInARowAtTheMinimumMeasureMinRttAgain) {
  GradientController c(quick(), 1);
  answer(c, 4, 0, 0.010);
  // Answers ten times slower than minRTT keep the limit at 3: 3 x 0.5 = 1.5
  // + 1.22 = 2, clamped to 3.
  double t = 0.011;
  for (int window = 0; window < 5 && !c.measuring_min_rtt(); ++window, t += 0.1)
    answer(c, 1, t, t + 0.1);
  c.admit(t + 0.1);
  EXPECT_TRUE(c.measuring_min_rtt());
}

// updateMinRTT restores the deferred limit before it clears it
// (updateConcurrencyLimit(deferred_limit_value_.load()), then
// deferred_limit_value_.store(0)): the restore is inside the window and is
// no update at the minimum, so it takes five updates after it, not four.
TEST(AdaptiveConcurrency, TheRestoreAfterMinRttIsNoUpdateAtTheMinimum) {
  GradientController c(quick(), 1);
  answer(c, 4, 0, 0.010);  // min RTT measured; the limit restored to 3, the minimum
  double t = 0.011;
  int windows = 0;
  for (; windows < 10 && !c.measuring_min_rtt(); ++windows, t += 0.1) {
    answer(c, 1, t, t + 0.1);
    c.admit(t + 0.1);
    c.on_cancel(t + 0.1);
  }
  // The first window of the loop holds no sample (its answer comes after
  // the update), so five updates at the minimum take six windows; counting
  // the restore as one, as before, took five.
  EXPECT_TRUE(c.measuring_min_rtt());
  EXPECT_EQ(windows, 6);
}

Metrics run_with(const char* preset, std::map<std::string, std::string> sets) {
  sets["engine"] = "agent";
  return compute_metrics(run_engine(testing::preset(preset, sets)));
}

// order-status at 80% load loses 60% of its capacity for 20 s: the queue
// fills with attempts whose callers gave up and stays that way. The filter
// keeps the work in flight near what the server turns round in minRTT, and
// answers the rest 503 at once: no attempt waits out its timeout.
TEST(AdaptiveConcurrency, RescuesTheCollapsingOrderStatus) {
  const Metrics stuck = run_with("order-status", {});
  ASSERT_FALSE(stuck.recovered);
  const Metrics with = run_with("order-status", {{"server.adaptive_concurrency", "envoy"}});
  EXPECT_TRUE(with.recovered);
  EXPECT_LT(with.failed_fraction, 0.05);
  EXPECT_GT(stuck.failed_fraction, 0.6);
  EXPECT_LT(with.wasted_fraction, 0.01);
}

// A healthy service whose answers take a second (100 slots, 80 requests a
// second in flight): the filter starts at 3 and holds 3 until 50 answers
// are in, 17 s at a second each, answering everything else 503; requests
// that would all have succeeded fail. Envoy's defaults fit fast services.
TEST(AdaptiveConcurrency, HurtsAHealthyServiceWhoseAnswersAreSlow) {
  std::map<std::string, std::string> healthy = {
      {"server.slots", "100"}, {"incident.duration_s", "0"}, {"client.retries", "0"}};
  EXPECT_EQ(run_with("order-status", healthy).failed_fraction, 0);
  healthy["server.adaptive_concurrency"] = "envoy";
  EXPECT_GT(run_with("order-status", healthy).failed_fraction, 0.1);
}

// examples/adaptive-concurrency.yaml's ladder: the filter does better than
// every other single defense on this incident, and fails a quarter of the
// requests of a healthy service whose answers take a second.
TEST(AdaptiveConcurrency, TheExampleLadder) {
  Scenario s = scenario_from_text(
      testing::read_all(std::string(RETRYSTORM_SOURCE_DIR) + "/examples/adaptive-concurrency.yaml"),
      "adaptive-concurrency.yaml");
  validate(s);
  std::map<std::string, Metrics> row;
  for (const LadderResult& r : run_ladder(s)) row[r.row.name] = r.metrics;
  ASSERT_EQ(row.size(), 9u);
  EXPECT_FALSE(row["As it stands"].recovered);
  EXPECT_TRUE(row["Adaptive concurrency (Envoy)"].recovered);
  EXPECT_TRUE(row["Breaker (Polly)"].recovered);
  // Envoy's filter and Gradient2 fail fewer requests than any defense that
  // is not a concurrency limit. Vegas reads the spread of exponential
  // answers as queueing and refuses about a fifth of the attempts even when
  // all is well (retries carry most of them): it fails more than shedding
  // or Polly's breaker, fewer than opossum's or throttling.
  for (const char* limit : {"Adaptive concurrency (Envoy)", "Gradient2 (Netflix)"})
    for (const char* other : {"As it stands", "Shed abandoned work", "Breaker (opossum)",
                              "Breaker (Polly)", "Adaptive throttling"})
      EXPECT_LT(row[limit].failed_fraction, row[other].failed_fraction) << limit << " " << other;
  const Metrics& vegas = row["Vegas (Netflix)"];
  for (const char* other : {"As it stands", "Breaker (opossum)", "Adaptive throttling"})
    EXPECT_LT(vegas.failed_fraction, row[other].failed_fraction) << other;
  EXPECT_GT(vegas.failed_fraction, row["Shed abandoned work"].failed_fraction);
  EXPECT_GT(row["Filter, slow healthy service"].failed_fraction, 0.15);
}

// Envoy's own configuration: the filter's gradient_controller_config (the
// v3 AdaptiveConcurrency proto's fields) and the cluster's max_requests
// become the keys, each naming its line; they need the agent engine, which
// the import sets.
TEST(AdaptiveConcurrency, ImportedFromAnEnvoyConfig) {
  using namespace configs::testing;
  const configs::ImportResult r =
      configs::import_configs({fixture("envoy/adaptive-concurrency.yaml")});
  EXPECT_EQ(str(r, "server.adaptive_concurrency"), "envoy");
  EXPECT_EQ(num(r, "server.concurrency_update_s"), 0.2);
  EXPECT_EQ(num(r, "server.max_concurrency"), 500);
  EXPECT_EQ(num(r, "server.concurrency_percentile"), 0.9);
  EXPECT_EQ(num(r, "server.min_rtt_interval_s"), 30);
  EXPECT_EQ(num(r, "server.min_rtt_requests"), 20);
  EXPECT_EQ(num(r, "server.min_rtt_jitter"), 0.1);
  EXPECT_EQ(num(r, "server.min_rtt_buffer"), 0.5);
  EXPECT_EQ(num(r, "server.min_concurrency"), 5);
  EXPECT_EQ(num(r, "client.max_requests"), 64);
  // max_pending_requests without max_connections: Envoy's 1,024 connections.
  EXPECT_EQ(num(r, "client.max_pending_requests"), 32);
  EXPECT_EQ(num(r, "client.max_connections"), 1024);
  EXPECT_EQ(str(r, "engine"), "agent");
  for (const auto& k : r.keys) {
    if (k.path == "server.min_rtt_requests") {
      EXPECT_NE(k.from.find(".yaml:22:"), std::string::npos) << k.from;
    }
  }
  // The keys run: the imported scenario validates and runs on the agent engine.
  Scenario s = testing::preset("order-status");
  configs::apply_keys(s, r.keys);
  validate(s);
  EXPECT_GT(compute_metrics(run_engine(s)).failed_fraction, -1);
}

// A cluster's HTTP/1 pool thresholds become the client's connection pool,
// each naming its line; a cluster that may speak HTTP/2 (many attempts on
// one connection) keeps them as a note instead.
TEST(AdaptiveConcurrency, ImportsTheConnectionPoolOfAnHttp1ClusterOnly) {
  using namespace configs::testing;
  const std::string cluster = envoy_pool_cluster(4, 8);
  const configs::ImportResult r = configs::import_configs({{"envoy.yaml", cluster}});
  EXPECT_EQ(num(r, "client.max_connections"), 4);
  EXPECT_EQ(num(r, "client.max_pending_requests"), 8);
  EXPECT_EQ(str(r, "engine"), "agent");
  for (const auto& k : r.keys)
    if (k.path == "client.max_pending_requests") {
      EXPECT_NE(k.from.find("envoy.yaml:7:"), std::string::npos) << k.from;
    }
  const configs::ImportResult h2 =
      configs::import_configs({{"envoy.yaml", cluster + "    http2_protocol_options: {}\n"}});
  for (const auto& k : h2.keys) EXPECT_NE(k.path, "client.max_connections");
  std::string notes;
  for (const auto& layer : h2.layers)
    for (const auto& n : layer.notes) notes += n + "\n";
  EXPECT_NE(notes.find("may speak HTTP/2"), std::string::npos) << notes;
}

// The export writes the bulkheads into the cluster's DEFAULT threshold, and
// the import reads them back.
TEST(AdaptiveConcurrency, TheBulkheadsRoundTripThroughAnEnvoyCluster) {
  using namespace configs::testing;
  Scenario s = testing::preset("order-status", {{"engine", "agent"},
                                                {"client.max_requests", "50"},
                                                {"client.max_connections", "4"},
                                                {"client.max_pending_requests", "8"}});
  const configs::ExportResult e = configs::export_config(s, "envoy");
  const configs::ImportResult r = configs::import_configs({{"envoy.yaml", e.text}});
  EXPECT_EQ(num(r, "client.max_requests"), 50);
  EXPECT_EQ(num(r, "client.max_connections"), 4);
  EXPECT_EQ(num(r, "client.max_pending_requests"), 8);
}

TEST(AdaptiveConcurrency, OtherEnginesAndGraphsRefuseItByName) {
  auto refused = [](Scenario s) {
    try {
      validate(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Envoy's filter and Netflix's limits alike (tests/concurrency_limits_test.cpp).
  for (ConcurrencyLimiter kind :
       {ConcurrencyLimiter::envoy, ConcurrencyLimiter::gradient2, ConcurrencyLimiter::vegas}) {
    const std::string name = kConcurrencyLimiterNames[static_cast<int>(kind)];
    Scenario fluid = testing::preset("order-status");
    fluid.server.concurrency.kind = kind;
    EXPECT_NE(
        refused(fluid).find("server.adaptive_concurrency: " + name + " runs with engine=agent"),
        std::string::npos)
        << refused(fluid);
    Scenario graph = testing::preset("three-tier-chain", {{"engine", "agent"}});
    graph.server.concurrency.kind = kind;
    EXPECT_NE(refused(graph).find("server.adaptive_concurrency at service"), std::string::npos)
        << name;
  }
}

}  // namespace
}  // namespace retrystorm
