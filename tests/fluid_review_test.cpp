// Regressions from a review of the fluid model's reports: the tipping point
// with an incident that starts between step boundaries, the last window on
// steps that do not divide 60 s, recovery counted from the incident's end
// instant, ladder rows after --set, and the generic ladder's uncapped backoff.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"
#include "analysis/tipping.hpp"
#include "engines/engine.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "formats/text_report.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

using testing::preset;

// order-status in 7 s steps: 60 s is not whole steps, nor is the incident's start.
Scenario seven_second_steps(std::map<std::string, std::string> more = {}) {
  more.insert({{"step_s", "7"}, {"horizon_s", "700"}, {"client.timeout_s", "7"}});
  return preset("order-status", more);
}

TEST(FluidReview, TippingExactIsNeverAboveTheGridsAnswer) {
  // From 60.5 s in 1 s steps: 11.6 s covers the steps 61 to 72, as 12 s does.
  Scenario s = preset("order-status", {{"incident.start_s", "60.5"}});
  TippingResult fine = tipping_point(s, 0.4);
  ASSERT_TRUE(fine.on_grid_s && fine.exact_s);
  EXPECT_NEAR(*fine.on_grid_s, 11.6, 1e-9);
  EXPECT_EQ(*fine.exact_s, *fine.on_grid_s);
  EXPECT_FALSE(recovers_with_duration(s, *fine.exact_s));
  EXPECT_TRUE(recovers_with_duration(s, *fine.exact_s - s.step_s));

  // In 7 s steps from 60 s: 18 s covers 63, 70 and 77 s and does not recover.
  Scenario seven = seven_second_steps();
  TippingResult t = tipping_point(seven, 1);
  ASSERT_TRUE(t.on_grid_s && t.exact_s);
  EXPECT_EQ(*t.on_grid_s, 18.0);
  EXPECT_LE(*t.exact_s, *t.on_grid_s);
  EXPECT_FALSE(recovers_with_duration(seven, *t.exact_s));
  EXPECT_TRUE(recovers_with_duration(seven, *t.exact_s - seven.step_s));
}

TEST(FluidReview, TippingExactIsTheStepsFoundWhateverTheGrid) {
  // A coarse grid leaves the answer to the bisection: 12 steps (61 to 72 s).
  // 12 s covers them from 60.5 s, the bisection ran it, and it does not
  // recover; 11.5 s covers 11 and recovers. Every grid coarser than the
  // answer gives the same value.
  Scenario s = preset("order-status", {{"incident.start_s", "60.5"}});
  for (double grid : {1.0, 2.0, 3.0, 5.0}) {
    TippingResult t = tipping_point(s, grid);
    ASSERT_TRUE(t.on_grid_s && t.exact_s) << grid;
    EXPECT_EQ(*t.exact_s, 12.0) << grid;
    EXPECT_LE(*t.exact_s, *t.on_grid_s) << grid;
  }
  EXPECT_FALSE(recovers_with_duration(s, 12));
  EXPECT_TRUE(recovers_with_duration(s, 11.5));
  // On step boundaries the answer is whole steps, as published.
  EXPECT_EQ(tipping_point(preset("order-status"), 5).exact_s, 12.0);
}

TEST(FluidReview, LastWindowIsWholeStepsOverTheirOwnLength) {
  // 60 s is 8.6 steps of 7 s: the last 9 steps, 63 s, and a flat 80/s reads 80/s.
  Scenario s = seven_second_steps({{"incident.duration_s", "0"}});
  RunResult run = run_engine(s);
  Metrics m = compute_metrics(run);
  EXPECT_EQ(m.last_window.seconds, 63.0);
  EXPECT_NEAR(m.last_window.goodput_per_s, 80, 1e-9);
  EXPECT_NEAR(m.last_window.utilization, 0.8, 1e-9);
  EXPECT_NEAR(m.last_window.attempts_per_request, 1, 1e-12);
  // Every figure over the same steps, in a storm too.
  Scenario storm = seven_second_steps({{"incident.duration_s", "60"}});
  RunResult stuck = run_engine(storm);
  Metrics ms = compute_metrics(stuck);
  EXPECT_EQ(ms.last_window.seconds, 63.0);
  EXPECT_DOUBLE_EQ(ms.last_window.attempts_per_request,
                   attempts_per_request(stuck, storm.horizon_s - 63, storm.horizon_s));
  double goodput = 0;
  for (size_t i = stuck.series.size() - 9; i < stuck.series.size(); ++i)
    goodput += stuck.series.goodput[i];
  EXPECT_NEAR(ms.last_window.goodput_per_s, goodput / 63, 1e-9);
  // Whole steps of 60 s keep the published window.
  EXPECT_EQ(compute_metrics(run_engine(preset("order-status"))).last_window.seconds, 60.0);
  EXPECT_EQ(compute_metrics(run_engine(preset("primary-failover"))).last_window.seconds, 60.0);
}

TEST(FluidReview, AnIncidentOfNoLengthIsAbsorbed) {
  Scenario s = seven_second_steps({{"incident.duration_s", "0"}});
  RunResult run = run_engine(s);
  Metrics m = compute_metrics(run);
  EXPECT_EQ(m.goodput_recovery_s, 0.0);  // was 3 s: from 63 s, the next step's start
  Verdict v = verdict(run, m);
  EXPECT_EQ(v.headline.rfind("Absorbed:", 0), 0u) << v.headline;
}

