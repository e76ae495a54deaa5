// Incidents at random (incident.random_per_h, docs/risk.md, "Incidents at
// random"): the windows drawn from the seed, the engines that meet them, the
// analyses that refuse them and the risk estimates that read them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "analysis/report.hpp"
#include "analysis/risk.hpp"
#include "analysis/tipping.hpp"
#include "engines/engine.hpp"
#include "engines/incident_window.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "quick_risk.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

Scenario random_dips(std::map<std::string, std::string> sets = {}) {
  std::map<std::string, std::string> keys = testing::random_server_keys();
  keys["incident.random_per_h"] = "6";
  keys["incident.duration_s"] = "20";
  keys["incident.capacity_factor"] = "0.3";
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

std::vector<std::pair<int, int>> windows_of(const IncidentWindow& w) {
  std::vector<std::pair<int, int>> all;
  if (w.empty()) return all;
  all.emplace_back(w.first, w.end);
  all.insert(all.end(), w.more.begin(), w.more.end());
  return all;
}

TEST(RandomIncidents, TheWindowsComeFromTheSeedInOrderAndApart) {
  Scenario s = random_dips({{"horizon_s", "36000"}});
  const auto a = windows_of(steps_of(s));
  EXPECT_EQ(a, windows_of(steps_of(s)));
  ASSERT_GT(a.size(), 20u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT(a[i].first, a[i].second);
    EXPECT_LE(a[i].second, s.steps());
    if (i > 0) {
      EXPECT_GT(a[i].first, a[i - 1].second) << "windows that touch are one";
    }
  }
  s.seed = 2;
  EXPECT_NE(a, windows_of(steps_of(s)));
}

TEST(RandomIncidents, ContainsIsMembershipInAnyWindow) {
  const Scenario s = random_dips({{"horizon_s", "7200"}, {"incident.random_per_h", "30"}});
  const IncidentWindow w = steps_of(s);
  const auto all = windows_of(w);
  ASSERT_GT(all.size(), 3u);
  for (int t = 0; t < s.steps(); ++t) {
    bool in = false;
    for (auto [from, to] : all) in = in || (from <= t && t < to);
    ASSERT_EQ(w.contains(t), in) << "step " << t;
  }
}

// Over many seeds the starts are a Poisson process of the rate: 6 per hour
// over 10 hours is 60 on average (windows that merge count once, so a
// little fewer; 20 s windows rarely meet).
TEST(RandomIncidents, TheirNumberFollowsTheRate) {
  Scenario s = random_dips({{"horizon_s", "36000"}});
  double total = 0;
  const int seeds = 200;
  for (int seed = 1; seed <= seeds; ++seed) {
    s.seed = seed;
    total += static_cast<double>(windows_of(steps_of(s)).size());
  }
  const double mean = total / seeds;
  // The mean of 200 Poisson(60) counts has a standard error of 0.55.
  EXPECT_NEAR(mean, 60 * (1 - 20.0 / 600), 2.5);
}

TEST(RandomIncidents, TheAgentEngineDropsCapacityInEveryWindow) {
  const Scenario s = random_dips({{"horizon_s", "7200"}, {"incident.random_per_h", "20"}});
  const RunResult run = run_engine(s);
  const IncidentWindow w = steps_of(s);
  ASSERT_TRUE(w.several());
  for (int t = 0; t < s.steps(); ++t)
    ASSERT_DOUBLE_EQ(run.series.capacity[size_t(t)], w.contains(t) ? 3.0 : 10.0) << "step " << t;
}

TEST(RandomIncidents, TheFluidEngineMeetsThemToo) {
  Scenario s = random_dips({{"horizon_s", "7200"}, {"incident.random_per_h", "20"}});
  s.engine = Engine::fluid;
  const RunResult run = run_engine(s);
  const IncidentWindow w = steps_of(s);
  for (int t = 0; t < s.steps(); ++t)
    ASSERT_DOUBLE_EQ(run.series.capacity[size_t(t)], w.contains(t) ? 3.0 : 10.0) << "step " << t;
}

TEST(RandomIncidents, KeysAreChecked) {
  auto message = [](std::map<std::string, std::string> sets) -> std::string {
    try {
      validate(random_dips(std::move(sets)));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"incident.duration_s", "0"}}).find("incident.random_per_h"),
            std::string::npos);
  // The scripted start does not matter when incidents come at random.
  EXPECT_EQ(message({{"incident.start_s", "5000"}}), "");
  // An incident of no length may start anywhere: there is none.
  Scenario none = testing::preset("order-status", testing::random_server_keys());
  none.incident.start_s = 5000;
  EXPECT_NO_THROW(validate(none));
  Scenario graph = testing::preset("shared-database");
  ASSERT_FALSE(graph.graph.empty());
  graph.incident.random_per_h = 1;
  EXPECT_THROW(validate(graph), InputError);
}

// A run's report, the ladder, the tipping point and the step-down measure
// recovery from one incident's end: they say so and leave random incidents
// to `risk`.
TEST(RandomIncidents, AnalysesOfOneIncidentRefuseThem) {
  const Scenario s = random_dips();
  auto refused = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what()).find("incident.random_per_h") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused([&] { make_report(s); }));
  EXPECT_TRUE(refused([&] { compute_metrics(run_engine(s)); }));
  EXPECT_TRUE(refused([&] { tipping_point(s, 0, {}); }));
  EXPECT_TRUE(refused([&] { run_ladder(s, {}); }));
}

// At half load chance alone never tips the server in 20 minutes; capacity
// dips to 30% for 20 s, 6 an hour, tip it in most runs (each dip fills the
// queue past one timeout of work, and the retries keep it there).
TEST(RandomIncidents, RiskCountsTheTipsTheyCause) {
  const RiskResult calm =
      assess_risk(random_dips({{"incident.random_per_h", "0"}}), testing::quick_risk({0.5}, 20));
  EXPECT_EQ(calm.levels[0].enter_within_horizon.k, 0);
  const RiskResult dips = assess_risk(random_dips(), testing::quick_risk({0.5}, 20));
  EXPECT_GE(dips.levels[0].enter_within_horizon.k, 12);
  EXPECT_TRUE(dips.levels[0].tipped_seed);
  // No scripted push: leaving is timed from the random entries.
  EXPECT_EQ(dips.levels[0].pushed.k, dips.levels[0].enter_within_horizon.k);
  EXPECT_FALSE(scripted_push(dips.scenario));
  EXPECT_EQ(assess_risk(random_dips(),
                        [] {
                          RiskOptions o = testing::quick_risk({0.5}, 8);
                          o.exact = true;
                          return o;
                        }())
                .levels[0]
                .exact_note,
            "incidents at random (incident.random_per_h) are not in the chain");
}

TEST(RandomIncidents, TheSameSeedGivesTheSameRiskOnAnyThreads) {
  testing::expect_same_risk_on_any_threads(random_dips({{"horizon_s", "600"}}), 0.5);
}

TEST(RandomIncidents, SplittingRefusesThem) {
  RiskOptions o = testing::quick_risk({0.5}, 4);
  o.splitting = true;
  EXPECT_THROW(assess_risk(random_dips(), o), InputError);
}

}  // namespace
}  // namespace retrystorm
