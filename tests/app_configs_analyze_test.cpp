// The application layer's analyze and configuration commands (src/app/analyze,
// src/app/configs): the command line types its options and Python gives
// numbers, and both are read and refused in the same ranges and words.
#include <gtest/gtest.h>

#include <string>

#include "app/analyze.hpp"
#include "app/configs.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

const std::string kLogs = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/logs/";
const std::string kConfigs = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/configs/";

std::string refusal(const app::AnalyzeRequest& r) {
  try {
    app::analysis_options(r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AppAnalyze, TypedClocksAndGivenNumbersReadTheSame) {
  app::AnalyzeRequest typed, given;
  typed.from.text = "9:40";
  typed.ladder.text = "30, 60,120";
  given.from = {"from_s", "34800", false};
  given.ladder = {"ladder_s", "30,60,120", false};
  incident::AnalysisOptions a = app::analysis_options(typed), b = app::analysis_options(given);
  EXPECT_EQ(a.from_s, b.from_s);
  EXPECT_EQ(*a.from_s, 34800);
  EXPECT_EQ(a.ladder_s, b.ladder_s);
  EXPECT_EQ(a.ladder_s, (std::vector<double>{30, 60, 120}));
}

TEST(AppAnalyze, RefusalsQuoteTypedTextAndShowNumbersAsGiven) {
  app::AnalyzeRequest typed, given;
  typed.slots = app::OptionText{"--slots", "0"};
  given.slots = app::OptionText{"slots", "0", false};
  const std::string why = " is not allowed; the ceiling is a number of slots from 1 to 1000000000";
  EXPECT_EQ(refusal(typed), "--slots: '0'" + why);
  EXPECT_EQ(refusal(given), "slots: 0" + why);
  typed = {};
  typed.from.text = "10";
  typed.to.text = "5";
  EXPECT_EQ(refusal(typed), "--to: '5' is not after --from '10'");
}

TEST(AppAnalyze, TheReportNamesItsSourcesAndEmptyLogsAreRefused) {
  app::AnalyzeRequest r;
  r.logs = {kLogs + "requests.csv"};
  incident::Report report = app::analyze(r);
  ASSERT_EQ(report.sources.size(), 1u);
  EXPECT_NE(report.sources[0].find("requests.csv: "), std::string::npos);
  r.logs = {kLogs + "empty.csv"};
  EXPECT_THROW(app::analyze(r), InputError);
  EXPECT_THROW(app::analyze({}), InputError);
}

TEST(AppConfigs, PythonsImportAnswerIsTheApisWithScenarioAndSources) {
  auto r = configs::import_configs(app::read_config_files({kConfigs + "envoy/route.yaml"}));
  nlohmann::json api = app::import_json(r), details = app::import_details_json(r);
  for (const auto& [key, value] : api.items()) EXPECT_EQ(details[key], value) << key;
  EXPECT_EQ(details["scenario"], configs::keys_object(r.keys));
  EXPECT_EQ(details["from"].size(), r.keys.size());
}

TEST(AppConfigs, LintTakesFilesFirstElseTheScenariosOwnPolicy) {
  app::LintRequest files, own;
  files.files = app::read_config_files({kConfigs + "envoy/route.yaml"});
  own.scenario = preset_or_throw("primary-failover").scenario;
  own.source = "preset primary-failover";
  EXPECT_EQ(configs::lint_json(app::lint(files)),
            configs::lint_json(configs::lint_configs(files.files)));
  EXPECT_EQ(configs::lint_json(app::lint(own)),
            configs::lint_json(configs::lint_scenario(*own.scenario, own.source)));
  EXPECT_THROW(app::lint({}), InputError);  // "import: give at least one file"
}

}  // namespace
}  // namespace retrystorm
