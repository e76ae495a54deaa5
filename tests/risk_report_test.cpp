// What `risk` writes (docs/risk.md, docs/cli.md): the runs' incidents in
// words, and the exact chain's figures beside the estimates.
#include "formats/risk_report.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "analysis/markov/splitting.hpp"
#include "analysis/risk.hpp"
#include "preset_scenario.hpp"
#include "quick_risk.hpp"
#include "random_server.hpp"
#include "text/units.hpp"

namespace retrystorm {
namespace {

Scenario small_server(std::map<std::string, std::string> sets) {
  auto keys = testing::random_server_keys();
  keys["server.queue_limit"] = "10";
  keys["horizon_s"] = "120";
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

// A small server: 8 requests/s against 10/s, 10 places,
// a 0.5 s timeout, 2 retries after a jittered 0.2 s backoff, half-second steps.
Scenario small_yaml(std::map<std::string, std::string> sets) {
  std::map<std::string, std::string> keys = {{"engine", "agent"},
                                             {"horizon_s", "60"},
                                             {"step_s", "0.5"},
                                             {"demand.rate_per_s", "8"},
                                             {"demand.process", "poisson"},
                                             {"server.capacity_per_s", "10"},
                                             {"server.service", "exponential"},
                                             {"server.queue_limit", "9"},
                                             {"incident.duration_s", "0"},
                                             {"recovery.criterion", "goodput"},
                                             {"recovery.goodput_fraction", "0.9"},
                                             {"client.timeout_s", "0.5"},
                                             {"client.retries", "2"},
                                             {"client.backoff.base_s", "0.2"},
                                             {"client.backoff.multiplier", "2"},
                                             {"client.backoff.cap_s", "0"},
                                             {"client.backoff.jitter", "full"}};
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

// A report of the given levels on small_server's scenario, as risk_text
// and risk_json write it, without running anything.
RiskResult report_of(std::vector<RiskLevel> levels) {
  RiskResult r;
  r.scenario = small_server({});
  r.rule = stuck_rule(r.scenario);
  r.runs = 10;
  r.levels = std::move(levels);
  return r;
}

// A 10 s spike to four times the demand before `queue` places: at half load
// every run is stuck after it; none is back within 15 min before 100
// places, some are before 50 (tests/risk_test.cpp, "ASpike...").
std::map<std::string, std::string> spike(const std::string& queue) {
  return {{"server.queue_limit", queue},
          {"client.backoff.base_s", "0"},
          {"incident.start_s", "60"},
          {"incident.duration_s", "10"},
          {"incident.capacity_factor", "1"},
          {"incident.demand_factor", "4"},
          {"horizon_s", "900"}};
}

// metafor's server (tests/random_server.hpp) at half load, 20 runs: its
// level as risk_json writes it, with risk_text's report as "text".
nlohmann::json half_load_level(const std::map<std::string, std::string>& sets = {}) {
  auto keys = testing::random_server_keys();
  keys["demand.rate_per_s"] = "5";
  for (const auto& [k, v] : sets) keys[k] = v;
  const RiskResult r =
      assess_risk(testing::preset("order-status", keys), testing::quick_risk({1.0}, 20));
  nlohmann::json level = risk_json(r)["levels"][0];
  level["text"] = risk_text(r);
  return level;
}

// A null time to leave was both "no run was stuck" (no storm) and "none of
// those stuck left by the horizon" (a storm that does not end): "leave"
// tells them apart, and the text says them differently.
TEST(RiskReport, NoStormAndAStormThatDoesNotEndAreToldApart) {
  const nlohmann::json calm = half_load_level(), stuck = half_load_level(spike("100")),
                       back = half_load_level(spike("50"));
  EXPECT_EQ(calm["stuck_to_leave"]["k"], 0);
  EXPECT_TRUE(calm["time_to_leave"]["mean_s"].is_null());
  EXPECT_EQ(calm["leave"], "none");
  EXPECT_EQ(calm["text"].get<std::string>().find("time to leave"), std::string::npos);
  EXPECT_EQ(stuck["stuck_to_leave"]["k"], 20);
  EXPECT_EQ(stuck["left_within_horizon"]["k"], 0);
  EXPECT_TRUE(stuck["time_to_leave"]["mean_s"].is_null());
  EXPECT_EQ(stuck["leave"], "never");
  const std::string never = stuck["text"];
  EXPECT_NE(never.find("of those, healthy again by the end: 0 of 20"), std::string::npos) << never;
  EXPECT_NE(never.find("mean time to leave after the incident: more than"), std::string::npos)
      << never;
  EXPECT_GT(back["left_within_horizon"]["k"], 0);
  EXPECT_TRUE(back["time_to_leave"]["mean_s"].is_number());
  EXPECT_EQ(back["leave"], "measured");
}

// The chain's own: its time to leave is null when it is never stuck and
// when it never empties (AChainNeverStuck..., AStuckChainThatNeverEmpties...).
TEST(RiskReport, TheChainsTimeToLeaveSaysItsCase) {
  auto chain = [](double stuck_share, double leave_s) {
    RiskLevel level;
    level.exact = markov::RetryChainFigures{};
    level.exact->bad_share = stuck_share;
    level.exact->leave_bad_s = leave_s;
    return level;
  };
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  const nlohmann::json levels = risk_json(
      report_of({chain(0, nan), chain(0.2, inf), chain(0.2, 600), chain(0.2, nan)}))["levels"];
  const char* cases[] = {"none", "never", "measured", "unknown"};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(levels[i]["exact"]["leave"], cases[i]) << i;
  EXPECT_TRUE(levels[1]["exact"]["leave_s"].is_null());
  EXPECT_EQ(levels[2]["exact"]["leave_s"], 600);
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
  EXPECT_EQ(risk_json(r)["levels"][0]["exact"]["leave"], "none");
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

// A chain stuck a fifth of the time whose way back to empty is beyond what
// it resolves from some stuck states (retries wait 500 s on average, the
// orbit is nearly always full) leaves "never": states of no weight made the
// mean 0 x infinity, NaN, and it read "none (never stuck)".
TEST(RiskReport, AStuckChainThatNeverEmptiesLeavesNever) {
  RiskOptions o = testing::quick_risk({1.0}, 1);
  o.exact = true;
  const RiskResult r = assess_risk(small_yaml({{"client.backoff.base_s", "1000"}}), o);
  ASSERT_TRUE(r.levels[0].exact) << r.levels[0].exact_note;
  const markov::RetryChainFigures& x = *r.levels[0].exact;
  EXPECT_GT(x.bad_share, 0.1);
  EXPECT_FALSE(std::isnan(x.leave_bad_s));
  const std::string text = risk_text(r);
  EXPECT_EQ(text.find("none (never stuck)"), std::string::npos) << text;
  EXPECT_NE(text.find("from stuck to empty never"), std::string::npos) << text;
  EXPECT_EQ(risk_json(r)["levels"][0]["exact"]["leave"], "never");
  // The orbit's cap is where this chain spends its time: the line says so.
  EXPECT_GT(x.orbit_full_share, 0.5);
  EXPECT_NE(text.find("orbit full " + format_percent(x.orbit_full_share) + " of the time"),
            std::string::npos)
      << text;
}

// λ₂ complex (one retry after 10 ms at twice the capacity): the relaxation
// is 1 / |Re λ₂|, 0.3605 s as a dense eigensolver has it, where the
// iteration's NaN was written "relaxation 0 s".
TEST(RiskReport, AComplexSecondEigenvalueIsNoRelaxationOfZero) {
  RiskOptions o = testing::quick_risk({2.0}, 1);
  o.exact = true;
  const RiskResult r =
      assess_risk(small_yaml({{"client.retries", "1"}, {"client.backoff.base_s", "0.02"}}), o);
  ASSERT_TRUE(r.levels[0].exact) << r.levels[0].exact_note;
  EXPECT_NEAR(r.levels[0].exact->relaxation_s, 0.360481, 1e-5);
  EXPECT_EQ(risk_text(r).find("relaxation 0 s"), std::string::npos) << risk_text(r);
  // Where the figure is not known it says so, and JSON has null.
  RiskLevel level;
  level.exact = markov::RetryChainFigures{};
  level.exact->bad_share = 0.5;
  level.exact->leave_bad_s = 10;
  level.exact->relaxation_s = level.exact->mixing_metafor_s =
      std::numeric_limits<double>::quiet_NaN();
  const RiskResult unknown = report_of({level});
  const std::string text = risk_text(unknown);
  EXPECT_NE(text.find("relaxation unknown (mixing, as metafor counts it: unknown)"),
            std::string::npos)
      << text;
  EXPECT_TRUE(risk_json(unknown)["levels"][0]["exact"]["relaxation_s"].is_null());
}

// Each end of an interval is written by its own value: 1 of 2,000 has a low
// end under 0.1%, which read "0%" beside a high end above it.
TEST(RiskReport, EachEndOfAnIntervalIsWrittenByItsOwnValue) {
  RiskLevel level;
  level.enter_within_horizon = share_of(1, 2000);
  ASSERT_GT(level.enter_within_horizon.low, 0);
  ASSERT_LT(level.enter_within_horizon.low, 0.001);
  ASSERT_GE(level.enter_within_horizon.high, 0.001);
  const std::string text = risk_text(report_of({level}));
  EXPECT_EQ(text.find("1 of 2000 (0% to"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("1 of 2000 ({:.2g} to {})", level.enter_within_horizon.low,
                                  format_percent(level.enter_within_horizon.high))),
            std::string::npos)
      << text;
}

// "and below" only where every lower load comes back too: 0.7 qualifies,
// 0.5 below it does not.
TEST(RiskReport, TheRecoveryLoadIsNotSaidForLoadsBelowThatDoNotQualify) {
  auto level = [](double load, int stuck, int left) {
    RiskLevel l;
    l.load = load;
    l.enter_within_horizon = share_of(0, 10);
    l.pushed = share_of(stuck, 10);
    l.leave_within_horizon = share_of(left, stuck);
    return l;
  };
  const std::string gap =
      risk_text(report_of({level(0.5, 10, 2), level(0.7, 10, 8), level(0.9, 10, 0)}));
  EXPECT_EQ(gap.find("and below"), std::string::npos) << gap;
  EXPECT_NE(gap.find("healthy again within the horizon at load 0.7, though not at every load "
                     "below it"),
            std::string::npos)
      << gap;
  const std::string down =
      risk_text(report_of({level(0.5, 10, 9), level(0.7, 10, 8), level(0.9, 10, 0)}));
  EXPECT_NE(down.find("healthy again within the horizon at load 0.7 and below"), std::string::npos)
      << down;
}

// Splitting whose walks never reached the rule has no estimate: it said
// "0% (0% to 0%)"; now it says so in words, with how far the walks got, and
// the JSON flags it.
TEST(RiskReport, SplittingWithoutAWalkAtTheRuleGivesNoInterval) {
  RiskOptions o;
  o.split_runs = 2;
  const StuckRule rule = stuck_rule(small_server({}));  // levels 4, 8, ..., 31
  const std::vector<SplitEvidence> none = {{0, {0.5, 0.25, 0}, 120, {}}, {0, {0.5, 0}, 80, {}}};
  RiskLevel level;
  level.rare = rare_tip_of(none, rule, o, 120);
  EXPECT_FALSE(level.rare->reached);
  EXPECT_EQ(level.rare->stages_passed, 2);
  const RiskResult r = report_of({level});
  const std::string text = risk_text(r);
  EXPECT_EQ(text.find("0% (0% to 0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("by splitting: no walk reached the stuck rule within 2 min"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("the furthest reached 8 attempts at the server (2 of 9 stages)"),
            std::string::npos)
      << text;
  const nlohmann::json split = risk_json(r)["levels"][0]["splitting"];
  EXPECT_FALSE(split["reached"].get<bool>());
  EXPECT_EQ(split["stages_passed"], 2);
  const std::vector<SplitEvidence> some = {{0.01, {0.5, 0.5, 1, 1, 1, 1, 1, 0.4, 0.1}, 180, {}},
                                           {0, {0.5, 0}, 80, {}}};
  level.rare = rare_tip_of(some, rule, o, 120);
  EXPECT_TRUE(level.rare->reached);
  EXPECT_EQ(level.rare->stages_passed, 9);
  EXPECT_NE(risk_text(report_of({level})).find("by splitting: tips within 2 min: 0.5% ("),
            std::string::npos);
}

// Splitting that saw every walk tip has a chance of 1, which gives no mean
// (a clamp made one up, horizon / 27.6): the text says none and why, the
// JSON has null, and the chances within an hour and a day are 100%, not the
// 0% of a missing mean.
TEST(RiskReport, SplittingThatAlwaysTipsHasNoMeanTimeToTip) {
  RiskOptions o;
  o.split_runs = 2;
  const StuckRule rule = stuck_rule(small_server({}));
  const std::vector<double> all(9, 1.0);
  const std::vector<SplitEvidence> every = {{1, all, 360, {}}, {1, all, 360, {}}};
  RiskLevel level;
  level.rare = rare_tip_of(every, rule, o, 120);
  ASSERT_EQ(level.rare->p, 1);
  const RiskResult r = report_of({level});
  const std::string text = risk_text(r);
  EXPECT_NE(text.find("by splitting: tips within 2 min: 100% (100% to 100%); mean time to tip none "
                      "(a chance of 1 within 2 min gives no mean; the plain runs above time it)\n"
                      "    tips within 1 h: 100%; within 1 day: 100%\n"),
            std::string::npos)
      << text;
  const nlohmann::json tip = risk_json(r)["levels"][0]["splitting"]["time_to_tip"];
  EXPECT_TRUE(tip["mean_s"].is_null()) << tip;
  EXPECT_TRUE(tip["high_s"].is_null()) << tip;
  EXPECT_EQ(tip["within_day"]["p"], 1) << tip;
}

// `run --walk` replays one run: the printed replay sets runs=1 where the
// scenario's runs are not 1 (it was refused, exit 2), and is the line it was
// where they are.
TEST(RiskReport, TheWalksReplaySetsOneRunWhereTheScenarioHasMore) {
  RiskLevel level;
  level.demand_per_s = 8;
  level.rare = RareTip{};
  level.rare->tipped_path = {{0, 7}, {12, 9}};
  RiskResult r = report_of({level});
  r.scenario_runs = 5;
  const std::string tail =
      " --set incident.duration_s=0 --set demand.rate_per_s=8 --set horizon_s=120 --walk "
      "0:7,12:9\n";
  EXPECT_NE(risk_text(r).find("replay a walk that tipped: --set engine=agent --set runs=1" + tail),
            std::string::npos)
      << risk_text(r);
  r.scenario_runs = 1;
  EXPECT_NE(risk_text(r).find("replay a walk that tipped: --set engine=agent" + tail),
            std::string::npos)
      << risk_text(r);
  // The first run that tipped, by its seed: one run, not a Monte Carlo from it.
  RiskLevel seeded;
  seeded.demand_per_s = 8;
  seeded.tipped_seed = 42;
  RiskResult by_seed = report_of({seeded});
  by_seed.scenario_runs = 5;
  EXPECT_NE(risk_text(by_seed).find(
                "replay the first run that tipped: --set engine=agent --set runs=1 --set seed=42 "),
            std::string::npos)
      << risk_text(by_seed);
  by_seed.scenario_runs = 1;
  EXPECT_NE(risk_text(by_seed).find(
                "replay the first run that tipped: --set engine=agent --set seed=42 "),
            std::string::npos)
      << risk_text(by_seed);
  // The result keeps the scenario's own runs; the scenario it ran has 1.
  const RiskResult many = assess_risk(small_server({{"runs", "5"}}), testing::quick_risk({0.5}, 2));
  EXPECT_EQ(many.scenario_runs, 5);
  EXPECT_EQ(many.scenario.runs, 1);
}

}  // namespace
}  // namespace retrystorm