TEST(FluidReview, RecoveryCountsFromTheIncidentsEndInstant) {
  // Absorbed (capacity 1000/s at 40% is 400/s for 80/s), ending at 80.5 s inside step 80.
  Scenario s =
      preset("order-status", {{"server.capacity_per_s", "1000"}, {"incident.duration_s", "20.5"}});
  RunResult run = run_engine(s);
  Metrics m = compute_metrics(run);
  EXPECT_EQ(m.goodput_recovery_s, 0.0);
  EXPECT_EQ(verdict(run, m).headline.rfind("Absorbed:", 0), 0u);
  // A real recovery: from the end instant to the start of a step.
  Scenario slow = preset("order-status", {{"client.retries", "0"}, {"incident.start_s", "60.5"}});
  Metrics ms = compute_metrics(run_engine(slow));
  ASSERT_TRUE(ms.goodput_recovery_s.has_value());
  EXPECT_GT(*ms.goodput_recovery_s, 0);
  EXPECT_NEAR(std::remainder(*ms.goodput_recovery_s + slow.incident_end_s(), 1.0), 0, 1e-9);
}

TEST(FluidReview, LadderRowsSayTheirKeysOnceTheScenarioLeftThePreset) {
  Scenario s = preset("primary-failover", {{"client.layers", "2"}});
  std::vector<LadderResult> rows = run_ladder(s);
  std::string text = ladder_text(s, rows);
  EXPECT_EQ(text.find("3 attempts at 1 layer"), std::string::npos) << text;
  EXPECT_NE(text.find("its own description no longer applies"), std::string::npos) << text;
  nlohmann::json j = ladder_json(rows);
  ASSERT_EQ(j["rows"].size(), rows.size());
  for (const auto& row : j["rows"]) {
    std::string change = row["change"];
    EXPECT_NE(change.find("client.layers = 2"), std::string::npos) << change;
    EXPECT_NE(text.find(change), std::string::npos) << change;  // one rule for both
  }
  // The incident's length: the rows that set it again run with their own
  // and keep their words; the others say the scenario's 30 s.
  Scenario longer = preset("order-status", {{"incident.duration_s", "30"}});
  std::vector<LadderResult> order_rows = run_ladder(longer);
  nlohmann::json jl = ladder_json(order_rows);
  for (size_t i = 0; i < order_rows.size(); ++i) {
    const std::string change = jl["rows"][i]["change"];
    if (order_rows[i].scenario.incident.duration_s == 30)
      EXPECT_NE(change.find("incident.duration_s = 30"), std::string::npos) << change;
    else
      EXPECT_EQ(change, order_rows[i].row.change) << change;
  }
  // The preset as it is keeps its own words.
  std::vector<LadderResult> own = run_ladder(preset("primary-failover"));
  nlohmann::json jo = ladder_json(own);
  for (size_t i = 0; i < own.size(); ++i) EXPECT_EQ(jo["rows"][i]["change"], own[i].row.change);
}

// Each row against its own scenario: rows that set the changed key again
// keep their words; only the row that runs with it says so.
TEST(FluidReview, LadderRowsSayOnlyTheKeysTheirOwnRunHas) {
  Scenario s = preset("primary-failover", {{"client.backoff.base_s", "0.5"}});
  std::vector<LadderResult> rows = run_ladder(s);
  nlohmann::json j = ladder_json(rows);
  size_t noted = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string change = j["rows"][i]["change"];
    const bool runs_with_it = rows[i].scenario.client.backoff.base_s == 0.5;
    if (runs_with_it) {
      ++noted;
      EXPECT_NE(change.find("client.backoff.base_s = 0.5"), std::string::npos) << change;
    } else {
      EXPECT_EQ(change, rows[i].row.change) << i;
    }
  }
  EXPECT_GE(noted, 1u);
  EXPECT_LT(noted, rows.size());
}

// Only an incident of no length that nothing followed is absorbed: a
// capacity profile's own dip after it still has its recovery told.
TEST(FluidReview, ARecoveryAfterAnIncidentOfNoLengthIsStillTold) {
  Scenario s = preset("order-status", {{"incident.duration_s", "0"},
                                       {"client.retries", "0"},
                                       {"server.capacity_profile", "0:1,100:0.3,130:1"}});
  RunResult run = run_engine(s);
  Metrics m = compute_metrics(run);
  const std::optional<double> rec = recovery_time(m, s);
  ASSERT_TRUE(rec.has_value());
  ASSERT_GT(*rec, 0);
  EXPECT_EQ(verdict(run, m).headline.find("an incident of no length"), std::string::npos);
}

TEST(FluidReview, GenericLadderSaysNoCapForAnUncappedBackoff) {
  // order-status backs off from 1 s with no cap (cap_s 0); jittered, the ladder keeps it.
  Scenario s = preset("order-status", {{"client.backoff.jitter", "full"}});
  ASSERT_EQ(s.client.backoff.cap_s, 0);
  Ladder l = generic_ladder(s);
  const std::string& change = l.rows.at(2).change;
  EXPECT_NE(change.find("no cap"), std::string::npos) << change;
  EXPECT_EQ(change.find("capped at"), std::string::npos) << change;
  // A cap is still said.
  Scenario capped =
      preset("order-status", {{"client.backoff.jitter", "full"}, {"client.backoff.cap_s", "4"}});
  EXPECT_NE(generic_ladder(capped).rows.at(2).change.find("capped at 4 s"), std::string::npos);
}

}  // namespace
}  // namespace retrystorm
