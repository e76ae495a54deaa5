// `risk --shard K/N` and `merge` (docs/distributed.md): the replications cut
// into shards anywhere give, merged, the unsharded answer byte for byte; a
// shard that does not belong is refused by name.
#include "formats/risk_shard.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "app/commands.hpp"
#include "cli_run.hpp"
#include "formats/risk_report.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

using testing::Outcome;
using testing::run_cli;

Scenario random_server() {
  auto keys = testing::random_server_keys();
  keys["horizon_s"] = "300";
  keys["incident.start_s"] = "60";
  keys["incident.duration_s"] = "30";
  keys["incident.capacity_factor"] = "0.3";
  return testing::preset("order-status", keys);
}

TEST(RiskShard, EvidenceInPiecesGivesTheWholeAnswer) {
  RiskOptions o;
  o.loads = {0.8, 1.0};
  o.runs = 12;
  o.exact = false;
  const Scenario s = random_server();
  std::vector<RiskEvidence> a = gather_risk(s, o, 0, 5), b = gather_risk(s, o, 5, 7);
  for (size_t l = 0; l < a.size(); ++l) {
    a[l].calm.insert(a[l].calm.end(), b[l].calm.begin(), b[l].calm.end());
    a[l].pushed.insert(a[l].pushed.end(), b[l].pushed.begin(), b[l].pushed.end());
  }
  EXPECT_EQ(risk_json(summarize_risk(s, o, a)), risk_json(assess_risk(s, o)));
  // Through JSON and back, as a shard file carries it.
  EXPECT_EQ(risk_json(summarize_risk(s, o, evidence_of(evidence_json(a), "test"))),
            risk_json(assess_risk(s, o)));
}

TEST(RiskShard, TheRangesCoverEveryRunOnce) {
  size_t next = 0;
  for (size_t k = 1; k <= 7; ++k) {
    const ShardRange r = risk_shard_range(k, 7, 100);
    EXPECT_EQ(r.first, next);
    next += r.count;
  }
  EXPECT_EQ(next, 100u);
  EXPECT_EQ(risk_shard_range(2, 5, 2).count, 0u);  // more shards than runs: some empty
}

// examples/random-tipping.yaml, with some keys set as --set sets them.
Scenario random_tipping(const std::map<std::string, std::string>& sets) {
  const std::string path = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  Scenario s = scenario_from_text(testing::read_all(path), path);
  for (const auto& [key, value] : sets) set_key_text(s, key, value);
  validate(s);
  return s;
}

