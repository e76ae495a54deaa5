// Sweeps over a range of their grid (shards, Dask tasks) and `merge`: any
// partition of the grid gives the rows of the unsharded sweep, byte for byte,
// because each point's seeds depend only on the base seed and the point's
// index (docs/distributed.md). Merge refuses shards of another sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/sweep.hpp"
#include "cli_run.hpp"
#include "engines/engine.hpp"
#include "formats/result_json.hpp"
#include "formats/text_report.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

using testing::read_all;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

const std::vector<SweepAxis> kAxes = {{"client.retries", 0, 4, 1},
                                      {"incident.duration_s", 10, 20, 10}};

std::string rows_json(const std::vector<SweepRow>& rows) {
  return sweep_json(kAxes, rows).dump();
}

// Ranges of the grid, run on any number of threads, are slices of the whole.
TEST(SweepRange, RangesAreSlicesOfTheWholeGrid) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"}});
  SweepOptions whole;
  whole.runs = 2;
  whole.seed = 7;
  std::vector<SweepRow> all = run_sweep(s, kAxes, whole);
  ASSERT_EQ(all.size(), 10u);
  for (size_t first : {0u, 3u, 9u}) {
    SweepOptions part = whole;
    part.first = first;
    part.count = 4;
    part.threads = first == 3 ? 1 : 2;
    part.validate_grid = first != 9;
    std::vector<SweepRow> rows = run_sweep(s, kAxes, part);
    size_t end = std::min<size_t>(first + 4, 10);
    ASSERT_EQ(rows.size(), end - first);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].point, first + i);
    EXPECT_EQ(rows_json(rows), rows_json({all.begin() + first, all.begin() + end}));
  }
}

// With a base seed every point has its own streams; without one every point
// starts from the scenario's seed (the sweep as it always was).
TEST(SweepRange, SeedsComeFromTheBaseSeedAndThePointIndex) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"}});
  std::vector<SweepAxis> same = {{"client.retries", 2, 2, 1}, {"incident.duration_s", 20, 21, 1}};
  SweepOptions seeded;
  seeded.seed = 7;
  std::vector<SweepRow> rows = run_sweep(s, same, seeded);
  ASSERT_EQ(rows.size(), 2u);
  Scenario point0 = s;
  set_key(point0, "seed", KeyValue{7.0});
  set_key(point0, "incident.duration_s", KeyValue{20.0});
  set_key(point0, "client.retries", KeyValue{2.0});
  EXPECT_EQ(metrics_json(rows[0].metrics), metrics_json(compute_metrics(run_engine(point0))));

  std::vector<SweepRow> plain = run_sweep(s, same);
  Scenario base_seed = point0;
  base_seed.seed = s.seed;
  EXPECT_EQ(metrics_json(plain[0].metrics), metrics_json(compute_metrics(run_engine(base_seed))));
}

TEST(SweepRange, ReplicationsGiveTheMeansInTheCsv) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"}});
  SweepOptions options;
  options.runs = 3;
  std::vector<SweepRow> rows = run_sweep(s, {{"client.retries", 1, 1, 1}}, options);
  ASSERT_EQ(rows.size(), 1u);
  std::string csv = sweep_csv({{"client.retries", 1, 1, 1}}, rows);
  // Flags read as the share of replications: a number, never true/false.
  EXPECT_EQ(csv.find("true"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("false"), std::string::npos) << csv;
  nlohmann::json j = sweep_json({{"client.retries", 1, 1, 1}}, rows);
  EXPECT_EQ(j["rows"][0]["montecarlo"]["failed_fraction"]["n"], 3);
  EXPECT_TRUE(j["rows"][0]["montecarlo"].contains("backlog_growing"));
}

// A graph's service may be named with a comma or a quote: the header's
// axis is one CSV field, as the rows' are (it split the header in two).
TEST(SweepRange, TheHeaderQuotesAnAxisPath) {
  std::string csv = sweep_csv({{"services.a,b\"c.capacity_per_s", 100, 200, 100}}, {});
  EXPECT_EQ(csv.rfind("\"services.a,b\"\"c.capacity_per_s\",", 0), 0u) << csv;
}

