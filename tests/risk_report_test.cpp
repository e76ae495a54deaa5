// What `risk` writes (docs/risk.md, docs/cli.md): the runs' incidents in
// words, and the exact chain's figures beside the estimates.
#include "formats/risk_report.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/markov/splitting.hpp"
#include "analysis/risk.hpp"
#include "preset_scenario.hpp"
#include "quick_risk.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

Scenario small_server(std::map<std::string, std::string> sets) {
  auto keys = testing::random_server_keys();
  keys["server.queue_limit"] = "10";
  keys["horizon_s"] = "120";
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

TEST(RiskReport, TheChainsMixingIsWrittenAsMetaforCountsIt) {
  RiskOptions o = testing::quick_risk({0.8}, 4);
  o.exact = true;
  const RiskResult r = assess_risk(small_server({}), o);
  ASSERT_TRUE(r.levels[0].exact);
  const nlohmann::json answer = risk_json(r);
  const nlohmann::json& exact = answer["levels"][0]["exact"];
  EXPECT_NEAR(exact["mixing_metafor_s"].get<double>(),
              std::log2(100.0) * exact["relaxation_s"].get<double>(), 1e-9);
  EXPECT_NE(risk_text(r).find("(mixing, as metafor counts it: "), std::string::npos);
}

// The chain is a queue with one retrying client: a scenario with a defense
// it does not model gets no chain figures (they were printed unchanged, as
// if the defense were not there), and the note names the defense.
TEST(RiskReport, TheChainIsLeftOutWhereTheScenarioHasMoreThanIt) {
  std::string why;
  ASSERT_TRUE(chain_params(small_server({}), 1.0, why)) << why;
  const std::map<std::string, std::string> beyond[] = {
      {{"server.adaptive_concurrency", "envoy"}},
      {{"client.deadline_s", "2"}},
      {{"server.shed_abandoned", "true"}},
      {{"client.budget.kind", "token_bucket"}},
      {{"server.discipline", "lifo"}},
      {{"client.layers", "2"}},
  };
  for (const auto& sets : beyond) {
    EXPECT_FALSE(chain_params(small_server(sets), 1.0, why)) << sets.begin()->first;
    EXPECT_NE(why.find("is not in the chain"), std::string::npos) << why;
  }
  EXPECT_FALSE(chain_params(small_server({{"client.retry_on", "none"}}), 1.0, why));
  EXPECT_NE(why.find("client.retry_on"), std::string::npos) << why;
  // The layer's retries and timeout as its policy reads them (a stack of one
  // layer, a timeout per layer), not client.retries and client.timeout_s.
  const auto stack = chain_params(
      small_server({{"client.stack_retries", "0"}, {"client.layer_timeouts_s", "1"}}), 1.0, why);
  ASSERT_TRUE(stack) << why;
  EXPECT_EQ(stack->retries, 0);
  EXPECT_EQ(stack->timeout_s, 1);
}

// A chain that never reaches the stuck mode has no stay in it to leave:
// "none", and null in JSON (it said "0 s").
TEST(RiskReport, AChainNeverStuckHasNoTimeToLeave) {
  RiskOptions o = testing::quick_risk({0.8}, 2);
  o.exact = true;
  const RiskResult r = assess_risk(small_server({{"server.queue_limit", "5"}}), o);
  ASSERT_TRUE(r.levels[0].exact);
  ASSERT_EQ(r.levels[0].exact->bad_share, 0);
  EXPECT_TRUE(risk_json(r)["levels"][0]["exact"]["leave_s"].is_null());
  EXPECT_NE(risk_text(r).find("from stuck to empty none (never stuck)"), std::string::npos);
}

// An interval too small for a percentage is written in powers of ten: "0 of
// 100000 (0% to 0%)" hid a high end of 3.8e-05.
TEST(RiskReport, ATinyIntervalKeepsItsHighEnd) {
  RiskOptions o = testing::quick_risk({1.0}, 20000);
  o.horizon_s = 1;
  const RiskResult r = assess_risk(small_server({{"demand.rate_per_s", "0.01"}}), o);
  ASSERT_EQ(r.levels[0].enter.events, 0);
  const std::string text = risk_text(r);
  EXPECT_EQ(text.find("0% to 0%"), std::string::npos) << text;
  EXPECT_NE(text.find("0 of 20000 (0% to 0.00019)"), std::string::npos) << text;
}

TEST(RiskReport, IncidentsAtRandomAreSaidWithTheirRateAndSize) {
  const RiskResult r = assess_risk(small_server({{"incident.random_per_h", "6"},
                                                 {"incident.duration_s", "20"},
                                                 {"incident.capacity_factor", "0.3"}}),
                                   testing::quick_risk({0.5}, 4));
  const std::string text = risk_text(r);
  EXPECT_NE(text.find("starting empty, with incidents at random: 6 per hour on average, each 20 s "
                      "at 0.3x capacity and 1x demand"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("incident.duration_s=0"), std::string::npos) << "a replay keeps them";
  EXPECT_EQ(text.find("stuck when the incident ended"), std::string::npos);
  // `run` replays such a run as its series: its report measures recovery
  // from one incident and refuses incidents at random.
  if (r.levels[0].tipped_seed) {
    EXPECT_NE(text.find(" --format csv\n"), std::string::npos) << text;
  }
}

// A knob that moves the stuck rule (client.timeout_s: one timeout of work)
// gets a rule per value; the text described the first value's for all.
TEST(RiskReport, AMapSaysEachValuesRuleWhenTheyDiffer) {
  RiskOptions o = testing::quick_risk({1.0}, 2);
  const RiskMap map =
      assess_risk_map(small_server({}), SweepAxis("client.timeout_s", 0, 0, 1, {1, 2}), o);
  const std::string text = risk_map_text(map);
  EXPECT_NE(text.find("at client.timeout_s 1: stuck: more than"), std::string::npos) << text;
  EXPECT_NE(text.find("at client.timeout_s 2: stuck: more than"), std::string::npos) << text;
  const RiskMap same =
      assess_risk_map(small_server({}), SweepAxis("client.retries", 0, 0, 1, {0, 2}), o);
  EXPECT_EQ(risk_map_text(same).find("at client.retries"), std::string::npos);
}

// Splitting's chance is a chance: its interval stops at 100% (a few
// spread-out replicas gave 0% to 184.7%), and a chance of 1 bounds the mean
// wait by nothing above 0.
TEST(RiskReport, SplittingsIntervalStaysWithinAChance) {
  const markov::RareEstimate e = markov::combine_replicas({1.0, 0.0, 0.9}, {{}, {}, {}});
  EXPECT_LE(e.high, 1.0);
  EXPECT_GT(e.high, e.p);
  EXPECT_EQ(waiting_time_from_chance(e.p, e.low, 1.0, 120).low_s, 0);
}

}  // namespace
}  // namespace retrystorm
