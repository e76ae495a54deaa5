// Every number the two published explorers show, as fluid-model.md lists
// them under "Presets and what they must show".
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "analysis/tipping.hpp"
#include "engines/fluid.hpp"
#include "formats/scenario_io.hpp"

namespace retrystorm {
namespace {

Scenario preset(const std::string& name) {
  return preset_or_throw(name).scenario;
}

Metrics metrics_of(const Scenario& s) {
  validate(s);
  return compute_metrics(run_fluid(s));
}

Metrics order_status_with(const std::string& path, const KeyValue& v) {
  Scenario s = preset("order-status");
  set_key(s, path, v);
  return metrics_of(s);
}

double one_decimal_percent(double fraction) {
  return std::round(fraction * 1000) / 10;
}

// order-status: recovery means goodput_recovery_s.
TEST(OrderStatus, DefaultsNeverRecoverAndTheServerStaysBusyWithWaste) {
  Metrics m = metrics_of(preset("order-status"));
  EXPECT_FALSE(m.goodput_recovery_s.has_value());
  EXPECT_EQ(m.last_window.seconds, 60);
  EXPECT_EQ(m.last_window.goodput_per_s, 0);
  EXPECT_DOUBLE_EQ(m.last_window.utilization, 1.0);
  EXPECT_DOUBLE_EQ(m.last_window.attempts_per_request, 4.0);
}

TEST(OrderStatus, ElevenSecondIncidentRecoversTwelveDoesNot) {
  EXPECT_TRUE(order_status_with("incident.duration_s", 11.0).goodput_recovery_s.has_value());
  EXPECT_FALSE(order_status_with("incident.duration_s", 12.0).goodput_recovery_s.has_value());
}

TEST(OrderStatus, NoRetriesRecoversIn19Seconds) {
  EXPECT_EQ(order_status_with("client.retries", 0.0).goodput_recovery_s, 19.0);
}

TEST(OrderStatus, BackoffBase8SecondsStillDoesNotRecover) {
  EXPECT_FALSE(order_status_with("client.backoff.base_s", 8.0).goodput_recovery_s.has_value());
}

TEST(OrderStatus, TenPercentTokenBucketRecoversIn40Seconds) {
  Scenario s = preset("order-status");
  s.client.budget.kind = BudgetKind::token_bucket;
  s.client.budget.ratio = 0.1;
  EXPECT_EQ(metrics_of(s).goodput_recovery_s, 40.0);
}

TEST(OrderStatus, SheddingAbandonedWorkRecoversAtOnce) {
  EXPECT_EQ(order_status_with("server.shed_abandoned", true).goodput_recovery_s, 0.0);
}

TEST(OrderStatus, QueueLimit300RecoversInAboutASecond) {
  auto r = order_status_with("server.queue_limit", 300.0).goodput_recovery_s;
  ASSERT_TRUE(r.has_value());
  EXPECT_LE(*r, 1.0);
}

TEST(OrderStatus, Timeout15SecondsNeverCollapses) {
  Metrics m = order_status_with("client.timeout_s", 15.0);
  EXPECT_EQ(m.goodput_recovery_s, 0.0);
  EXPECT_EQ(m.failed, 0);
  EXPECT_EQ(m.served_late, 0);
}

TEST(OrderStatus, LowerDemandOrMoreCapacityAbsorbsTheTrigger) {
  for (auto [path, value] :
       {std::pair{"demand.rate_per_s", 50.0}, std::pair{"server.capacity_per_s", 150.0}}) {
    Metrics m = order_status_with(path, value);
    EXPECT_EQ(m.goodput_recovery_s, 0.0) << path;
    EXPECT_EQ(m.failed, 0) << path;
  }
}

TEST(OrderStatus, AmountsStayWholeNumbers) {
  RunResult r = run_fluid(preset("order-status"));
  for (const auto* series : {&r.series.goodput, &r.series.retries, &r.series.backlog,
                             &r.series.failed, &r.series.served_late})
    for (double v : *series) EXPECT_EQ(v, std::round(v));
}

TEST(OrderStatus, TippingPointIs12SecondsOnA1SecondGrid) {
  TippingResult t = tipping_point(preset("order-status"), 1.0);
  EXPECT_EQ(t.on_grid_s, 12.0);
  EXPECT_EQ(t.exact_s, 12.0);
}

TEST(OrderStatus, LadderRowsAreSingleChangesWithThePublishedOutcomes) {
  auto rows = run_ladder(preset("order-status"));
  ASSERT_EQ(rows.size(), 11u);
  std::map<std::string, std::optional<double>> recovery;
  for (const auto& r : rows) recovery[r.row.name] = r.metrics.goodput_recovery_s;
  EXPECT_FALSE(recovery["Defaults"].has_value());
  EXPECT_TRUE(recovery["Incident 11 s"].has_value());
  EXPECT_FALSE(recovery["Incident 12 s"].has_value());
  EXPECT_EQ(recovery["No retries"], 19.0);
  EXPECT_FALSE(recovery["Backoff base 8 s"].has_value());
  EXPECT_EQ(recovery["10% retry budget"], 40.0);
  EXPECT_EQ(recovery["Shed abandoned work"], 0.0);
  EXPECT_LE(recovery["Queue limit 300"].value_or(99), 1.0);
  EXPECT_EQ(recovery["Timeout 15 s"], 0.0);
  EXPECT_EQ(recovery["Demand 50/s"], 0.0);
  EXPECT_EQ(recovery["Capacity 150/s"], 0.0);
}

// primary-failover: "recovered +X s" means failure_recovery_s.
TEST(PrimaryFailover, CurrentPolicyFails64170Of72000AndWastes94Percent) {
  Metrics m = metrics_of(preset("primary-failover"));
  EXPECT_DOUBLE_EQ(m.user_requests, 72000);
  EXPECT_NEAR(m.failed, 64170, 1e-6);
  EXPECT_EQ(one_decimal_percent(m.failed_fraction), 89.1);
  EXPECT_EQ(one_decimal_percent(m.wasted_fraction), 94.1);
  EXPECT_FALSE(m.failure_recovery_s.has_value());
  EXPECT_TRUE(m.backlog_growing);
  EXPECT_DOUBLE_EQ(m.peak_amplification, 3.0);
}

TEST(PrimaryFailover, ModelBoundIs3xAnd33Point3PercentLoad) {
  Metrics m = metrics_of(preset("primary-failover"));
  EXPECT_EQ(m.bound.max_amplification, 3);
  EXPECT_EQ(one_decimal_percent(m.bound.safe_load_below), 33.3);
  EXPECT_DOUBLE_EQ(m.bound.max_amplification * m.bound.load, 1.8);  // 180% of capacity
}

struct PublishedRow {
  const char* name;
  std::optional<double> recovered_s;
  double failed_percent;
  double peak;
};

TEST(PrimaryFailover, DefenseLadderMatchesEveryPublishedRow) {
  const PublishedRow published[] = {
      {"No retries", 21.05, 29.2, 1},
      {"Immediate retries", std::nullopt, 89.2, 3},
      {"+ Backoff with jitter", std::nullopt, 89.1, 3},
      {"+ 10% retry budget", 28.65, 35.5, 2},
      {"+ Shed abandoned work", 0.1, 11.7, 2},
  };
  auto rows = run_ladder(preset("primary-failover"));
  ASSERT_EQ(rows.size(), std::size(published));
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& m = rows[i].metrics;
    SCOPED_TRACE(published[i].name);
    EXPECT_EQ(rows[i].row.name, published[i].name);
    ASSERT_EQ(m.failure_recovery_s.has_value(), published[i].recovered_s.has_value());
    if (published[i].recovered_s) {
      EXPECT_NEAR(*m.failure_recovery_s, *published[i].recovered_s, 1e-9);
    }
    EXPECT_EQ(one_decimal_percent(m.failed_fraction), published[i].failed_percent);
    EXPECT_NEAR(m.peak_amplification, published[i].peak, 1e-9);
  }
  EXPECT_NEAR(rows[2].metrics.failed, 64170, 1e-6);
}

TEST(PrimaryFailover, TippingPointIs1Point5SecondsOnAHalfSecondGrid) {
  TippingResult t = tipping_point(preset("primary-failover"), 0.5);
  EXPECT_EQ(t.on_grid_s, 1.5);
  ASSERT_TRUE(t.exact_s.has_value());
  EXPECT_GT(*t.exact_s, 1.0);
  EXPECT_LE(*t.exact_s, 1.5);
  // Exact means to one step: one step shorter recovers.
  EXPECT_TRUE(recovers_with_duration(preset("primary-failover"), *t.exact_s - 0.05));
  EXPECT_FALSE(recovers_with_duration(preset("primary-failover"), *t.exact_s));
}

class BudgetAmplification : public ::testing::TestWithParam<int> {};

TEST_P(BudgetAmplification, TenPercentWindowBudgetHoldsNear1Point1x) {
  Scenario s = preset("primary-failover");
  s.client.retries = GetParam() - 1;
  s.client.budget = {BudgetKind::window, 0.1, 10};
  s.incident.duration_s = s.horizon_s - s.incident.start_s;  // to the end of the run
  double apr = attempts_per_request(run_fluid(s), 40, 120);
  EXPECT_EQ(std::round(apr * 10) / 10, 1.1) << apr;
}

INSTANTIATE_TEST_SUITE_P(Attempts, BudgetAmplification, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace retrystorm
