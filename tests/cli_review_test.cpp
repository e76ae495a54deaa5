// The command line's review findings, through the real binary: what is
// refused and what still runs (the refusals themselves are cases of
// bad_input_test.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace {

namespace fs = std::filesystem;
using namespace retrystorm::testing;

// Runs the binary with standard output into /dev/full: its status and standard error.
Outcome run_into_full_stdout(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd " + shell_quote(dir.string()) + " && timeout 30 " + RETRYSTORM_BIN;
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " > /dev/full 2> .stderr < /dev/null";
  int raw = std::system(cmd.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.err = read_all(dir / ".stderr");
  return o;
}

// docs/limits.md, "Output that is lost": help and the version are output too.
TEST(CliReview, HelpAndVersionIntoAFullStdoutFail) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  TempDir dir("full_stdout");
  const std::vector<std::vector<std::string>> cases = {
      {"--help"}, {"-h"}, {"run", "--help"}, {"--version"}, {"keys"}};
  for (const auto& args : cases) {
    Outcome o = run_into_full_stdout(dir.path(), args);
    EXPECT_EQ(o.status, 1) << args.front() << ": " << o.err;
    EXPECT_NE(o.err.find("cannot write the output to stdout"), std::string::npos)
        << args.front() << ": " << o.err;
  }
}

TEST(CliReview, HelpAndVersionStillExit0) {
  TempDir dir("help_ok");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"--version"}, {"run", "--help"}}) {
    Outcome o = run_cli(dir.path(), args);
    EXPECT_EQ(o.status, 0) << args.front() << ": " << o.err;
    EXPECT_FALSE(o.out.empty()) << args.front();
    EXPECT_TRUE(o.err.empty()) << o.err;
  }
}

// Only the form of another engine's text key is checked: a well-formed value
// still runs with the warning that it is ignored, and the rules that tie it
// to other keys (one timeout per layer) stay with the engine that uses it.
TEST(CliReview, AWellFormedTextKeyOfAnotherEngineIsStillOnlyIgnored) {
  TempDir dir("text_ignored");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"api.timeline", "0d01:00 dead, 0d02:00 healthy"},
      {"items.initial_queue", "5 ping @2d21:00-2d21:48"},
      {"client.layer_timeouts_s", "3,1"},
  };
  for (const auto& [key, value] : cases) {
    Outcome o = run_cli(dir.path(), {"run", "--format", "json", "--set", key + "=" + value});
    EXPECT_EQ(o.status, 0) << key << ": " << o.err;
    EXPECT_NE(o.err.find(key + ": ignored"), std::string::npos) << o.err;
  }
  Outcome o =
      run_cli(dir.path(), {"run", "--set", "engine=sessions", "--set", "client.retry_on=503,429"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("client.retry_on: ignored"), std::string::npos) << o.err;
}

// risk runs the agent engine whatever engine the scenario names: its keys
// are warned of as that engine reads them. demand.process and
// server.service were "ignored ... here engine is fluid", and then used; a
// key of the session model is still named, and `run` warns as it did.
TEST(CliReview, RiskWarnsOfKeysAsTheAgentEngineReadsThem) {
  TempDir dir("risk_warnings");
  const std::vector<std::string> sets = {"--set", "demand.process=poisson", "--set",
                                         "server.service=exponential"};
  std::vector<std::string> risk = {"risk", "--preset",  "brief-outage", "--runs",
                                   "4",    "--horizon", "600"};
  risk.insert(risk.end(), sets.begin(), sets.end());
  Outcome o = run_cli(dir.path(), risk);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err.find("ignored"), std::string::npos) << o.err;
  risk.insert(risk.end(), {"--set", "api.timeline=0d01:00 dead, 0d02:00 healthy"});
  o = run_cli(dir.path(), risk);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("api.timeline: ignored"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("here engine is agent"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("demand.process"), std::string::npos) << o.err;
  std::vector<std::string> run = {"run", "--preset", "brief-outage", "--format", "json"};
  run.insert(run.end(), sets.begin(), sets.end());
  o = run_cli(dir.path(), run);
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("demand.process: ignored: it applies when engine is agent"),
            std::string::npos)
      << o.err;
}

// The scenario `run --format json` reports with an ignored text key runs with
// the engine that reads it.
TEST(CliReview, TheReportedScenarioRunsWithTheEngineThatReadsTheKey) {
  TempDir dir("text_roundtrip");
  Outcome o = run_cli(dir.path(), {"run", "--format", "json", "--set",
                                   "api.timeline=0d00:01 dead, 0d00:03 healthy"});
  ASSERT_EQ(o.status, 0) << o.err;
  nlohmann::json scenario = nlohmann::json::parse(o.out)["scenario"];
  scenario["engine"] = "sessions";
  write_file(dir.path() / "s.json", scenario.dump());
  Outcome again = run_cli(dir.path(), {"run", "--scenario", "s.json"});
  EXPECT_NE(again.status, 2) << again.err;
  EXPECT_EQ(again.err.find("api.timeline"), std::string::npos) << again.err;
}

