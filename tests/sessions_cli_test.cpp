// The session model through the command line and the HTTP API: the report,
// the logs of docs/log-formats.md, Monte Carlo, lint's ladder check, and the
// commands that need a per-step run refusing it clearly.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "server/server.hpp"

namespace retrystorm {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SessionsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("retrystorm_sessions_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result cli(const std::string& args) {
    std::string cmd = "cd '" + dir_.string() + "' && timeout 60 " + RETRYSTORM_BIN + " " + args +
                      " > .out 2> .err < /dev/null";
    int raw = std::system(cmd.c_str());
    Result r;
    if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
    r.out = slurp(dir_ / ".out");
    r.err = slurp(dir_ / ".err");
    return r;
  }
  fs::path dir_;
};

TEST_F(SessionsCli, TextReportShowsOccupancyAndTheLadder) {
  Result r = cli("run --preset scheduler-429-outage");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("asleep in backoff"), std::string::npos);
  // The README's figure for this command.
  EXPECT_NE(r.out.find("95.3% of the time in flight was asleep in backoff"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("31m30s against a 30m00s deadline: longer"), std::string::npos);
  EXPECT_NE(r.out.find("Per hour"), std::string::npos);
  EXPECT_NE(r.out.find("Make the backoff deadline-aware"), std::string::npos);
}

