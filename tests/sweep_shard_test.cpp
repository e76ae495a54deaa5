// Sweeps over a range of their grid (shards, Dask tasks) and `merge`: any
// partition of the grid gives the rows of the unsharded sweep, byte for byte,
// because each point's seeds depend only on the base seed and the point's
// index (docs/distributed.md). Merge refuses shards of another sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
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

TEST(SweepShards, BadShardSpecsAreRefused) {
  TempDir dir("sweep_shards_spec");
  for (const char* spec : {"0/3", "4/3", "a/3", "3", "1/0", "1.5/3"}) {
    testing::Outcome o = run_cli(dir.path(), sweep_args({"--shard", spec}));
    EXPECT_EQ(o.status, 2) << spec;
    EXPECT_NE(o.err.find("--shard"), std::string::npos) << o.err;
  }
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
