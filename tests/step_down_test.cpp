// The step-down experiment (docs/risk.md, "The hysteresis loop"): the load
// climbs and comes back down the same steps; the service of
// examples/random-tipping.yaml tips near full load and comes back only far
// below it.
#include "analysis/step_down.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "formats/scenario_io.hpp"
#include "formats/step_down_report.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

Scenario random_server() {
  return testing::preset("order-status", testing::random_server_keys());
}

StepDownOptions wide() {
  StepDownOptions o;
  o.from = 0.1, o.to = 1.2, o.step = 0.1, o.runs = 10;
  return o;
}

TEST(StepDown, TheLoadClimbsAndComesBackDownTheSameSteps) {
  const StepDown d = run_step_down(random_server(), wide());
  ASSERT_EQ(d.loads.size(), 23u);  // 0.1 .. 1.2 and back
  EXPECT_EQ(d.loads.front(), 0.1);
  EXPECT_EQ(d.loads[11], 1.2);
  EXPECT_EQ(d.loads[7], 0.8);  // 9 decimals: not 0.7999999999999999
  EXPECT_EQ(d.loads.back(), 0.1);
  EXPECT_EQ(d.hold_s, 120);  // 40 timeouts of 3 s
  EXPECT_EQ(d.scenario.horizon_s, 23 * 120);
  EXPECT_EQ(d.scenario.incident.duration_s, 0);
  EXPECT_EQ(d.scenario.demand.profile_period_s, 0);
  EXPECT_EQ(d.scenario.demand_profile().at(121), 0.2);
  EXPECT_EQ(d.runs.size(), 10u);
  EXPECT_EQ(d.first.series.size(), 23u * 120);
}

TEST(StepDown, ItTipsNearFullLoadAndComesBackFarBelow) {
  const StepDown d = run_step_down(random_server(), wide());
  ASSERT_TRUE(d.tipping_load && d.recovery_load);
  // Going up, chance tips it within two minutes somewhere from 80% to 110%;
  // coming down, it stays stuck until the demand is a third or less.
  EXPECT_GE(*d.tipping_load, 0.8);
  EXPECT_LE(*d.tipping_load, 1.1);
  EXPECT_LE(*d.recovery_load, 0.3);
  for (const StepDownRun& r : d.runs) {
    EXPECT_TRUE(r.stuck_at_top);
    ASSERT_TRUE(r.tipped_load && r.recovered_load);
    EXPECT_LT(*r.recovered_load, *r.tipped_load);
    EXPECT_LT(*r.tipped_s, *r.recovered_s);
  }
  const std::string text = step_down_text(d);
  EXPECT_NE(text.find("comes back only at 0.2x"), std::string::npos) << text;
}

TEST(StepDown, TheSameSeedGivesTheSameStairsOnAnyThreads) {
  StepDownOptions one = wide(), two = wide();
  one.threads = 1, two.threads = 2;
  EXPECT_EQ(step_down_json(run_step_down(random_server(), one)),
            step_down_json(run_step_down(random_server(), two)));
}

TEST(StepDown, TheFluidEngineRunsOnce) {
  StepDownOptions o;
  o.to = 2;
  const StepDown d = run_step_down(testing::preset("order-status"), o);
  ASSERT_EQ(d.runs.size(), 1u);
  // order-status tips once the load is well above capacity and its retries
  // hold it there all the way down (the fluid model has no chance to help).
  ASSERT_TRUE(d.tipping_load);
  EXPECT_GT(*d.tipping_load, 1.0);
  EXPECT_TRUE(d.runs[0].stuck_at_top);
  EXPECT_FALSE(d.recovery_load);
}

TEST(StepDown, RefusesWhatItCannotStep) {
  const Scenario s = random_server();
  StepDownOptions o;
  o.to = 0.4;  // below from
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  o = {};
  o.step = 0;
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  o = {};
  o.step = 0.0001;  // 10,000 loads
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  o = {};
  o.from = 0;
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  // A load that would round to 0 (loads are kept to 9 decimals).
  o.from = 1e-10;
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  // 501 loads up is 1,001 holds, past kStepDownHolds; 500 up fit.
  o = {};
  o.from = 0.5, o.to = 1, o.step = 0.001;
  EXPECT_THROW(step_down_scenario(s, o), InputError);
  o.step = 0.5 / 499;
  EXPECT_NO_THROW(step_down_scenario(s, o));
  Scenario profiled = s;
  profiled.demand.profile = "0:1,60:2";
  EXPECT_THROW(step_down_scenario(profiled, {}), InputError);
  EXPECT_THROW(step_down_scenario(testing::preset("three-tier-chain"), {}), InputError);
}