TEST_F(SessionsCli, LogsFollowTheLogSpec) {
  Result r = cli("run --preset scheduler-429-outage --log logs --format json --out result.json");
  ASSERT_EQ(r.status, 0) << r.err;
  std::string csv = slurp(dir_ / "logs" / "sessions.csv");
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  for (const char* column :
       {"session_id", "start_s", "end_s", "outcome", "n_429", "n_401", "terminal_error_line",
        "n_api_calls", "items_in", "items_done", "queue_unread_at_open", "time_working_s",
        "time_blocked_s", "time_asleep_s", "anchor_in_batch", "anchor_done"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  auto report = nlohmann::json::parse(slurp(dir_ / "result.json"));
  size_t rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  EXPECT_EQ(rows, report["sessions"].size());
  // The log's 429 answers are the report's.
  int answers = 0, launches = 0;
  std::ifstream events(dir_ / "logs" / "events.jsonl");
  for (std::string line; std::getline(events, line);) {
    auto e = nlohmann::json::parse(line);
    ASSERT_TRUE(e.contains("t") && e.contains("ev")) << line;
    if (e["ev"] == "resp" && e["status"] == 429) ++answers;
    if (e["ev"] == "launch") ++launches;
  }
  int from_rows = 0;
  for (const auto& s : report["sessions"]) from_rows += s["n_429"].get<int>();
  EXPECT_EQ(answers, from_rows);
  EXPECT_EQ(launches, static_cast<int>(rows));
  // The same seed writes the same bytes.
  ASSERT_EQ(cli("run --preset scheduler-429-outage --log again --format json").status, 0);
  EXPECT_EQ(slurp(dir_ / "logs" / "events.jsonl"), slurp(dir_ / "again" / "events.jsonl"));
  EXPECT_EQ(csv, slurp(dir_ / "again" / "sessions.csv"));
}

// The initial queue's items arrive at their own instants in the log, as the
// series count them (they were logged at 0d00:00, so `analyze` of the
// events read a span of three days where the sessions' read two hours).
TEST_F(SessionsCli, TheInitialQueueIsLoggedWhenItArrived) {
  ASSERT_EQ(cli("run --preset scheduler-recovery-burst --log logs").status, 0);
  std::ifstream events(dir_ / "logs" / "events.jsonl");
  std::string first;
  std::getline(events, first);
  const auto e = nlohmann::json::parse(first);
  EXPECT_EQ(e["ev"], "arrival");
  EXPECT_EQ(e["t"].get<double>(), 2 * 86400 + 6 * 3600 + 30 * 60) << "@2d06:30";
  const Result from_events = cli("analyze logs/events.jsonl");
  const Result from_sessions = cli("analyze logs/sessions.csv");
  ASSERT_EQ(from_events.status, 0) << from_events.err;
  EXPECT_EQ(from_events.out.find("Span 0d00:00"), std::string::npos) << from_events.out;
}

// Whatever the keys allow, a run writes logs `analyze` reads: a ladder whose
// sleep a session can reach would pass what a log holds (10^7 s) is refused
// by name; steps past the deadline are never slept, and do not count.
TEST_F(SessionsCli, ALadderTooLongForItsLogsIsRefused) {
  const Result r =
      cli("run --preset scheduler-normal-day --set client.backoff.base_s=1000000 "
          "--set client.backoff.multiplier=100 --set client.retries=3 --set client.deadline_s=0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("client.backoff: retry 2 of the ladder sleeps up to"), std::string::npos)
      << r.err;
  // Sixty retries of 30 s doubling under a 30 min deadline: a session dies
  // asleep by the seventh; the ladder's sum is written as seconds, not as
  // negative minutes.
  const Result sixty = cli("run --preset scheduler-429-outage --set client.retries=60");
  EXPECT_EQ(sixty.status, 0) << sixty.err;
  EXPECT_EQ(sixty.out.find("m-"), std::string::npos);
  EXPECT_NE(sixty.out.find("e+"), std::string::npos) << "the ladder's sum in seconds";
}

// A round's work budget so small that a session's clock would not move is
// priced by the rounds it makes, and refused before the run (it hung).
TEST_F(SessionsCli, ATinyRoundBudgetIsPricedNotRun) {
  const Result r =
      cli("run --preset scheduler-normal-day --set sessions.round_min_s=1e-300 "
          "--set sessions.round_max_s=1e-300 --set api.success_min_s=0 --set api.success_max_s=0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sessions.round_min_s"), std::string::npos) << r.err;
}

// A focus window opening before the first tick is refused before the run,
// with the key, its value and the rule (it read "session time asleep 22.7 h"
// for 1.7 h).
TEST_F(SessionsCli, AFocusWindowOpeningBeforeTheStartIsRefused) {
  const Result r =
      cli("run --preset scheduler-recovery-burst --set 'api.timeline=0 dead' "
          "--set sessions.focus_from_s=172800 --out x.json");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("sessions.focus_from_s: 172800 must be at or after sessions.start_s "
                       "(252900)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

// docs/log-formats.md names the code that writes each log (it named
// src/formats/session_report.cpp, which writes neither sessions.csv nor
// events.jsonl): every `src/....cpp` (`Name`) it gives defines Name there.
TEST(SessionsDocs, LogFormatsNamesTheCodeThatWritesEachLog) {
  const fs::path root = RETRYSTORM_SOURCE_DIR;
  const std::string page = slurp(root / "docs" / "log-formats.md");
  const std::regex named("`(src/[^`]+\\.cpp)` \\(`(\\w+)`\\)");
  int checked = 0;
  for (std::sregex_iterator it(page.begin(), page.end(), named), end; it != end; ++it) {
    const std::string file = (*it)[1], name = (*it)[2];
    const std::string code = slurp(root / file);
    ASSERT_FALSE(code.empty()) << file << " is named for " << name << " and is not there";
    const bool defined = code.find(" " + name + "(") != std::string::npos ||
                         code.find(name + "::" + name + "(") != std::string::npos;
    EXPECT_TRUE(defined) << file << " does not define " << name;
    ++checked;
  }
  EXPECT_GE(checked, 2);  // sessions.csv and events.jsonl
  for (const char* log : {"`sessions.csv` | the session model (`engine: sessions`): "
                          "`src/logs/session_logs.cpp` (`sessions_csv`)",
                          "`events.jsonl` | the session model: `src/logs/session_logs.cpp` "
                          "(`EventsJsonl`)"})
    EXPECT_NE(page.find(log), std::string::npos) << log;
}

TEST_F(SessionsCli, MonteCarloGivesIntervalsAndABand) {
  Result r = cli("run --preset scheduler-normal-day --runs 8 --seed 3 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  auto launched = j["montecarlo"]["metrics"]["launched"];
  EXPECT_LE(launched["low"].get<double>(), launched["mean"].get<double>());
  EXPECT_GE(launched["high"].get<double>(), launched["mean"].get<double>());
  EXPECT_EQ(j["montecarlo"]["band"]["in_flight_mean"].size(), j["series"]["t_s"].size());
  EXPECT_EQ(r.out, cli("run --preset scheduler-normal-day --runs 8 --seed 3 --format json").out);
}

TEST_F(SessionsCli, LintFlagsALadderLongerThanTheDeadline) {
  Result r = cli("lint --preset scheduler-429-outage");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("ladder-exceeds-deadline"), std::string::npos);
  EXPECT_NE(r.out.find("31 min 30 s"), std::string::npos);
  // A ladder that fits is not flagged.
  r = cli("lint --preset scheduler-429-outage --set client.retries=5");
  EXPECT_EQ(r.out.find("ladder-exceeds-deadline"), std::string::npos) << r.out;
}

TEST_F(SessionsCli, PerStepCommandsRefuseClearly) {
  for (const char* command : {"ladder", "tipping", "sweep --vary client.retries=1:3:1"}) {
    Result r = cli(std::string(command) + " --preset scheduler-normal-day");
    EXPECT_EQ(r.status, 2) << command;
    EXPECT_NE(r.err.find("engine: sessions"), std::string::npos) << r.err;
  }
  Result r = cli("run --preset scheduler-normal-day --set sessions.batch_cap=0 --out x.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sessions.batch_cap"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

TEST(SessionsApi, RunAnswersTheSessionReport) {
  ApiAnswer a = handle_api("/api/run", R"({"preset": "scheduler-credential-outage"})");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["engine"], "sessions");
  for (const char* key : {"working", "blocked", "asleep", "completions", "errors_429"})
    EXPECT_TRUE(a.body["series"].contains(key)) << key;
  EXPECT_GT(a.body["metrics"]["mean_blocked"].get<double>(), 0);
  a = handle_api("/api/trace", R"({"preset": "scheduler-credential-outage"})");
  EXPECT_EQ(a.status, 200);
  a = handle_api("/api/run", R"({"preset": "scheduler-normal-day", "set": {"runs": 5000}})");
  EXPECT_EQ(a.status, 400);
  a = handle_api("/api/ladder", R"({"preset": "scheduler-normal-day"})");
  EXPECT_EQ(a.status, 400);
}

}  // namespace
}  // namespace retrystorm