TEST(SweepRange, BadReplicationsAndSeedsFailBeforeWork) {
  Scenario s = testing::preset("order-status");
  SweepOptions options;
  options.runs = 0;
  EXPECT_THROW(run_sweep(s, kAxes, options), InputError);
  options.runs = 1;
  options.seed = 0.5;
  EXPECT_THROW(run_sweep(s, kAxes, options), InputError);
  options.seed = 1;
  EXPECT_THROW(run_sweep(s, {{"seed", 1, 3, 1}}, options), InputError);
}

// The grid's last seed, S + points x runs - 1, is checked before any work:
// a seed too large for the grid was refused only by the point that reached
// past kMaxSeed (shard 2/2 of this grid failed, shard 1/2 wrote its file).
TEST(SweepRange, ASeedTooLargeForTheGridIsRefusedBeforeAnyWork) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"}, {"horizon_s", "100"}});
  const std::vector<SweepAxis> two = {parse_axis("client.retries=0,1")};
  SweepOptions options;
  options.runs = 2;
  options.seed = kMaxSeed - 2;  // 4 seeds from here: the last is 2^53
  options.first = 0;
  options.count = 1;  // the first point alone would fit
  try {
    run_sweep(s, two, options);
    ADD_FAILURE() << "a base seed past what the grid allows ran";
  } catch (const InputError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("--seed: 9007199254740989 with 2 points x 2 runs"), std::string::npos)
        << text;
    EXPECT_NE(text.find("at most 9007199254740988"), std::string::npos) << text;
  }
  options.seed = kMaxSeed - 3;  // the last seed is kMaxSeed itself
  EXPECT_EQ(sweep_grid(s, two, options).points, 2u);
  options.runs = 1;
  options.seed = kMaxSeed - 1;
  EXPECT_EQ(sweep_grid(s, two, options).points, 2u);
  options.seed = kMaxSeed;
  EXPECT_THROW(sweep_grid(s, two, options), InputError);
}

// Every point runs the sweep's replications: an axis of runs was accepted
// and its rows all ran --runs (1), whatever their label said.
TEST(SweepAxes, RunsAreNotAnAxis) {
  Scenario s = testing::preset("order-status");
  try {
    run_sweep(s, {parse_axis("runs=1,5")});
    ADD_FAILURE() << "--vary runs ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vary runs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--runs N"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_sweep(s, {{"runs", 1, 3, 1}}), InputError);
}

// cost_balanced_ranges as it was when shards were first cut (the shard
// files written since depend on these cuts): every range's end listed.
std::vector<std::pair<size_t, size_t>> listed_ranges(const std::vector<double>& costs,
                                                     size_t parts) {
  parts = std::max<size_t>(parts, 1);
  size_t n = costs.size();
  double total = 0;
  for (double c : costs) total += c;
  std::vector<size_t> ends(parts);
  if (!(total > 0) || !std::isfinite(total)) {
    for (size_t k = 0; k < parts; ++k) ends[k] = (k + 1) * n / parts;
  } else {
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n && k < parts; ++i) {
      double middle = sum + costs[i] / 2;
      while (k < parts - 1 && middle >= total * static_cast<double>(k + 1) / parts) ends[k++] = i;
      sum += costs[i];
    }
    for (; k < parts; ++k) ends[k] = n;
  }
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t k = 0, first = 0; k < parts; first = ends[k++])
    out.emplace_back(first, ends[k] - first);
  return out;
}