// One rule for booleans: true and false, in a file and with --set, with one message.
TEST(CliReview, BooleansAreTrueOrFalseInFilesAndSetAlike) {
  TempDir dir("booleans");
  EXPECT_EQ(run_cli(dir.path(), {"run", "--set", "server.shed_abandoned=true"}).status, 0);
  EXPECT_EQ(run_cli(dir.path(), {"run", "--set", "server.shed_abandoned=false"}).status, 0);
  for (const std::string word : {"yes", "1", "on", "no", "0", "off", "True"}) {
    Outcome set = run_cli(dir.path(), {"run", "--set", "server.shed_abandoned=" + word});
    EXPECT_EQ(set.status, 2) << word << ": " << set.err;
    write_file(dir.path() / "s.yaml", "server:\n  shed_abandoned: '" + word + "'\n");
    Outcome file = run_cli(dir.path(), {"run", "--scenario", "s.yaml"});
    EXPECT_EQ(file.status, 2) << word << ": " << file.err;
    // The same words, the file named in front.
    const std::string prefix = "retrystorm: s.yaml: ";
    ASSERT_EQ(file.err.rfind(prefix, 0), 0u) << file.err;
    EXPECT_EQ("retrystorm: " + file.err.substr(prefix.size()), set.err);
  }
}

const char kGoodYaml[] =
    "horizon_s: 60\n"
    "step_s: 1\n"
    "incident: {start_s: 10, duration_s: 5}\n";

// A rule between keys of a file names the file; an error a --set brings on
// its own, or one the reader already names, is not given the file (again).
TEST(CliReview, FileErrorsNameTheFileOnce) {
  TempDir dir("file_named");
  write_file(dir.path() / "good.yaml", kGoodYaml);
  write_file(dir.path() / "steps.yaml", "horizon_s: 300\nstep_s: 0.7\n");
  write_file(dir.path() / "typo.yaml", "client: {retries: x}\n");

  Outcome with_set =
      run_cli(dir.path(), {"run", "--scenario", "steps.yaml", "--set", "client.retries=1"});
  EXPECT_EQ(with_set.status, 2);
  EXPECT_EQ(with_set.err.rfind("retrystorm: steps.yaml: horizon_s: 300", 0), 0u) << with_set.err;

  // A --set's own mistake, or one that breaks a rule the file kept: its key
  // alone (a text key's form is checked once the scenario is whole).
  for (const std::string set :
       {"client.layers=0", "no.such_key=1", "client.retries", "client.stack_retries=2,x",
        "client.retry_on=bogus", "incident.start_s=100000", "client.hedging=grpc,retry"}) {
    Outcome o = run_cli(dir.path(), {"run", "--scenario", "good.yaml", "--set", set});
    EXPECT_EQ(o.status, 2) << set;
    EXPECT_EQ(o.err.find("good.yaml"), std::string::npos) << set << ": " << o.err;
  }

  Outcome typo = run_cli(dir.path(), {"run", "--scenario", "typo.yaml"});
  EXPECT_EQ(typo.status, 2);
  EXPECT_EQ(typo.err.find("typo.yaml"), typo.err.rfind("typo.yaml")) << typo.err;

  Outcome missing = run_cli(dir.path(), {"run", "--scenario", "missing.yaml"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err.find("missing.yaml"), missing.err.rfind("missing.yaml")) << missing.err;
}

TEST(CliReview, MergeOfAFifoIsNotAShardFile) {
  TempDir dir("merge_fifo");
  ASSERT_EQ(::mkfifo((dir.path() / "pipe").c_str(), 0600), 0);
  Outcome o = run_cli(dir.path(), {"merge", "pipe"});
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("pipe: not a regular file"), std::string::npos) << o.err;
  Outcome missing = run_cli(dir.path(), {"merge", "gone.json"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no such shard file"), std::string::npos) << missing.err;
}

TEST(CliReview, AKnownOptionBeforeACommandStillWorks) {
  TempDir dir("first_option");
  Outcome o = run_cli(dir.path(), {"--version"});
  EXPECT_EQ(o.status, 0) << o.err;
  Outcome none = run_cli(dir.path(), {});
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.err.find("unknown option"), std::string::npos) << none.err;
  Outcome bogus = run_cli(dir.path(), {"--bogus=1", "run"});
  EXPECT_EQ(bogus.status, 2);
  EXPECT_NE(bogus.err.find("unknown option '--bogus'"), std::string::npos) << bogus.err;
}

}  // namespace

namespace {

// The texts of another engine, checked once per thread while they stay the
// same: kept apart, so that texts that passed never stand for others that
// join to the same characters.
TEST(CliReview, TextsThatPassedNeverStandForOthers) {
  std::string ones = "1";
  for (int h = 1; h < 24; ++h) ones += ",1";
  retrystorm::Scenario a = retrystorm::preset_or_throw("order-status").scenario;
  a.api.timeline = "0 healthy\n";
  a.items.ping_rates_per_h = ones;
  EXPECT_NO_THROW(retrystorm::validate(a));
  retrystorm::Scenario b = a;
  b.api.timeline = "0 healthy";
  b.items.ping_rates_per_h = "\n" + ones;
  EXPECT_THROW(retrystorm::validate(b), retrystorm::InputError);
}

// A scenario read from a pipe is read once: the file is still named in its
// error when a --set is given (the error is checked against the file alone).
TEST(CliReview, AFileFromAPipeIsNamedInItsError) {
  TempDir dir("pipe_named");
  write_file(dir.path() / "bad.yaml", "horizon_s: 30\nincident: {start_s: 40}\n");
  std::string cmd = "cd " + shell_quote(dir.path().string()) + " && cat bad.yaml | timeout 30 " +
                    RETRYSTORM_BIN +
                    " run --scenario /dev/stdin --set client.retries=1 > .stdout 2> .stderr";
  int raw = std::system(cmd.c_str());
  ASSERT_TRUE(raw != -1 && WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 2);
  const std::string err = read_all(dir.path() / ".stderr");
  EXPECT_NE(err.find("/dev/stdin: incident.start_s"), std::string::npos) << err;
}

}  // namespace
