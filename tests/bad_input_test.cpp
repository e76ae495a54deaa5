// Bad input through the real binary: every wrong scenario or command line is
// refused with exit status 2 and one line on standard error that names the
// problem (docs/cli.md), and nothing is written to --out.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using namespace retrystorm::testing;

// Temporary files of an atomic write of `prefix` left behind: "." + prefix +
// ".XXXXXX" (mkstemp), or the older prefix + ".tmp.PID".
std::vector<std::string> stray_tmp_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix + ".tmp.", 0) == 0 || name.rfind("." + prefix + ".", 0) == 0)
      found.push_back(name);
  }
  return found;
}

struct BadCase {
  std::string name;                          // test name suffix
  std::map<std::string, std::string> files;  // written into the temp dir first
  std::vector<std::string> args;
  std::vector<std::string> needles;  // each must appear in the message
  bool with_out = true;              // append --out result.out
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

const char kGoodYaml[] =
    "name: tiny\n"
    "horizon_s: 60\n"
    "step_s: 1\n"
    "demand: {rate_per_s: 10}\n"
    "server: {capacity_per_s: 20}\n"
    "incident: {start_s: 10, duration_s: 5, capacity_factor: 0.2}\n"
    "client: {timeout_s: 2, retries: 1}\n";

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> c;
  // Unknown keys.
  c.push_back({"UnknownKeyInYaml",
               {{"s.yaml", "client:\n  retriez: 3\n"}},
               {"run", "--scenario", "s.yaml"},
               {"client.retriez", "s.yaml"}});
  c.push_back({"UnknownTopLevelKeyInJson",
               {{"s.json", R"({"horizon": 100})"}},
               {"run", "--scenario", "s.json"},
               {"horizon", "s.json"}});
  c.push_back({"UnknownKeyInSet", {}, {"run", "--set", "client.retriez=3"}, {"client.retriez"}});
  // Wrong types.
  c.push_back({"StringForNumberInSet",
               {},
               {"run", "--set", "client.retries=three"},
               {"client.retries", "three"}});
  c.push_back({"StringForNumberInYaml",
               {{"s.yaml", "demand: {rate_per_s: fast}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"demand.rate_per_s", "fast"}});
  c.push_back({"QuotedNumberInJson",
               {{"s.json", R"({"client": {"timeout_s": "5"}})"}},
               {"run", "--scenario", "s.json"},
               {"client.timeout_s"}});
  c.push_back({"NumberForBoolInYaml",
               {{"s.yaml", "server:\n  shed_abandoned: 1\n"}},
               {"run", "--scenario", "s.yaml"},
               {"server.shed_abandoned"}});
  c.push_back({"NumberForBoolInSet",
               {},
               {"run", "--set", "server.shed_abandoned=2"},
               {"server.shed_abandoned"}});
  c.push_back({"ListForNumberInYaml",
               {{"s.yaml", "client: {retries: [1, 2]}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"client.retries"}});
  c.push_back(
      {"NotANumberInSet", {}, {"run", "--set", "client.timeout_s=nan"}, {"client.timeout_s"}});
  // Ranges.
  c.push_back(
      {"NegativeRate", {}, {"run", "--set", "demand.rate_per_s=-5"}, {"demand.rate_per_s", "-5"}});
  c.push_back({"ZeroCapacity",
               {{"s.yaml", "server: {capacity_per_s: 0}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"server.capacity_per_s"}});
  c.push_back({"ZeroHorizon", {}, {"run", "--set", "horizon_s=0"}, {"horizon_s"}});
  // A seed is whole: 1.5 ran as 1 while the report said 1.5.
  c.push_back({"FractionalSeed", {}, {"run", "--set", "seed=1.5"}, {"seed", "1.5"}});
  c.push_back({"FractionalSessionSeed",
               {},
               {"run", "--preset", "scheduler-normal-day", "--seed", "1.5"},
               {"seed", "1.5"}});
  c.push_back({"NegativeCapacityFactor",
               {},
               {"run", "--set", "incident.capacity_factor=-1"},
               {"incident.capacity_factor"}});
  c.push_back({"NegativeBudgetRatio",
               {},
               {"run", "--set", "client.budget.ratio=-0.1"},
               {"client.budget.ratio"}});
  c.push_back({"LayersZero", {}, {"run", "--set", "client.layers=0"}, {"client.layers", "0"}});
  c.push_back(
      {"FractionalRetries", {}, {"run", "--set", "client.retries=1.5"}, {"client.retries"}});
  c.push_back({"GoodputFractionZero",
               {},
               {"run", "--set", "recovery.goodput_fraction=0"},
               {"recovery.goodput_fraction"}});
  c.push_back({"GoodputFractionAboveOne",
               {{"s.yaml", "recovery: {goodput_fraction: 1.5}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"recovery.goodput_fraction"}});
  // Rules between keys (validate()).
  c.push_back(
      {"StepDoesNotDivideHorizon", {}, {"run", "--set", "step_s=7"}, {"horizon_s", "step_s"}});
  c.push_back({"UnknownEmptySection",
               {{"s.yaml", "foo: {}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml", "unknown key 'foo'"}});
  c.push_back({"SectionGivenANumber",
               {{"s.yaml", "client: 5\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml", "client:", "section of keys"}});
  c.push_back({"TippingGridAboveTheKeysRange",
               {},
               {"tipping", "--grid", "1e300"},
               {"grid_s", "up to 10000000"}});
  c.push_back({"TippingGridLongerThanTheRun",
               {},
               {"tipping", "--grid", "281"},
               {"grid_s", "no incident length would be tried"}});
  c.push_back({"EmptyPresetName", {}, {"run", "--preset", ""}, {"--preset", "empty"}});
  c.push_back({"EmptyScenarioPath", {}, {"ladder", "--scenario", ""}, {"--scenario", "empty"}});
  c.push_back(
      {"RiskHorizonNegative",
       {},
       {"risk", "--set", "engine=agent", "--set", "demand.process=poisson", "--horizon", "-1"},
       {"horizon -1", "0: the scenario's horizon_s"}});
  c.push_back({"CallsWindowWithoutPrometheus",
               {},
               {"import", "--mesh", "m", "--calls-window", "-1"},
               {"--calls-window", "--calls-from-prometheus"}});
  c.push_back(
      {"ExportANegativeCall", {}, {"export", "--to", "envoy", "--call", "-5"}, {"--call", "-5"}});
  c.push_back({"MetricsStartWithoutMetricsOut",
               {},
               {"run", "--metrics-start", "garbage"},
               {"--metrics-start", "--metrics-out"}});
  c.push_back({"RiskLoadsEmpty",
               {},
               {"risk", "--set", "engine=agent", "--set", "demand.process=poisson", "--loads", ""},
               {"--loads", "at least one load"}});
  c.push_back(
      {"RiskLoadsWithAnEmptyItem",
       {},
       {"risk", "--set", "engine=agent", "--set", "demand.process=poisson", "--loads", "1,,2"},
       {"--loads", "'' in '1,,2' is not a number"}});
  c.push_back(
      {"RiskLoadsNotANumber",
       {},
       {"risk", "--set", "engine=agent", "--set", "demand.process=poisson", "--loads", "0x1"},
       {"--loads", "'0x1'", "like 0.8,1,1.2"}});
  c.push_back({"SweepAxisHexValue",
               {},
               {"sweep", "--vary", "client.retries=0x2,1"},
               {"--vary client.retries", "'0x2' is not a number"}});
  c.push_back({"MetricsOutToStandardOutput",
               {},
               {"run", "--metrics-out", "-"},
               {"--metrics-out", "'-' (standard output)", "give a file name"}});
  c.push_back({"EmitScenarioToStandardOutput",
               {},
               {"analyze", "--emit-scenario", "-", "x.log"},
               {"--emit-scenario", "'-' (standard output)"}});
  c.push_back(
      {"SweepGridOverTheLimitNamesEveryAxis",
       {},
       {"sweep", "--vary", "client.timeout_s=1:10000:1", "--vary", "client.retries=0:100:1"},
       {"client.timeout_s step 1 from 1 to 10000 x client.retries", "1000000"}});
  c.push_back({"MergeADirectory", {}, {"merge", "."}, {"merge: .: a directory"}});
  // Checked before the shards are read: the absent file is not what is named.
  c.push_back({"FormatNotAllowedForMerge",
               {},
               {"merge", "absent.json", "--format", "xml"},
               {"--format: 'xml' is not allowed here; choose one of csv, json, text"}});
  c.push_back({"EmptyFormatForMerge",
               {},
               {"merge", "absent.json", "--format", ""},
               {"--format: '' is not allowed here; choose one of csv, json, text"}});
  c.push_back({"StepDownRunOverTheStepLimit",
               {},
               {"step-down", "--hold", "47000", "--from", "0.1", "--to", "2.1"},
               {"hold_s", "1927000 steps", "the limit is 1000000 steps"}});
  c.push_back({"ImportAKeyGivenTwice",
               {{"e.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 3\n  num_retries: 7\n"}},
               {"import", "e.yaml"},
               {"e.yaml:4", "'num_retries' appears twice"}});
  c.push_back({"ImportAMergeKeyGivenTwice",
               {{"m.yaml",
                 "kind: VirtualService\nx: [&A {attempts: 2}, &B {perTryTimeout: 1s}]\n"
                 "spec:\n  http:\n  - retries:\n      <<: *A\n      <<: *B\n"}},
               {"import", "m.yaml"},
               {"m.yaml:7", "key '<<' appears twice", "`<<: [*A, *B]`"}});
  // Only Kubernetes resources get their merge keys expanded: elsewhere the
  // message says so instead of pointing to a form that file does not read.
  c.push_back({"ScenarioWithTwoMergeKeys",
               {{"s.yaml", "x: &A {retries: 2}\nclient:\n  <<: *A\n  <<: *A\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml:4", "key '<<' appears twice",
                "this kind of file does not read YAML merge keys (only Kubernetes resources do)"}});
  c.push_back({"ImportEnvoyWithTwoMergeKeys",
               {{"e.yaml", "retry_policy:\n  retry_on: 5xx\n  <<: {a: 1}\n  <<: {b: 2}\n"}},
               {"import", "e.yaml"},
               {"e.yaml:4", "key '<<' appears twice", "does not read YAML merge keys"}});
  c.push_back({"TimeoutBelowOneStep",
               {},
               {"run", "--set", "client.timeout_s=1e-10"},
               {"client.timeout_s", "1e-10", "whole number of steps"}});
  c.push_back({"TimeoutNotWholeSteps",
               {},
               {"run", "--set", "client.timeout_s=2.5"},
               {"client.timeout_s", "2.5"}});
  c.push_back({"WindowNotWholeStepsWithWindowBudget",
               {},
               {"run", "--preset", "primary-failover", "--set", "client.budget.kind=window",
                "--set", "client.budget.window_s=0.07"},
               {"client.budget.window_s", "0.07"}});
  c.push_back(
      {"RunOverTheStepLimit", {}, {"run", "--set", "horizon_s=2000000"}, {"horizon_s", "1000000"}});
  c.push_back({"AttemptsOverTheLimit",
               {},
               {"run", "--set", "client.retries=100", "--set", "client.layers=6"},
               {"client.retries", "10000"}});
  c.push_back({"UnknownEngine", {}, {"run", "--set", "engine=agents"}, {"engine", "agents"}});
  // Choices.
  c.push_back({"UnknownJitter",
               {},
               {"run", "--set", "client.backoff.jitter=partial"},
               {"client.backoff.jitter", "partial"}});
  c.push_back({"UnknownBudgetKind",
               {{"s.yaml", "client:\n  budget: {kind: leaky}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"client.budget.kind", "leaky"}});
  c.push_back({"UnknownServiceCompletes",
               {},
               {"run", "--set", "service_completes=middle"},
               {"service_completes", "middle"}});
  // Files.
  c.push_back({"MalformedYamlWithLineNumber",
               {{"s.yaml", "horizon_s: 100\nclient:\n  retries: [1\n  timeout_s: 2\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml", "line 4"}});
  c.push_back({"MalformedYamlIndentation",
               {{"s.yaml", "horizon_s: 100\nclient:\n  retries: 1\n   timeout_s: 2\n"}},
               {"ladder", "--scenario", "s.yaml"},
               {"s.yaml", "line 4"}});
  c.push_back({"MalformedJson",
               {{"s.json", "{\"client\": {\"retries\": }"}},
               {"run", "--scenario", "s.json"},
               {"s.json", "JSON"}});
  c.push_back({"ScenarioIsAList",
               {{"s.yaml", "- 1\n- 2\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml", "list"}});
  c.push_back(
      {"EmptyFile", {{"s.yaml", "  \n\n"}}, {"run", "--scenario", "s.yaml"}, {"s.yaml", "empty"}});
  c.push_back({"MissingFile",
               {},
               {"run", "--scenario", "no-such-file.yaml"},
               {"--scenario", "no-such-file.yaml"}});
  c.push_back(
      {"LadderRowWithUnknownKey",
       {{"s.yaml", "ladder:\n  rows:\n    - {name: x, change: y, set: {client.retriez: 1}}\n"}},
       {"ladder", "--scenario", "s.yaml"},
       {"client.retriez"}});
  c.push_back({"LadderRowWithUnknownField",
               {{"s.yaml", "ladder:\n  rows:\n    - {name: x, chnage: y}\n"}},
               {"ladder", "--scenario", "s.yaml"},
               {"ladder.rows[0].chnage"}});
  c.push_back({"LadderRowWithBadValue",
               {{"s.yaml", "ladder:\n  rows:\n    - {name: x, set: {client.layers: 0}}\n"}},
               {"ladder", "--scenario", "s.yaml"},
               {"client.layers"}});
  c.push_back({"UnknownLadderMode",
               {{"s.yaml", "ladder: {mode: sideways, rows: []}\n"}},
               {"ladder", "--scenario", "s.yaml"},
               {"ladder.mode"}});
  // Scenario options.
  c.push_back({"UnknownPreset", {}, {"run", "--preset", "nope"}, {"preset", "nope"}});
  c.push_back({"PresetAndScenario",
               {{"s.yaml", kGoodYaml}},
               {"run", "--preset", "order-status", "--scenario", "s.yaml"},
               {"--preset", "--scenario"}});
  c.push_back(
      {"SetWithoutEquals", {}, {"run", "--set", "client.retries"}, {"--set", "client.retries"}});
  c.push_back({"SetWithoutPath", {}, {"run", "--set", "=3"}, {"--set"}});
  // Command line.
  // Regression (fixed): an unknown subcommand gets "A subcommand is required", which does not
  // name the word that was not understood ('frobnicate').
  c.push_back({"UnknownSubcommand", {}, {"frobnicate"}, {"frobnicate"}, false});
  c.push_back({"UnknownOption", {}, {"run", "--frob"}, {"--frob"}});
  c.push_back(
      {"FormatNotAllowedForLadder", {}, {"ladder", "--format", "csv"}, {"--format", "csv"}});
  c.push_back({"FormatNotAllowedForRun", {}, {"run", "--format", "xml"}, {"--format", "xml"}});
  c.push_back(
      {"FormatNotAllowedForTipping", {}, {"tipping", "--format", "csv"}, {"--format", "csv"}});
  c.push_back({"FormatNotAllowedForSweep",
               {},
               {"sweep", "--vary", "client.retries=0:1:1", "--format", "yaml"},
               {"--format", "yaml"}});
  // text is the other commands' format, not a sweep's (it used to write CSV silently).
  c.push_back({"TextIsNotASweepsFormat",
               {},
               {"sweep", "--vary", "client.retries=0:1:1", "--format", "text"},
               {"--format", "'text'", "csv, json"}});
  c.push_back({"SweepWithoutVary", {}, {"sweep"}, {"--vary"}});
  c.push_back({"SweepVaryingAKeyTwice",
               {},
               {"sweep", "--vary", "client.retries=1,2", "--vary", "client.retries=3,4"},
               {"vary client.retries", "varied twice"}});
  c.push_back({"VaryWithoutEquals", {}, {"sweep", "--vary", "client.retries"}, {"--vary"}});
  c.push_back({"VaryMissingParts",
               {},
               {"sweep", "--vary", "client.retries=0:3"},
               {"client.retries", "FROM:TO:STEP"}});
  c.push_back({"VaryNotANumber",
               {},
               {"sweep", "--vary", "client.retries=0:x:1"},
               {"client.retries", "'x'"}});
  c.push_back(
      {"VaryTooManyParts", {}, {"sweep", "--vary", "client.retries=0:3:1:5"}, {"client.retries"}});
  c.push_back({"VaryStepZero",
               {},
               {"sweep", "--vary", "client.retries=0:3:0"},
               {"client.retries", "step"}});
  c.push_back({"VaryStepNegative",
               {},
               {"sweep", "--vary", "incident.duration_s=0:3:-1"},
               {"incident.duration_s", "step"}});
  c.push_back({"VaryToBelowFrom",
               {},
               {"sweep", "--vary", "client.retries=3:0:1"},
               {"client.retries", "below"}});
  c.push_back({"VaryNonNumericKey",
               {},
               {"sweep", "--vary", "client.backoff.jitter=0:1:1"},
               {"client.backoff.jitter"}});
  c.push_back(
      {"VaryUnknownKey", {}, {"sweep", "--vary", "client.retriez=0:1:1"}, {"client.retriez"}});
  c.push_back({"VaryGridPointInvalid",
               {},
               {"sweep", "--vary", "client.timeout_s=0.5:1:0.5"},
               {"client.timeout_s"}});
  c.push_back(
      {"SweepOverTheRunLimit",
       {},
       {"sweep", "--vary", "incident.duration_s=0:1000:1", "--vary", "incident.start_s=0:1000:1"},
       {"vary", "1000000"}});
  c.push_back({"TippingGridNegative", {}, {"tipping", "--grid", "-1"}, {"--grid"}});
  c.push_back({"TippingGridNotANumber", {}, {"tipping", "--grid", "abc"}, {"--grid"}});
  c.push_back({"KeyGivenFlatAndNested",
               {{"mix.yaml", "horizon_s: 60\nclient.retries: 1\nclient:\n  retries: 5\n"}},
               {"run", "--scenario", "mix.yaml"},
               {"client.retries", "given twice"}});
  c.push_back({"ExportEmptyPreset",
               {},
               {"export", "--to", "envoy", "--preset", ""},
               {"--preset", "empty"}});
  c.push_back({"LintEmptyScenario", {}, {"lint", "--scenario", ""}, {"--scenario", "empty"}});
  c.push_back({"OutEmpty", {}, {"run", "--out", ""}, {"--out", "empty file name"}, false});
  c.push_back({"LogAndOutOneFile",
               {},
               {"run", "--set", "engine=agent", "--log", ".", "--out", "requests.csv"},
               {"--log", "--out", "requests.csv"},
               false});
  c.push_back({"LogEmpty", {}, {"run", "--log", "", "--format", "csv"}, {"--log", "empty"}});
  c.push_back(
      {"RunDeadlineNaN", {}, {"serve", "--run-deadline", "nan"}, {"--run-deadline", "nan"}, false});
  c.push_back({"PortOutOfRange", {}, {"serve", "--port", "70000"}, {"--port"}, false});
  c.push_back({"PortZero", {}, {"serve", "--port", "0"}, {"--port"}, false});
  c.push_back({"PortNotANumber", {}, {"serve", "--port", "http"}, {"--port"}, false});
  // Regression (fixed): an address that is no host name was a failure to listen (exit 1).
  c.push_back({"HostNotAName",
               {},
               {"serve", "--host", "bad host!", "--port", "65000"},
               {"--host", "bad host!", "host name or an IP address"},
               false});
  c.push_back(
      {"HostNotAnAddress", {}, {"serve", "--host", "1.2.3.999"}, {"--host", "1.2.3.999"}, false});
  c.push_back({"HostEmpty", {}, {"serve", "--host", ""}, {"--host"}, false});
  // Regression (fixed): an unknown option before any command got "A subcommand is required".
  c.push_back({"UnknownOptionFirst", {}, {"--bogus"}, {"--bogus", "--help"}, false});
  // Regression (fixed): an empty --walk read as none given.
  c.push_back({"WalkEmpty", {}, {"run", "--walk", ""}, {"--walk", "empty"}});
  // Regression (fixed): a device was "no such shard file".
  c.push_back({"MergeADevice", {}, {"merge", "/dev/null"}, {"/dev/null", "not a regular file"}});
  // Regression (fixed): a text key of another engine was only "ignored", whatever its form.
  c.push_back({"TimelineOfAnotherEngine",
               {},
               {"run", "--set", "api.timeline=zzz"},
               {"api.timeline", "zzz", "WHEN STATE"}});
  c.push_back({"LayerTimeoutsOfAnotherEngine",
               {},
               {"run", "--set", "client.layer_timeouts_s=zzz"},
               {"client.layer_timeouts_s", "zzz", "timeouts in seconds"}});
  c.push_back({"PingRatesOfAnotherEngine",
               {},
               {"run", "--set", "items.ping_rates_per_h=zzz"},
               {"items.ping_rates_per_h", "zzz", "not a number"}});
  c.push_back({"InitialQueueOfAnotherEngine",
               {},
               {"run", "--set", "items.initial_queue=zzz"},
               {"items.initial_queue", "zzz", "KIND @WHEN"}});
  c.push_back({"RetryOnOfAnotherEngine",
               {},
               {"run", "--set", "engine=sessions", "--set", "client.retry_on=zzz"},
               {"client.retry_on", "zzz", "allowed"}});
  // Regression (fixed): --set took yes, 1, on, no, 0 and off where a file takes only true, false.
  c.push_back({"YesForBoolInSet",
               {},
               {"run", "--set", "server.shed_abandoned=yes"},
               {"server.shed_abandoned", "'yes'", "true or false"}});
  c.push_back({"OneForBoolInSet",
               {},
               {"run", "--set", "client.retry_on_timeout=1"},
               {"client.retry_on_timeout", "'1'", "true or false"}});
  c.push_back({"YesForBoolInYaml",
               {{"s.yaml", "client:\n  retry_on_timeout: yes\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml", "client.retry_on_timeout", "'yes'", "true or false"}});
  // Regression (fixed): a rule between two keys of a file did not name the file.
  c.push_back({"StepNotDividingHorizonInFile",
               {{"s.yaml", "horizon_s: 300\nstep_s: 0.7\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml: horizon_s: 300", "step_s = 0.7"}});
  c.push_back({"TimelineInFile",
               {{"s.yaml", "api: {timeline: zzz}\n"}},
               {"run", "--scenario", "s.yaml"},
               {"s.yaml: api.timeline", "zzz"}});
  return c;
}

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, IsRefusedWithStatus2AndOneLineNamingTheProblem) {
  const BadCase& c = GetParam();
  TempDir dir(c.name);
  for (const auto& [name, text] : c.files) write_file(dir.path() / name, text);
  std::vector<std::string> args = c.args;
  if (c.with_out) {
    args.push_back("--out");
    args.push_back("result.out");
  }
  Outcome o = run_cli(dir.path(), args);
  EXPECT_EQ(o.status, 2) << "stderr: " << o.err;
  ASSERT_FALSE(o.err.empty());
  EXPECT_EQ(o.err.back(), '\n') << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "more than one line:\n" << o.err;
  EXPECT_EQ(o.err.rfind("retrystorm: ", 0), 0u) << o.err;
  for (const auto& needle : c.needles)
    EXPECT_NE(o.err.find(needle), std::string::npos)
        << "the message does not name '" << needle << "': " << o.err;
  EXPECT_TRUE(o.out.empty()) << "standard output: " << o.out.substr(0, 200);
  EXPECT_FALSE(fs::exists(dir.path() / "result.out")) << "partial output written";
  EXPECT_TRUE(stray_tmp_files(dir.path(), "result.out").empty());
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           return info.param.name;
                         });

TEST(BadInputCases, AreManyAndDistinct) {
  auto cases = bad_cases();
  EXPECT_GE(cases.size(), 30u);
  std::set<std::string> names;
  std::set<std::vector<std::string>> args;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_TRUE(args.insert(c.args).second || !c.files.empty()) << c.name;
  }
}

TEST(BadInputOut, AnExistingOutFileIsLeftUntouched) {
  TempDir dir("existing_out");
  write_file(dir.path() / "result.out", "previous contents\n");
  Outcome o = run_cli(dir.path(), {"run", "--set", "client.retries=-1", "--out", "result.out"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("client.retries"), std::string::npos) << o.err;
  EXPECT_EQ(read_all(dir.path() / "result.out"), "previous contents\n");
  EXPECT_TRUE(stray_tmp_files(dir.path(), "result.out").empty());
}

TEST(BadInputOut, OutIntoAMissingDirectoryIsBadInputAndLeavesNothing) {
  TempDir dir("missing_dir");
  Outcome o = run_cli(dir.path(), {"run", "--format", "json", "--out", "no/such/dir/result.json"});
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("--out"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_FALSE(fs::exists(dir.path() / "no"));
}

// Every output path is checked before the command runs: a bad --out no longer
// fails after the request log or the metrics were written, and the message
// names the option whose path it is.
TEST(BadInputOut, ABadOutputPathFailsBeforeAnyOtherOutputIsWritten) {
  TempDir dir("outputs_first");
  Outcome logged = run_cli(dir.path(), {"run", "--preset", "order-status", "--set", "engine=agent",
                                        "--log", "logs", "--out", "no/such/dir/o.txt"});
  EXPECT_EQ(logged.status, 2) << logged.err;
  EXPECT_NE(logged.err.find("--out: cannot write 'no/such/dir/o.txt'"), std::string::npos)
      << logged.err;
  EXPECT_FALSE(fs::exists(dir.path() / "logs"));
  Outcome metrics = run_cli(dir.path(), {"run", "--preset", "order-status", "--set", "engine=agent",
                                         "--metrics-out", "m.txt", "--out", "no/such/dir/o.txt"});
  EXPECT_EQ(metrics.status, 2) << metrics.err;
  EXPECT_FALSE(fs::exists(dir.path() / "m.txt"));
  ASSERT_EQ(run_cli(dir.path(), {"run", "--preset", "scheduler-429-outage", "--log", "s"}).status,
            0);
  Outcome replay = run_cli(dir.path(), {"analyze", "s/sessions.csv", "s/events.jsonl", "--out",
                                        "no/such/dir/r.txt", "--emit-scenario", "replay.yaml"});
  EXPECT_EQ(replay.status, 2) << replay.err;
  EXPECT_FALSE(fs::exists(dir.path() / "replay.yaml"));
  Outcome named = run_cli(dir.path(), {"analyze", "s/sessions.csv", "s/events.jsonl",
                                       "--emit-scenario", "no/such/dir/replay.yaml"});
  EXPECT_EQ(named.status, 2) << named.err;
  EXPECT_NE(named.err.find("--emit-scenario: cannot write"), std::string::npos) << named.err;
}

// Options refused after the run (--per, --metrics-start) left the request
// log and the metrics behind.
TEST(BadInputOut, RefusedOptionsLeaveNoLogOrMetrics) {
  TempDir dir("options_first");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--per", "service"}, {"--metrics-start", "yesterday"}}) {
    std::vector<std::string> args = {"run",   "--set", "engine=agent",  "--set", "horizon_s=120",
                                     "--log", "logs",  "--metrics-out", "m.om"};
    args.insert(args.end(), bad.begin(), bad.end());
    Outcome o = run_cli(dir.path(), args);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find(bad[0]), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(dir.path() / "logs" / "requests.csv")) << bad[0];
    EXPECT_FALSE(fs::exists(dir.path() / "m.om")) << bad[0];
  }
}

// A scenario file that is one YAML flow mapping is YAML, not broken JSON.
TEST(GoodInput, AFlowMappingScenarioIsReadAsYaml) {
  TempDir dir("flow_yaml");
  write_file(dir.path() / "flow.yaml", "{horizon_s: 60, incident: {start_s: 10}}\n");
  Outcome o = run_cli(dir.path(), {"run", "--scenario", "flow.yaml", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["scenario"]["horizon_s"], 60);
  write_file(dir.path() / "broken.json", "{\"horizon_s\": 60,,}\n");
  Outcome broken = run_cli(dir.path(), {"run", "--scenario", "broken.json"});
  EXPECT_EQ(broken.status, 2);
  EXPECT_NE(broken.err.find("not valid JSON"), std::string::npos) << broken.err;
}

// Text from a scenario file reaches a terminal escaped: the description and
// the ladder's rows could set the terminal's title or clear its screen.
TEST(GoodInput, ADescriptionAndLadderRowsCannotDriveTheTerminal) {
  TempDir dir("escapes");
  write_file(dir.path() / "esc.yaml",
             "horizon_s: 120\ndescription: \"d\\e]0;title\\aend\"\nladder:\n  rows:\n"
             "    - {name: \"row\\e[31m\", change: \"chg\\e[2J\", set: {client.retries: 0}}\n");
  for (const char* command : {"run", "ladder"}) {
    Outcome o = run_cli(dir.path(), {command, "--scenario", "esc.yaml"});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << command;
    EXPECT_NE(o.out.find("\\x1b"), std::string::npos) << command;
  }
}

// --runs on the fluid engine: no Monte Carlo of identical runs, and the
// warning says the flag is ignored (it printed the warning and the summary).
TEST(GoodInput, RunsOnTheFluidEngineAreIgnoredWithAWarning) {
  TempDir dir("fluid_runs");
  Outcome o = run_cli(dir.path(), {"run", "--runs", "3", "--set", "horizon_s=60", "--set",
                                   "incident.start_s=10", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_FALSE(nlohmann::json::parse(o.out).contains("montecarlo")) << o.out.substr(0, 300);
  EXPECT_NE(o.err.find("warning: --runs: ignored"), std::string::npos) << o.err;
}

// --out /dev/stdout into a pipe: the link leads to a pipe, not to a path,
// and was refused as "a symbolic link to nothing".
TEST(BadInputOut, OutToDevStdoutIntoAPipeIsWritten) {
  TempDir dir("out_dev_stdout");
  std::string cmd = "cd " + shell_quote(dir.path().string()) + " && set -o pipefail && " +
                    RETRYSTORM_BIN + " run --out /dev/stdout | cat > piped.txt";
  int status = std::system(("bash -c " + shell_quote(cmd)).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_all(dir.path() / "piped.txt").rfind("order-status:", 0), 0u)
      << read_all(dir.path() / "piped.txt").substr(0, 200);
}

// `--out -` is standard output, as without --out (it wrote a file named "-").
TEST(BadInputOut, OutDashIsStandardOutput) {
  TempDir dir("out_dash");
  Outcome o = run_cli(dir.path(), {"run", "--out", "-"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out.rfind("order-status:", 0), 0u) << o.out.substr(0, 200);
  EXPECT_FALSE(fs::exists(dir.path() / "-"));
}

// Regression (fixed): --out naming an existing directory: the output is written to
// DIR.tmp.PID, the rename onto the directory throws std::filesystem_error,
// main() reports it as "other failure" (exit 1, not 2) and the temporary file
// (the whole output) is left behind beside the directory.
TEST(BadInputOut, OutNamingADirectoryIsBadInputAndLeavesNoTemporaryFile) {
  TempDir dir("out_is_dir");
  fs::create_directory(dir.path() / "result.out");
  Outcome o = run_cli(dir.path(), {"run", "--format", "json", "--out", "result.out"});
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("--out"), std::string::npos) << o.err;
  EXPECT_TRUE(fs::is_directory(dir.path() / "result.out"));
  EXPECT_TRUE(fs::is_empty(dir.path() / "result.out"));
  auto stray = stray_tmp_files(dir.path(), "result.out");
  EXPECT_TRUE(stray.empty()) << "left behind: " << (stray.empty() ? "" : stray.front());
}

// Good input with --out: exit 0, the whole file, nothing on standard output,
// no temporary file left beside it.
struct GoodCase {
  std::string name;
  std::vector<std::string> args;
  std::string out;  // file name
  std::string starts_with;
};

TEST(GoodInputOut, WritesTheFileAtomicallyAndExitsZero) {
  const GoodCase cases[] = {
      {"run_json", {"run", "--preset", "order-status", "--format", "json"}, "run.json", "{"},
      {"run_text", {"run", "--preset", "primary-failover"}, "run.txt", ""},
      {"run_csv", {"run", "--scenario", "s.yaml", "--format", "csv"}, "series.csv", "t_s"},
      {"ladder_json",
       {"ladder", "--preset", "primary-failover", "--format", "json"},
       "l.json",
       "{"},
      {"tipping_json",
       {"tipping", "--preset", "primary-failover", "--grid", "0.5", "--format", "json"},
       "t.json",
       "{"},
      {"sweep_csv",
       {"sweep", "--scenario", "s.yaml", "--vary", "client.retries=0:2:1", "--threads", "1"},
       "sweep.csv",
       ""},
  };
  TempDir dir("good");
  write_file(dir.path() / "s.yaml", kGoodYaml);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = c.args;
    args.push_back("--out");
    args.push_back(c.out);
    Outcome o = run_cli(dir.path(), args);
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out.substr(0, 200);
    ASSERT_TRUE(fs::exists(dir.path() / c.out));
    std::string text = read_all(dir.path() / c.out);
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text.rfind(c.starts_with, 0), 0u) << text.substr(0, 80);
    EXPECT_TRUE(stray_tmp_files(dir.path(), c.out).empty());
  }
  // The JSON files are whole documents with the contract's fields.
  auto run = nlohmann::json::parse(read_all(dir.path() / "run.json"));
  for (const char* field : {"scenario", "metrics", "series", "trace"})
    EXPECT_TRUE(run.contains(field)) << field;
  EXPECT_EQ(run["metrics"]["goodput_recovery_s"], nullptr);
  auto tipping = nlohmann::json::parse(read_all(dir.path() / "t.json"));
  EXPECT_EQ(tipping["on_grid_s"], 1.5);
  auto ladder = nlohmann::json::parse(read_all(dir.path() / "l.json"));
  EXPECT_EQ(ladder["rows"].size(), 5u);
  // A sweep of retries 0, 1, 2: a header and three rows.
  std::string csv = read_all(dir.path() / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  // The whole directory: only what we wrote and the outputs.
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(GoodInputOut, OverwritesAnExistingFileWhole) {
  TempDir dir("overwrite");
  write_file(dir.path() / "out.json", std::string(3'000'000, 'x'));
  Outcome o = run_cli(
      dir.path(), {"tipping", "--preset", "order-status", "--format", "json", "--out", "out.json"});
  EXPECT_EQ(o.status, 0) << o.err;
  auto t = nlohmann::json::parse(read_all(dir.path() / "out.json"));  // no trailing x
  EXPECT_EQ(t["on_grid_s"], 12.0);
  EXPECT_TRUE(stray_tmp_files(dir.path(), "out.json").empty());
}

TEST(GoodInput, SetOverridesAFileAndExitsZero) {
  TempDir dir("set_over_file");
  write_file(dir.path() / "s.yaml", kGoodYaml);
  Outcome o = run_cli(dir.path(), {"run", "--scenario", "s.yaml", "--set", "client.retries=0",
                                   "--format", "json", "--no-trace"});
  ASSERT_EQ(o.status, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["scenario"]["client"]["retries"], 0);
  EXPECT_EQ(j["scenario"]["name"], "tiny");
  EXPECT_TRUE(j["trace"].empty());
}

}  // namespace
