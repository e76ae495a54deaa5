// The analyzer on the session model's own 429-outage log (issue 16, item 4):
// fake saturation catches 13:00 of day one against the scheduler's own
// ceiling, the whole-log L does not shift with where the log starts, and the
// dead-dependency finding names the true queue the batch counter hides.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.hpp"

namespace retrystorm {
namespace {

using testing::Outcome;
using testing::read_all;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

// One logged run of the outage for the suite, analyzed as a whole.
struct OutageLog {
  TempDir dir{"session-analyzer"};
  nlohmann::json analysis;
  OutageLog() {
    Outcome run = run_cli(dir.path(), {"run", "--preset", "scheduler-429-outage", "--log", "log"});
    EXPECT_EQ(run.status, 0) << run.err;
    analysis = analyze({"log/sessions.csv", "log/events.jsonl"});
  }
  nlohmann::json analyze(std::vector<std::string> files) const {
    files.insert(files.begin(), "analyze");
    files.insert(files.end(), {"--format", "json"});
    Outcome r = run_cli(dir.path(), files);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

const OutageLog& outage() {
  static const OutageLog log;
  return log;
}

// The post-mortem's ceiling is the deadline over the poll interval
// (30 min / 5 min: 6.25); the peak in flight (7) would raise the 60% a near
// hour needs from 3.75 to 4.2 in flight (docs/analyze.md).
TEST(SessionAnalyzer, FakeSaturationCatchesTheFirstBusyHourOfDayOne) {
  const nlohmann::json& a = outage().analysis;
  ASSERT_FALSE(a.is_discarded());
  EXPECT_EQ(a["ceiling_source"], "deadline / launch interval");
  EXPECT_NEAR(a["ceiling"].get<double>(), 6.25, 0.005);  // shown as 6.25
  EXPECT_EQ(a["peak"], 7);
  bool caught = false;
  for (const auto& h : a["fake_saturation"]["hours"]) caught |= h.get<int64_t>() == 24 + 13;
  EXPECT_TRUE(caught) << a["fake_saturation"].dump();
  EXPECT_EQ(a["fake_saturation"]["threshold"], 0.6);
}

// The same sessions half an hour later: the same L over a window half an
// hour later, not an hour more or less of empty log.
TEST(SessionAnalyzer, WholeLogLDoesNotShiftWithWhereTheLogStarts) {
  const OutageLog& log = outage();
  std::istringstream in(read_all(log.dir.path() / "log" / "sessions.csv"));
  std::string line, shifted;
  std::getline(in, line);
  shifted = line + "\n";
  // start_s and end_s are the second and third columns (docs/log-formats.md).
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    for (size_t i : {1, 2}) cells[i] = std::to_string(std::stod(cells[i]) + 1800);
    for (size_t i = 0; i < cells.size(); ++i) shifted += (i ? "," : "") + cells[i];
    shifted += "\n";
  }
  write_file(log.dir.path() / "shifted.csv", shifted);
  nlohmann::json a = log.analyze({"log/sessions.csv"});
  nlohmann::json b = log.analyze({"shifted.csv"});
  ASSERT_FALSE(a.is_discarded() || b.is_discarded());
  EXPECT_NEAR(b["mean_in_flight"].get<double>(), a["mean_in_flight"].get<double>(), 1e-6);
  EXPECT_NEAR(b["little"].get<double>(), a["little"].get<double>(), 1e-6);
  EXPECT_NEAR(b["l_window"]["from_s"].get<double>() - a["l_window"]["from_s"].get<double>(), 1800,
              0.01);
  EXPECT_NEAR(b["l_window"]["to_s"].get<double>() - a["l_window"]["to_s"].get<double>(), 1800,
              0.01);
  Outcome text = run_cli(log.dir.path(), {"analyze", "log/sessions.csv"});
  EXPECT_NE(text.out.find("Whole log, 0d"), std::string::npos) << text.out;
}

TEST(SessionAnalyzer, DeadDependencyEvidenceNamesTheTrueQueue) {
  const nlohmann::json& a = outage().analysis;
  ASSERT_EQ(a["diagnosis"], "dead_dependency");
  std::string evidence = a["findings"][0]["evidence"].dump();
  EXPECT_NE(evidence.find("Longest true queue at a session open: "), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("the batch counter showed at most"), std::string::npos) << evidence;
}

}  // namespace
}  // namespace retrystorm