// Costs of many shapes: equal, climbing, random, with zeros, one that
// dwarfs the rest, none (equal counts), and ones that are no estimate.
std::vector<std::vector<double>> cost_shapes() {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> draw(0, 1);
  std::vector<std::vector<double>> shapes = {{},
                                             {1},
                                             {0, 0, 0},
                                             {1, 1},
                                             {5, 0, 0, 5},
                                             {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                                             {1e-9, 1, 1e9, 1},
                                             {1, std::numeric_limits<double>::infinity(), 1},
                                             {1, std::nan(""), 1}};
  for (size_t n : {3u, 10u, 37u, 200u}) {
    std::vector<double> random_costs(n), with_zeros(n), climbing(n);
    for (size_t i = 0; i < n; ++i) {
      random_costs[i] = draw(random);
      with_zeros[i] = i % 3 ? 0 : draw(random) * 100;
      climbing[i] = 0.1 * static_cast<double>(i % 5 + 1);
    }
    shapes.insert(shapes.end(), {random_costs, with_zeros, climbing});
  }
  return shapes;
}

// One range computed alone is the range of the whole cut, for every shard
// of every count: shard K of N no longer lists N ranges to read one.
TEST(SweepShards, OneRangeIsThatRangeOfTheWholeCut) {
  for (const std::vector<double>& costs : cost_shapes())
    for (size_t parts : {1u, 2u, 3u, 4u, 7u, 10u, 13u, 64u, 250u, 1000u}) {
      const auto all = listed_ranges(costs, parts);
      ASSERT_EQ(cost_balanced_ranges(costs, parts), all);
      for (size_t k = 0; k < parts; ++k)
        ASSERT_EQ(cost_balanced_range(costs, parts, k), all[k])
            << costs.size() << " points, range " << k << " of " << parts;
    }
}

// Known cuts of two equal points into a hundred million shards: a point
// goes to the range its first half falls in, and the rest are empty.
TEST(SweepShards, AHundredMillionShardsCutTwoPoints) {
  const std::vector<double> two = {1, 1};
  const size_t parts = 100'000'000;
  using Range = std::pair<size_t, size_t>;
  EXPECT_EQ(cost_balanced_range(two, parts, 0), Range(0, 0));
  EXPECT_EQ(cost_balanced_range(two, parts, 24'999'999), Range(0, 0));
  EXPECT_EQ(cost_balanced_range(two, parts, 25'000'000), Range(0, 1));
  EXPECT_EQ(cost_balanced_range(two, parts, 25'000'001), Range(1, 0));
  EXPECT_EQ(cost_balanced_range(two, parts, 74'999'999), Range(1, 0));
  EXPECT_EQ(cost_balanced_range(two, parts, 75'000'000), Range(1, 1));
  EXPECT_EQ(cost_balanced_range(two, parts, 75'000'001), Range(2, 0));
  EXPECT_EQ(cost_balanced_range(two, parts, parts - 1), Range(2, 0));
  // The same cut at a hundred shards, listed whole.
  const auto hundred = listed_ranges(two, 100);
  EXPECT_EQ(hundred[25], Range(0, 1));
  EXPECT_EQ(hundred[75], Range(1, 1));
}

// The command line: `sweep --shard K/N` files merged in any order.
std::vector<std::string> sweep_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "sweep",     "--vary", "client.retries=0:4:1", "--vary", "incident.duration_s=10:20:10",
      "--threads", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Writes the N shards of a sweep; returns their file names, last first.
std::vector<std::string> write_shards(const TempDir& dir, size_t n,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> files;
  for (size_t k = 1; k <= n; ++k) {
    std::string file = "shard-" + std::to_string(k) + "-of-" + std::to_string(n) + ".json";
    std::vector<std::string> args = extra;
    args.insert(args.end(),
                {"--shard", std::to_string(k) + "/" + std::to_string(n), "--out", file});
    testing::Outcome o = run_cli(dir.path(), sweep_args(args));
    EXPECT_EQ(o.status, 0) << o.err;
    files.insert(files.begin(), file);
  }
  return files;
}

std::vector<std::string> merge_args(const std::vector<std::string>& files,
                                    std::vector<std::string> extra) {
  std::vector<std::string> args = {"merge"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(SweepShards, MergedShardsAreTheUnshardedSweep) {
  TempDir dir("sweep_shards_merge");
  for (const char* format : {"csv", "json"}) {
    testing::Outcome whole = run_cli(dir.path(), sweep_args({"--format", format}));
    ASSERT_EQ(whole.status, 0) << whole.err;
    for (size_t n : {1u, 3u, 4u, 13u}) {  // 13: more shards than the 10 points
      std::vector<std::string> files = write_shards(dir, n, {"--format", format});
      testing::Outcome merged = run_cli(dir.path(), merge_args(files, {}));
      ASSERT_EQ(merged.status, 0) << merged.err;
      EXPECT_EQ(merged.out, whole.out) << format << " in " << n << " shards";
    }
  }
  // --format on merge overrides the sweep's.
  testing::Outcome csv = run_cli(dir.path(), sweep_args({}));
  std::vector<std::string> files = write_shards(dir, 2, {"--format", "json"});
  testing::Outcome merged =
      run_cli(dir.path(), merge_args(files, {"--format", "csv", "--out", "m.csv"}));
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(read_all(dir.path() / "m.csv"), csv.out);
}

TEST(SweepShards, SeededReplicationsMergeToTheUnshardedSweep) {
  TempDir dir("sweep_shards_seeded");
  std::vector<std::string> agent = {"--set", "engine=agent", "--runs", "2", "--seed", "11"};
  std::vector<std::string> json = agent;
  json.insert(json.end(), {"--format", "json"});
  testing::Outcome whole = run_cli(dir.path(), sweep_args(json));
  ASSERT_EQ(whole.status, 0) << whole.err;
  testing::Outcome merged = run_cli(dir.path(), merge_args(write_shards(dir, 3, json), {}));
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
}

// Each refusal exits 2 and names the file (or the missing shard).
void expect_refused(const TempDir& dir, const std::vector<std::string>& files,
                    const std::string& named) {
  testing::Outcome o = run_cli(dir.path(), merge_args(files, {}));
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_NE(o.err.find(named), std::string::npos) << o.err;
}

TEST(SweepShards, MergeRefusesMissingDuplicateOverlappingAndMismatchedShards) {
  TempDir dir("sweep_shards_refused");
  std::vector<std::string> three = write_shards(dir, 3, {});  // 3, 2, 1
  expect_refused(dir, {three[0], three[2]}, "shard 2/3 is missing");
  expect_refused(dir, {three[0], three[1], three[2], three[1]}, "shard-2-of-3.json");
  write_file(dir.path() / "copy.json", read_all(dir.path() / three[1]));
  expect_refused(dir, {three[0], three[1], "copy.json", three[2]}, "copy.json");

  std::vector<std::string> two = write_shards(dir, 2, {});
  expect_refused(dir, {three[2], two[0]}, two[0]);  // shard of 2 among shards of 3

  // A range edited to overlap its neighbour.
  nlohmann::json edited = nlohmann::json::parse(read_all(dir.path() / three[1]));
  edited["shard"]["first"] = 2;
  write_file(dir.path() / "overlap.json", edited.dump());
  expect_refused(dir, {three[0], "overlap.json", three[2]}, "overlap.json");

  // Another grid, another seed, other runs, another scenario.
  std::vector<std::vector<std::string>> others = {
      {"--set", "client.retries=1"}, {"--seed", "5"}, {"--runs", "2"}};
  for (size_t i = 0; i < others.size(); ++i) {
    std::vector<std::string> args = others[i];
    args.insert(args.end(), {"--shard", "2/3", "--out", "other.json"});
    ASSERT_EQ(run_cli(dir.path(), sweep_args(args)).status, 0);
    expect_refused(dir, {three[2], "other.json", three[0]}, "other.json");
  }
  testing::Outcome o = run_cli(dir.path(), {"sweep", "--vary", "client.retries=0:5:1", "--shard",
                                            "2/3", "--out", "other.json"});
  ASSERT_EQ(o.status, 0) << o.err;
  expect_refused(dir, {three[2], "other.json", three[0]}, "other.json");

  write_file(dir.path() / "garbage.json", "{\"rows\": []}");
  expect_refused(dir, {"garbage.json"}, "garbage.json");
  // Tampered fields are named in our words, not the JSON library's.
  nlohmann::json nulled = nlohmann::json::parse(read_all(dir.path() / three[2]));
  nulled["shard"] = nullptr;
  write_file(dir.path() / "nulled.json", nulled.dump());
  expect_refused(dir, {"nulled.json"}, "nulled.json: shard.index is missing");
  nlohmann::json versioned = nlohmann::json::parse(read_all(dir.path() / three[2]));
  versioned["version"] = "999";
  write_file(dir.path() / "versioned.json", versioned.dump());
  for (const char* name : {"nulled.json", "versioned.json"}) {
    testing::Outcome tampered = run_cli(dir.path(), merge_args({name}, {}));
    EXPECT_EQ(tampered.err.find("json.exception"), std::string::npos) << tampered.err;
  }
  expect_refused(dir, {"versioned.json"}, "versioned.json: not a retrystorm sweep shard");
  expect_refused(dir, {"absent.json"}, "absent.json");
}

// text is risk's format, not a sweep's: refused once the shards say they are a sweep's.
TEST(SweepShards, MergeRefusesAFormatThatIsNotASweeps) {
  TempDir dir("sweep_shards_format");
  testing::Outcome o =
      run_cli(dir.path(), merge_args(write_shards(dir, 2, {}), {"--format", "text"}));
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_NE(o.err.find("--format: 'text' is not allowed here; choose one of csv, json"),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
}

TEST(SweepShards, BadShardSpecsAreRefused) {
  TempDir dir("sweep_shards_spec");
  for (const char* spec : {"0/3", "4/3", "a/3", "3", "1/0", "1.5/3"}) {
    testing::Outcome o = run_cli(dir.path(), sweep_args({"--shard", spec}));
    EXPECT_EQ(o.status, 2) << spec;
    EXPECT_NE(o.err.find("--shard"), std::string::npos) << o.err;
  }
}

// The seed check through the command line: every shard refuses, the first
// as well as the one holding the last point, and writes nothing.
TEST(SweepShards, EveryShardRefusesASeedTooLargeForTheGrid) {
  TempDir dir("sweep_shards_seed");
  for (const char* k : {"1/2", "2/2"}) {
    testing::Outcome o =
        run_cli(dir.path(), {"sweep", "--preset", "order-status", "--set", "horizon_s=100", "--set",
                             "engine=agent", "--vary", "client.retries=0,1", "--runs", "2",
                             "--seed", "9007199254740989", "--shard", k, "--out", "shard.json"});
    EXPECT_EQ(o.status, 2) << k << ": " << o.err;
    EXPECT_NE(o.err.find("--seed: 9007199254740989"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("at most 9007199254740988"), std::string::npos) << o.err;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "shard.json")) << k;
  }
}

// A shard of a hundred million of a two-point grid is cut alone: listing
// every range took 2.9 GB and 25 s.
TEST(SweepShards, AShardOfAHundredMillionIsCutAlone) {
  TempDir dir("sweep_shards_many");
  for (const char* k : {"1/100000000", "100000000/100000000"}) {
    testing::Outcome o =
        run_cli(dir.path(), {"sweep", "--preset", "order-status", "--set", "horizon_s=200",
                             "--vary", "client.retries=0,1", "--shard", k});
    ASSERT_EQ(o.status, 0) << k << ": " << o.err;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["shard"]["of"], 100000000);
    EXPECT_EQ(j["shard"]["count"], 0) << k;  // both points fall in ranges between
    EXPECT_EQ(j["grid"]["points"], 2);
  }
}

// Without --runs a sweep takes the scenario's runs where `run` does (the
// agent engine): `--set runs=2` was ignored and every row was one run.
TEST(SweepShards, TheScenariosRunsAreTheSweepsWithoutRuns) {
  TempDir dir("sweep_runs_key");
  auto sweep = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep",  "--vary", "client.retries=0,1", "--format", "json",
                                     "--seed", "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::Outcome o = run_cli(dir.path(), args);
    EXPECT_EQ(o.status, 0) << o.err;
    return o.out;
  };
  const std::string key = sweep({"--set", "engine=agent", "--set", "runs=2"});
  EXPECT_EQ(key, sweep({"--set", "engine=agent", "--runs", "2"}));
  EXPECT_EQ(nlohmann::json::parse(key)["rows"][0]["montecarlo"]["recovered"]["n"], 2);
  // --runs still decides when given; the fluid engine ignores the key, as `run` does.
  EXPECT_EQ(sweep({"--set", "engine=agent", "--set", "runs=2", "--runs", "1"}),
            sweep({"--set", "engine=agent"}));
  EXPECT_EQ(sweep({"--set", "runs=2"}), sweep({}));
  testing::Outcome o = run_cli(dir.path(), {"sweep", "--vary", "runs=1,5"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--runs N"), std::string::npos) << o.err;
}

// An axis may list its values (`--vary PATH=V1,V2,...`): the grid takes them
// in the order given, each validated at its points, and a listed axis whose
// values step evenly gives the rows of the range.
TEST(SweepAxes, ListedValuesRunInTheOrderGiven) {
  SweepAxis listed = parse_axis("client.retries=5,0,1");
  EXPECT_EQ(listed.values(), (std::vector<double>{5, 0, 1}));
  EXPECT_EQ(listed.point_count(), 3);
  EXPECT_EQ(listed.lowest(), 0);
  EXPECT_EQ(listed.highest(), 5);
  EXPECT_EQ(parse_axis("client.retries=2").values(), (std::vector<double>{2}));
  Scenario s = testing::preset("order-status");
  std::vector<SweepRow> rows = run_sweep(s, {listed});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].values, (std::vector<double>{5}));
  std::vector<SweepRow> even = run_sweep(s, {parse_axis("client.retries=0,1,2")});
  std::vector<SweepRow> range = run_sweep(s, {parse_axis("client.retries=0:2:1")});
  EXPECT_EQ(sweep_json({listed}, even).dump(), sweep_json({listed}, range).dump());
  EXPECT_EQ(metrics_json(rows[1].metrics).dump(), metrics_json(range[0].metrics).dump())
      << "the list's second point (0 retries) is the range's first";
  for (const char* bad :
       {"client.retries=1,,2", "client.retries=1,x", "client.retries=", "client.retries=1,nan"})
    EXPECT_THROW(parse_axis(bad), InputError) << bad;
  EXPECT_THROW(run_sweep(s, {parse_axis("client.retries=0,-1")}), InputError);
}

TEST(SweepAxes, ListedAxesShardAndMergeAsRanges) {
  TempDir dir("sweep_listed");
  std::vector<std::string> args = {
      "sweep",    "--vary", "client.retries=3,0,1", "--vary", "incident.duration_s=20,10",
      "--format", "json"};
  testing::Outcome whole = run_cli(dir.path(), args);
  ASSERT_EQ(whole.status, 0) << whole.err;
  std::vector<std::string> files;
  for (const char* k : {"2/2", "1/2"}) {
    std::string file = std::string("listed-") + k[0] + ".json";
    std::vector<std::string> shard = args;
    shard.insert(shard.end(), {"--shard", k, "--out", file});
    ASSERT_EQ(run_cli(dir.path(), shard).status, 0);
    files.push_back(file);
  }
  testing::Outcome merged = run_cli(dir.path(), merge_args(files, {}));
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  nlohmann::json j = nlohmann::json::parse(whole.out);
  ASSERT_EQ(j["rows"].size(), 6u);
  EXPECT_EQ(j["rows"][0]["values"]["client.retries"], 3.0);
  EXPECT_EQ(j["rows"][0]["values"]["incident.duration_s"], 20.0);
}

}  // namespace
}  // namespace retrystorm