// What a check refuses with no CPU to spend: the work it priced, in words.
std::string priced(const std::function<void(const app::CostBudget&)>& check) {
  app::CostBudget none;
  none.limits.max_seconds = 0;
  try {
    check(none);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

// A shard is priced for its own work: its runs and its share of the
// splitting replicas, as gather_risk cuts them (split_range), and no exact
// chain, which merge solves. Shard 1 of 8 was priced for all 8 replicas
// (28,801 runs, about 252 s: refused) where it runs one (3,601, about 31 s),
// and a shard of 7 loads for chains of about 63 s it never solves.
TEST(RiskShard, AShardIsPricedForItsOwnShareOfTheWork) {
  RiskRequest split{random_tipping({}), {}, std::nullopt};
  split.options.runs = 8;
  split.options.exact = false;
  split.options.splitting = true;
  split.options.split_effort = 400;
  split.options.split_runs = 8;
  EXPECT_NE(priced([&](const auto& b) {
              app::check_risk_shard(split, 0, 1, b);
            }).find(" make 3601 runs of "),
            std::string::npos);
  EXPECT_NO_THROW(app::check_risk_shard(split, 0, 1, app::CostBudget{}));
  EXPECT_NE(priced([&](const auto& b) {
              app::check_risk_shard(split, 8, b);
            }).find(" make 28808 runs of "),
            std::string::npos)
      << "the whole request: 8 runs and 8 replicas of 3,600 walks";
  EXPECT_THROW(app::check_risk_shard(split, 8, app::CostBudget{}), InputError);
  // 3 shards of 9 runs, 4 replicas: 1, 1 and 2, as the shards run them.
  split.options.runs = 9;
  split.options.split_runs = 4;
  for (const auto& [first, count, replicas] :
       {std::tuple{0, 3, 1}, std::tuple{3, 3, 1}, std::tuple{6, 3, 2}}) {
    ASSERT_EQ(split_range(first, count, 9, 4).second, replicas);
    EXPECT_NE(priced([&](const auto& b) {
                app::check_risk_shard(split, first, count, b);
              }).find(" make " + std::to_string(3 + replicas * 3600) + " runs of "),
              std::string::npos)
        << first;
  }
  // Seven loads with exact chains: the shard prices its 7 runs alone; merge
  // and the whole request price the chains.
  RiskRequest chains{
      random_tipping({{"server.queue_limit", "40"}, {"client.timeout_s", "2"}}), {}, std::nullopt};
  chains.options.loads = {0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1};
  chains.options.runs = 2;
  chains.options.horizon_s = 60;
  const std::string shard = priced([&](const auto& b) { app::check_risk_shard(chains, 0, 1, b); });
  EXPECT_NE(shard.find(" make 7 runs of "), std::string::npos) << shard;
  EXPECT_EQ(shard.find("exact chains"), std::string::npos) << shard;
  EXPECT_NO_THROW(app::check_risk_shard(chains, 0, 1, app::CostBudget{}));
  EXPECT_NE(priced([&](const auto& b) {
              app::check_risk_shard(chains, 2, b);
            }).find("and exact chains of about"),
            std::string::npos);
  EXPECT_NE(priced([&](const auto& b) { app::check_risk_merge(chains, b); }).find("exact chains"),
            std::string::npos);
}

TEST(RiskShard, EvidenceFromAFileIsChecked) {
  EXPECT_THROW(
      evidence_of(nlohmann::json::parse(R"([{"calm": [[null, null, 0, null, -1]]}])"), "f"),
      InputError);
  EXPECT_THROW(evidence_of(nlohmann::json::parse(R"([{"calm": [[null, null, 2, null, 1]]}])"), "f"),
               InputError);
  EXPECT_THROW(evidence_of(nlohmann::json::parse(R"([{"calm": [[1, 2]]}])"), "f"), InputError);
  EXPECT_THROW(evidence_of(nlohmann::json::parse(R"({"calm": []})"), "f"), InputError);
  // Splitting replicas: a product of shares in [0, 1], whole walks, a path of whole numbers.
  EXPECT_EQ(
      evidence_of(nlohmann::json::parse(
                      R"([{"calm": [], "pushed": [], "split": [[0.5, [1, 0.5], 12, [[3, 9]]]]}])"),
                  "f")[0]
          .split[0]
          .tipped_path[0]
          .seed,
      9u);
  for (const char* bad : {R"([{"calm": [], "pushed": [], "split": [[2, [], 1, []]]}])",
                          R"([{"calm": [], "pushed": [], "split": [[0.5, [-1], 1, []]]}])",
                          R"([{"calm": [], "pushed": [], "split": [[0.5, [], -1, []]]}])",
                          R"([{"calm": [], "pushed": [], "split": [[0.5, [], 1, [[1]]]]}])",
                          R"([{"calm": [], "pushed": [], "split": {}}])"})
    EXPECT_THROW(evidence_of(nlohmann::json::parse(bad), "f"), InputError) << bad;
}

class RiskShardCli : public ::testing::Test {
 protected:
  testing::TempDir dir{"risk_shard"};
  std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";

  Outcome risk(std::vector<std::string> extra) {
    std::vector<std::string> args = {"risk", "--scenario", example, "--loads", "0.8,1", "--runs",
                                     "9",    "--horizon",  "300",   "--seed",  "7"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(dir.path(), args);
  }
};

TEST_F(RiskShardCli, MergedShardsAreTheUnshardedAnswer) {
  for (const std::string format : {"json", "text"}) {
    const Outcome whole = risk({"--format", format});
    ASSERT_EQ(whole.status, 0) << whole.err;
    for (const std::string k : {"1", "2", "3", "4"})
      ASSERT_EQ(risk({"--format", format, "--shard", k + "/4", "--out", k + ".json"}).status, 0);
    const Outcome merged = run_cli(dir.path(), {"merge", "3.json", "1.json", "4.json", "2.json"});
    ASSERT_EQ(merged.status, 0) << merged.err;
    EXPECT_EQ(merged.out, whole.out) << format;
  }
}

// Splitting's replicas are independent: each shard runs its share of them
// (3 shards of 9 runs, 4 replicas: 1, 1 and 2) and the merge takes the
// estimate over all, as one machine does (docs/distributed.md).
TEST_F(RiskShardCli, SplittingShardsMergeToTheUnshardedAnswer) {
  const std::vector<std::string> split = {
      "--loads", "0.7",          "--splitting", "--split-effort",
      "6",       "--split-runs", "4",           "--split-levels",
      "3",       "--format",     "json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = split;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const Outcome whole = risk(with({}));
  ASSERT_EQ(whole.status, 0) << whole.err;
  const nlohmann::json tip = nlohmann::json::parse(whole.out)["levels"][0]["splitting"];
  ASSERT_GT(tip["p"].get<double>(), 0) << "a case where some walks tip";
  ASSERT_FALSE(tip["tipped_path"].empty());
  for (const std::string k : {"1", "2", "3"})
    ASSERT_EQ(risk(with({"--shard", k + "/3", "--out", k + ".json"})).status, 0);
  const Outcome merged = run_cli(dir.path(), {"merge", "2.json", "3.json", "1.json"});
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
}

TEST_F(RiskShardCli, AMapMergesToo) {
  const Outcome whole = risk({"--vary", "client.retries=0,4", "--format", "json"});
  ASSERT_EQ(whole.status, 0) << whole.err;
  for (const std::string k : {"1", "2"})
    ASSERT_EQ(risk({"--vary", "client.retries=0,4", "--format", "json", "--shard", k + "/2",
                    "--out", k + ".json"})
                  .status,
              0);
  const Outcome merged = run_cli(dir.path(), {"merge", "1.json", "2.json"});
  EXPECT_EQ(merged.out, whole.out);
}

TEST_F(RiskShardCli, ShardsThatDoNotBelongAreRefused) {
  ASSERT_EQ(risk({"--shard", "1/2", "--out", "1.json"}).status, 0);
  ASSERT_EQ(risk({"--shard", "2/2", "--out", "2.json"}).status, 0);
  ASSERT_EQ(run_cli(dir.path(),
                    {"risk", "--scenario", example, "--loads", "0.9", "--runs", "9", "--horizon",
                     "300", "--seed", "7", "--shard", "2/2", "--out", "other.json"})
                .status,
            0);
  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const Outcome o = run_cli(dir.path(), args);
    EXPECT_EQ(o.status, 2) << o.out;
    EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
  };
  refused({"merge", "1.json"}, "shard 2/2 is missing");
  refused({"merge", "1.json", "1.json", "2.json"}, "shard 1 again");
  refused({"merge", "1.json", "other.json"}, "merge only the shards of one risk");
  refused({"merge", "1.json", "2.json", "--format", "csv"}, "csv");
  testing::write_file(dir.path() / "bad.json",
                      testing::read_all(dir.path() / "2.json").replace(0, 1, "["));
  refused({"merge", "1.json", "bad.json"}, "bad.json");
  refused({"risk", "--scenario", example, "--splitting", "--vary", "client.retries=0,4", "--shard",
           "1/2"},
          "not a map");
  refused({"risk", "--scenario", example, "--shard", "3/2"}, "--shard");
}

// A map over horizon_s runs each cell to its own horizon: its shards merge
// (their passages were checked against the base scenario's horizon).
TEST_F(RiskShardCli, AMapOverTheHorizonMerges) {
  std::vector<std::string> args = {
      "risk", "--scenario", example,  "--loads",           "1",        "--runs",
      "2",    "--no-exact", "--vary", "horizon_s=100,400", "--format", "json"};
  const Outcome whole = run_cli(dir.path(), args);
  ASSERT_EQ(whole.status, 0) << whole.err;
  for (const std::string k : {"1", "2"}) {
    std::vector<std::string> shard = args;
    shard.insert(shard.end(), {"--shard", k + "/2", "--out", k + ".json"});
    ASSERT_EQ(run_cli(dir.path(), shard).status, 0);
  }
  const Outcome merged = run_cli(dir.path(), {"merge", "1.json", "2.json"});
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
}

// A shard's file is outside input: its index, its own range of passages,
// their times and its counts' types are checked, and a JSON error names the
// file (index 0 of 0 crashed merge; a passage moved between shards, times
// past the horizon and "runs": 4.7 were taken).
TEST_F(RiskShardCli, AShardIsCheckedAgainstItsOwnRange) {
  ASSERT_EQ(risk({"--shard", "1/2", "--out", "1.json"}).status, 0);
  ASSERT_EQ(risk({"--shard", "2/2", "--out", "2.json"}).status, 0);
  const nlohmann::json one = nlohmann::json::parse(testing::read_all(dir.path() / "1.json"));
  const nlohmann::json two = nlohmann::json::parse(testing::read_all(dir.path() / "2.json"));
  auto refused = [&](const nlohmann::json& first, const std::string& says) {
    testing::write_file(dir.path() / "x.json", first.dump());
    // A request changed in both: the shards still belong together.
    nlohmann::json second = two;
    second["request"] = first["request"];
    testing::write_file(dir.path() / "y.json", second.dump());
    const Outcome o = run_cli(dir.path(), {"merge", "x.json", "y.json"});
    EXPECT_EQ(o.status, 2) << o.out;
    EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
  };
  nlohmann::json zero = one;
  zero["shard"]["index"] = 0;
  zero["shard"]["of"] = 0;
  testing::write_file(dir.path() / "zero.json", zero.dump());
  const Outcome crashed = run_cli(dir.path(), {"merge", "zero.json"});
  EXPECT_EQ(crashed.status, 2);
  EXPECT_NE(crashed.err.find("zero.json: shard 0 of 0"), std::string::npos) << crashed.err;
  nlohmann::json moved = one;
  moved["cells"][0][0]["calm"].push_back(two["cells"][0][0]["calm"][0]);
  refused(moved, "x.json: a load holds");
  nlohmann::json late = one;
  late["cells"][0][0]["calm"][0] = {1e308, nullptr, 0, nullptr, 1e308};
  refused(late, "x.json: a passage ends at");
  nlohmann::json fraction = one;
  fraction["request"]["runs"] = 4.7;
  refused(fraction, "x.json: request.runs: 4.7");
  nlohmann::json text = one;
  text["request"]["exact"] = "abc";
  refused(text, "x.json: not a retrystorm risk shard");
}

}  // namespace
}  // namespace retrystorm