// Closed-loop clients never read the demand.rate_per_s the staircase
// scales: the loads reported were loads nobody sent (risk refuses them too).
TEST(StepDown, RefusesClosedLoopClients) {
  const Scenario closed = testing::preset("closed-loop-clients");
  ASSERT_GT(closed.demand.clients, 0);
  try {
    step_down_scenario(closed, {});
    ADD_FAILURE() << "closed-loop clients were stepped";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "step-down: demand.clients: open-loop arrivals only (demand.clients 0)"),
              std::string::npos)
        << e.what();
  }
  testing::TempDir dir("step_down_closed");
  const testing::Outcome o =
      testing::run_cli(dir.path(), {"step-down", "--preset", "closed-loop-clients", "--runs", "1"});
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_NE(o.err.find("demand.clients"), std::string::npos) << o.err;
}

// The message of a refused step, or "" when the staircase is built.
std::string step_refusal(double from, double to, double step) {
  StepDownOptions o;
  o.from = from, o.to = to, o.step = step;
  try {
    step_down_scenario(random_server(), o);
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

// A step that is not finite made NaN loads, refused as a demand.profile
// nobody wrote; one wider than the span held `from` alone and said it never
// tipped, even there. Both are refused, naming --step.
TEST(StepDown, TheStepIsFiniteAndAtMostTheSpan) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(step_refusal(0.5, 1.5, inf).find("--step inf must be above 0 and finite"),
            std::string::npos);
  EXPECT_NE(step_refusal(0.5, 1.5, std::nan("")).find("--step nan must be above 0"),
            std::string::npos);
  EXPECT_EQ(step_refusal(0.5, 1.5, inf).find("demand.profile"), std::string::npos);
  const std::string wide = step_refusal(0.5, 1.5, 5);
  EXPECT_NE(wide.find("--step 5 is wider than the span from 0.5 to 1.5"), std::string::npos)
      << wide;
  EXPECT_NE(wide.find("a step of at most 1"), std::string::npos) << wide;
  EXPECT_NE(step_refusal(0.1, 1.2, 1.2).find("at most 1.1"), std::string::npos);
  // A step of the whole span climbs once, 0.1 + 1.1 included (1.2 - 0.1 is
  // 1.0999999999999999 in binary).
  EXPECT_EQ(step_refusal(0.5, 1.5, 1), "");
  EXPECT_EQ(step_refusal(0.1, 1.2, 1.1), "");
  EXPECT_NE(step_refusal(0.5, 1, 0.001).find("--step 0.001 gives 501 loads"), std::string::npos);
}

// A step that does not divide the span stops at the last load at or below
// `to` (docs/cli.md): from 0.5 by 0.3, 1.4 is the top.
TEST(StepDown, AStepThatDoesNotDivideTheSpanStopsBelowTo) {
  StepDownOptions o;
  o.step = 0.3;
  const StepDown d = run_step_down(testing::preset("order-status"), o);
  EXPECT_EQ(d.loads, (std::vector<double>{0.5, 0.8, 1.1, 1.4, 1.1, 0.8, 0.5}));
  EXPECT_NE(step_down_text(d).find("climbs from 0.5x to 1.4x"), std::string::npos)
      << step_down_text(d);
}

TEST(StepDown, TheCommandLineAnswersInTextAndJson) {
  testing::TempDir dir("step_down");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const testing::Outcome json_out =
      testing::run_cli(dir.path(), {"step-down", "--scenario", example, "--from", "0.1", "--to",
                                    "1.2", "--runs", "4", "--format", "json"});
  ASSERT_EQ(json_out.status, 0) << json_out.err;
  const auto j = nlohmann::json::parse(json_out.out);
  EXPECT_EQ(j["runs"].size(), 4u);
  EXPECT_TRUE(j["tipping_load"].is_number());
  EXPECT_TRUE(j["recovery_load"].is_number());
  EXPECT_EQ(j["hold_s"], 120);
  EXPECT_EQ(j["series"]["t_s"].size(), 23u * 120);
  const testing::Outcome bad =
      testing::run_cli(dir.path(), {"step-down", "--scenario", example, "--step", "-1"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("step -1 must be above 0"), std::string::npos) << bad.err;
  for (const char* step : {"inf", "5"}) {
    const testing::Outcome refused = testing::run_cli(
        dir.path(), {"step-down", "--scenario", example, "--step", step, "--runs", "1"});
    EXPECT_EQ(refused.status, 2) << step << ": " << refused.out;
    EXPECT_NE(refused.err.find(std::string("--step ") + step), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("demand.profile"), std::string::npos) << refused.err;
  }
}

}  // namespace
}  // namespace retrystorm
