// The rooms of what was src/io (README "Layout"): one atomic file writer under
// every output and log, the request log's vocabulary beside the session
// log's, the one table of real systems, and lint's simulation refusing an
// engine it cannot run before any work.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "cli_run.hpp"
#include "engines/agent/agent.hpp"
#include "logs/atomic_file.hpp"
#include "logs/requests_csv_writer.hpp"
#include "model/keys.hpp"
#include "session_log/request_log.hpp"
#include "systems/export.hpp"
#include "systems/system.hpp"

namespace retrystorm {
namespace {

namespace fs = std::filesystem;
using testing::read_all;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Nothing but the named files: no temporary left behind.
size_t files_in(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, IsWholeAfterCommitAndUntouchedWithout) {
  TempDir d("atomic");
  fs::path p = d.path() / "out.txt";
  write_file(p, "before\n");
  ::chmod(p.c_str(), 0640);
  {
    AtomicFile f(p.string(), "--out");
    f.write("half of it");
  }  // not committed: a failed or stopped run
  EXPECT_EQ(read_all(p), "before\n");
  EXPECT_EQ(files_in(d.path()), 1u);
  {
    AtomicFile f(p.string(), "--out");
    f.write("after ");
    f.write("all\n");
    f.commit();
  }
  EXPECT_EQ(read_all(p), "after all\n");
  EXPECT_EQ(mode_of(p), 0640u);  // the mode the file had
  EXPECT_EQ(files_in(d.path()), 1u);
}

TEST(AtomicFile, NewFilesGetTheShellsModeAndBadPathsAreRefused) {
  TempDir d("atomic_mode");
  mode_t mask = ::umask(022);
  {
    AtomicFile f((d.path() / "new.txt").string(), "--log");
    f.write("x");
    f.commit();
  }
  ::umask(mask);
  EXPECT_EQ(mode_of(d.path() / "new.txt"), 0644u);
  try {
    AtomicFile f(d.path().string(), "--log");
    FAIL() << "a directory was taken as a file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--log: '"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  AtomicFile null("/dev/null", "--out");  // a device is written straight into
  null.write("discarded");
  null.commit();
}

TEST(RequestLog, TheWriterAndTheReaderShareOneVocabulary) {
  using request_log::AttemptOutcome;
  EXPECT_EQ(request_log::requests_csv_header(), "request_id,attempt,sent_s,done_s,outcome,layer\n");
  for (auto o : {AttemptOutcome::ok, AttemptOutcome::late, AttemptOutcome::timeout,
                 AttemptOutcome::rejected, AttemptOutcome::shed, AttemptOutcome::budget_denied,
                 AttemptOutcome::failed, AttemptOutcome::in_flight})
    EXPECT_EQ(request_log::outcome_from_name(request_log::outcome_name(o)), o);
  EXPECT_FALSE(request_log::outcome_from_name("okay"));
  EXPECT_EQ(request_log::outcome_names(),
            "ok, late, timeout, rejected, shed, budget_denied, failed, in_flight");
}

TEST(RequestLog, AnUnfinishedLogLeavesTheOldFile) {
  TempDir d("requests_atomic");
  fs::path p = d.path() / "requests.csv";
  write_file(p, "request_id,attempt,sent_s,done_s,outcome,layer\n7,1,0.000,0.010,ok,1\n");
  {
    RequestsCsv csv(p.string());
    csv.row({1, 1, 0.5, 0.75, request_log::AttemptOutcome::timeout, 1});
  }  // the run failed before close(): the file was truncated in place before
  EXPECT_EQ(read_all(p), "request_id,attempt,sent_s,done_s,outcome,layer\n7,1,0.000,0.010,ok,1\n");
  {
    RequestsCsv csv(p.string());
    csv.row({1, 1, 0.5, 0.75, request_log::AttemptOutcome::timeout, 1});
    csv.close();
  }
  EXPECT_EQ(read_all(p),
            "request_id,attempt,sent_s,done_s,outcome,layer\n1,1,0.500,0.750,timeout,1\n");
  EXPECT_EQ(files_in(d.path()), 1u);
}

// Both logs of the session model go through the one writer: the same mode.
TEST(SessionLogs, BothFilesGetTheSameMode) {
  TempDir d("session_log_modes");
  testing::Outcome o = run_cli(
      d.path(), {"run", "--preset", "scheduler-normal-day", "--log", "logs", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(mode_of(d.path() / "logs" / "sessions.csv"),
            mode_of(d.path() / "logs" / "events.jsonl"));
  EXPECT_EQ(files_in(d.path() / "logs"), 2u);
}

TEST(Systems, OneTableNamesEverySystemOnce) {
  using configs::System;
  const auto& table = configs::system_table();
  ASSERT_EQ(table.size(), 8u);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].system), i) << table[i].name;  // enum order
    EXPECT_EQ(configs::system_named(table[i].name), table[i].system);
    EXPECT_EQ(configs::facts(table[i].system).name, std::string(table[i].name));
  }
  EXPECT_FALSE(configs::system_named("traefik"));
  EXPECT_EQ(configs::system_label(System::aws), std::string("AWS SDK"));
  EXPECT_FALSE(configs::facts(System::retrystorm).exported);
  for (const auto& name : configs::export_systems())
    EXPECT_EQ(configs::system_name(configs::export_config(Scenario{}, name).system), name);
}

// The session model has no per-step run: lint --simulate says so before
// running anything (it used to run the fluid engine, then exit 2).
TEST(LintSimulation, RefusesTheSessionModelBeforeAnyRun) {
  TempDir d("lint_sessions");
  write_file(d.path() / "route.yaml", "retry_policy: {retry_on: 5xx, num_retries: 2}\n");
  testing::Outcome o =
      run_cli(d.path(), {"lint", "route.yaml", "--simulate", "--preset", "scheduler-429-outage"});
  EXPECT_EQ(o.status, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("--simulate"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("session model"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "");  // refused before any report
}

// An agent scenario's fixes run on the agent engine, like its ladder.
TEST(LintSimulation, RunsTheScenariosOwnEngine) {
  TempDir d("lint_agent");
  write_file(d.path() / "route.yaml", "retry_policy: {retry_on: 5xx, num_retries: 3}\n");
  testing::Outcome o =
      run_cli(d.path(), {"lint", "route.yaml", "--simulate", "--preset", "primary-failover",
                         "--set", "engine=agent", "--format", "json"});
  EXPECT_EQ(o.status, 1) << o.err;  // findings, not bad input
  EXPECT_NE(o.out.find("\"as_configured\""), std::string::npos) << o.out.substr(0, 400);
}

}  // namespace
}  // namespace retrystorm
