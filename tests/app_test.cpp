// The application layer (src/app): the scenario a request names is assembled
// one way for the command line and the server, and each command's function
// answers both alike.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/commands.hpp"
#include "app/scenario_request.hpp"
#include "cli_run.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "server/server.hpp"

namespace retrystorm {
namespace {

using nlohmann::json;
using testing::run_cli;
using testing::TempDir;

std::string scenario_json_text(const app::ScenarioRequest& r) {
  return scenario_to_json(app::assemble_scenario(r).scenario).dump();
}

TEST(AssembleScenario, TextAndJsonSettingsGiveTheSameScenario) {
  app::ScenarioRequest text, typed;
  text.preset = typed.preset = "brief-outage";
  text.sets = {{"client.retries=1", std::nullopt}, {"client.backoff.jitter=full", std::nullopt}};
  typed.sets = {{"client.retries", json(1)}, {"client.backoff.jitter", json("full")}};
  EXPECT_EQ(scenario_json_text(text), scenario_json_text(typed));
  EXPECT_NE(scenario_json_text(text), scenario_json_text({}));
}

TEST(AssembleScenario, NothingNamedIsTheFallbackPreset) {
  app::ScenarioRequest none, named;
  none.fallback = "primary-failover";
  named.preset = "primary-failover";
  EXPECT_EQ(scenario_json_text(none), scenario_json_text(named));
}

TEST(AssembleScenario, AFileAndItsJsonAgreeAndIgnoredKeysAreWarned) {
  TempDir dir("app_file");
  json scenario = scenario_to_json(preset_or_throw("order-status").scenario);
  scenario["sessions"] = {{"deterministic", true}};  // the fluid engine ignores it
  testing::write_file(dir.path() / "s.json", scenario.dump());
  app::ScenarioRequest file, inline_json;
  file.file = (dir.path() / "s.json").string();
  inline_json.scenario = scenario;
  app::AssembledScenario a = app::assemble_scenario(file), b = app::assemble_scenario(inline_json);
  EXPECT_EQ(scenario_to_json(a.scenario).dump(), scenario_to_json(b.scenario).dump());
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_NE(a.warnings[0].find("sessions.deterministic"), std::string::npos) << a.warnings[0];
}

TEST(AssembleScenario, BadSettingsNameThemselves) {
  app::ScenarioRequest r;
  r.sets = {{"client.retries", std::nullopt}};
  try {
    app::assemble_scenario(r);
    FAIL() << "a setting without '=' was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set: 'client.retries' must look like PATH=VALUE, e.g. client.retries=0");
  }
  r.sets = {{"client.retries", json("many")}};
  EXPECT_THROW(app::assemble_scenario(r), InputError);
}

// Replication 0 of a Monte Carlo is the run shown: the answer that reuses it
// (the page's, without advice) has the same run as the one that runs again.
TEST(AppRun, MonteCarloReusesReplicationZeroWithoutChangingTheRun) {
  app::ScenarioRequest r;
  r.preset = "brief-outage";
  r.sets = {{"engine=agent", std::nullopt}, {"runs=3", std::nullopt}};
  Scenario s = app::assemble_scenario(r).scenario;
  app::RunOptions reuse, again;
  reuse.montecarlo = again.montecarlo = true;
  reuse.report.advice = reuse.report.tipping = again.report.advice = again.report.tipping = false;
  again.report.advice = true;  // the path that runs the scenario once more
  json a = app::run_answer_json(app::run(s, reuse, {}));
  json b = app::run_answer_json(app::run(s, again, {}));
  b.erase("advice");
  a.erase("advice");
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_EQ(a["montecarlo"]["runs"], 3);
}

// rs.distributed.run's path: replications run in parts (here out of order
// and of uneven sizes) give run()'s answer byte for byte.
TEST(AppRun, MonteCarloFromPartsIsTheWholeRun) {
  app::ScenarioRequest r;
  r.preset = "brief-outage";
  r.sets = {{"engine=agent", std::nullopt}, {"runs=7", std::nullopt}};
  Scenario s = app::assemble_scenario(r).scenario;
  app::RunOptions o;
  o.montecarlo = true;
  std::vector<Replication> tail = montecarlo_part(s, 3, 4, 2);
  std::vector<Replication> all = montecarlo_part(s, 0, 3, 1);
  all.insert(all.end(), tail.begin(), tail.end());
  EXPECT_EQ(app::run_answer_json(app::run_of_parts(s, o, {}, all)).dump(),
            app::run_answer_json(app::run(s, o, {})).dump());
  all.pop_back();
  EXPECT_THROW(app::run_of_parts(s, o, {}, all), InputError);  // 6 of 7
  all.push_back(tail.back());
  all[2].band.pop_back();
  EXPECT_THROW(app::run_of_parts(s, o, {}, all), InputError);  // a band of another length
  r.preset = "scheduler-normal-day";
  r.sets = {{"runs=2", std::nullopt}};
  EXPECT_THROW(app::run_of_parts(app::assemble_scenario(r).scenario, o, {}, {}), InputError);
}

TEST(AppRun, CostAndServerRunLimitsAreCheckedBeforeWork) {
  app::ScenarioRequest r;
  r.preset = "brief-outage";
  r.sets = {{"engine=agent", std::nullopt}, {"runs=20", std::nullopt}};
  Scenario s = app::assemble_scenario(r).scenario;
  app::RunOptions o;
  o.montecarlo = true;
  o.max_runs = 10;
  EXPECT_THROW(app::run(s, o, {}), InputError);
  app::CostBudget tiny;
  tiny.limits.max_seconds = 1e-9;
  tiny.hint = "; a hint";
  try {
    app::ladder(s, tiny);
    FAIL() << "the ladder ran over its budget";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("; a hint (docs/limits.md)"), std::string::npos)
        << e.what();
  }
}

// The command line and the HTTP API answer a run with the same JSON.
TEST(AppRun, CommandLineAndServerAnswerTheSameRun) {
  TempDir dir("app_cli");
  auto cli = run_cli(dir.path(), {"run", "--preset", "brief-outage", "--set", "client.retries=1",
                                  "--format", "json"});
  ASSERT_EQ(cli.status, 0) << cli.err;
  ApiAnswer api =
      handle_api("/api/run", R"({"preset": "brief-outage", "set": {"client.retries": 1}})");
  ASSERT_EQ(api.status, 200) << api.body.dump();
  EXPECT_EQ(json::parse(cli.out).dump(), api.body.dump());
}

}  // namespace
}  // namespace retrystorm
