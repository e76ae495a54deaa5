// Multilevel splitting on the agent engine (docs/risk.md, "Rare tipping"):
// a walk replays its path exactly, the estimate agrees with plain Monte
// Carlo where both see tips, does not depend on the threads, and sees a
// chance of about one in a million per hour in seconds where plain Monte
// Carlo sees nothing.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/markov/retry_chain.hpp"
#include "analysis/risk.hpp"
#include "cli_run.hpp"
#include "engines/agent/agent.hpp"
#include "preset_scenario.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

std::vector<double> values(std::span<const double> s) {
  return {s.begin(), s.end()};
}

Scenario random_server(std::map<std::string, std::string> sets) {
  std::map<std::string, std::string> keys = testing::random_server_keys();
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

RiskOptions splitting_only(double load, int effort, int runs) {
  RiskOptions o;
  o.loads = {load};
  o.runs = 2;
  o.exact = false;
  o.splitting = true;
  o.split_effort = effort;
  o.split_runs = runs;
  return o;
}

TEST(RareTipping, AWalkWithoutReseedsIsTheRunItself) {
  const Scenario s = random_server({{"horizon_s", "300"}});
  SplitControl none;
  const RunResult a = run_agent(s), b = run_agent(s, {.split = &none});
  EXPECT_EQ(values(a.series.backlog), values(b.series.backlog));
  EXPECT_EQ(values(a.series.goodput), values(b.series.goodput));
  EXPECT_FALSE(none.stopped_after_events);
}

TEST(RareTipping, AContinuedWalkReplaysItsParentUpToTheEntry) {
  const Scenario s = random_server({{"horizon_s", "600"}});
  SplitControl parent;
  parent.reseeds = {{0, 12345}};
  parent.stop_at_backlog = 20;
  const RunResult first = run_agent(s, {.split = &parent});
  ASSERT_TRUE(parent.stopped_after_events) << "9.5/s against 10/s reaches 20 within 10 minutes";
  // The same path stops at the same event, at the same time.
  SplitControl again = parent;
  again.stopped_after_events.reset();
  run_agent(s, {.split = &again});
  EXPECT_EQ(again.stopped_after_events, parent.stopped_after_events);
  EXPECT_EQ(again.stopped_s, parent.stopped_s);
  // Two children that go on from the entry with their own seeds: every whole
  // step before the entry is the parent's, and they then part ways.
  auto child = [&](uint64_t seed) {
    SplitControl c;
    c.reseeds = {{0, 12345}, {*parent.stopped_after_events, seed}};
    return run_agent(s, {.split = &c});
  };
  const RunResult x = child(1), y = child(2);
  const auto entry_step = static_cast<size_t>(parent.stopped_s / s.step_s);
  for (size_t i = 0; i < entry_step; ++i) {
    EXPECT_EQ(x.series.backlog[i], first.series.backlog[i]) << i;
    EXPECT_EQ(y.series.goodput[i], first.series.goodput[i]) << i;
  }
  EXPECT_NE(values(x.series.backlog), values(y.series.backlog));
}

TEST(RareTipping, SplittingAndPlainMonteCarloAgreeWhereBothWork) {
  // 8 of 10 requests/s for 5 minutes: about one run in ten tips.
  const Scenario s = random_server({{"horizon_s", "300"}});
  RiskOptions o = splitting_only(0.85, 40, 10);
  o.runs = 1000;
  const RiskResult r = assess_risk(s, o);
  const RiskLevel& l = r.levels[0];
  ASSERT_TRUE(l.rare);
  EXPECT_GT(l.enter_within_horizon.k, 20);
  // The two 95% intervals overlap, and each holds the other's estimate or
  // nearly: the same quantity, by two roads.
  EXPECT_LE(l.rare->low, l.enter_within_horizon.high);
  EXPECT_GE(l.rare->high, l.enter_within_horizon.low);
  EXPECT_NEAR(l.rare->p, l.enter_within_horizon.p, 0.5 * l.enter_within_horizon.p);
  ASSERT_FALSE(l.rare->tipped_path.empty());
  EXPECT_EQ(l.rare->tipped_path.front().after_events, 0u);
  // The walk that tipped, replayed, tips.
  Scenario quiet = risk_scenario(s, o);
  quiet.demand.rate_per_s = l.demand_per_s;
  SplitControl replay;
  replay.reseeds = l.rare->tipped_path;
  EXPECT_TRUE(read_passage(run_agent(quiet, {.split = &replay}), r.rule).enter_s);
}

TEST(RareTipping, TheSameSeedGivesTheSameEstimateOnAnyThreads) {
  const Scenario s = random_server({{"horizon_s", "300"}});
  RiskOptions one = splitting_only(0.8, 10, 3), two = one;
  one.threads = 1, two.threads = 2;
  const RareTip a = *assess_risk(s, one).levels[0].rare;
  const RareTip b = *assess_risk(s, two).levels[0].rare;
  EXPECT_EQ(a.p, b.p);
  EXPECT_EQ(a.factors, b.factors);
  EXPECT_EQ(a.engine_runs, b.engine_runs);
  ASSERT_EQ(a.tipped_path.size(), b.tipped_path.size());
  for (size_t i = 0; i < a.tipped_path.size(); ++i)
    EXPECT_EQ(a.tipped_path[i].seed, b.tipped_path[i].seed);
}

TEST(RareTipping, AChanceOfAboutOneInAMillionPerHourInSeconds) {
  // Half load for an hour: plain Monte Carlo's 20 runs see nothing, and
  // would need millions; splitting puts the chance near 1e-6 to 1e-4.
  const Scenario s = random_server({{"horizon_s", "3600"}});
  RiskOptions o = splitting_only(0.5, 40, 8);
  o.runs = 20;
  const RiskLevel l = assess_risk(s, o).levels[0];
  EXPECT_EQ(l.enter_within_horizon.k, 0);
  ASSERT_TRUE(l.rare);
  EXPECT_GT(l.rare->p, 1e-7);
  EXPECT_LT(l.rare->p, 1e-4);
  EXPECT_LT(l.rare->engine_runs, 8 * 40 * 9 + 1);
  ASSERT_TRUE(l.rare->enter.mean_s);
  EXPECT_GT(*l.rare->enter.mean_s, 365 * 86400.0 / 12);  // a month or more
}

// Where the agent engine and the project's own chain share their
// semantics — no timeout fires (1,000 s) and no request retries — the
// attempts at the server are the same birth-death process in both, and the
// engine's estimates must hold the chain's exact answers in their intervals.
Scenario markov_case(const std::string& rate, const std::string& queue_limit,
                     const std::string& horizon) {
  return random_server({{"demand.rate_per_s", rate},
                        {"server.queue_limit", queue_limit},
                        {"client.timeout_s", "1000"},
                        {"client.retries", "0"},
                        {"horizon_s", horizon},
                        {"incident.start_s", "0"}});
}

markov::RetryChain chain_of(const Scenario& s) {
  std::string why;
  const auto p = chain_params(s, 1.0, why);
  EXPECT_TRUE(p) << why;
  return markov::build_retry_chain(*p);
}

std::vector<bool> backlog_at_least(const markov::RetryChain& rc, int level) {
  std::vector<bool> target(rc.chain.states());
  for (int i = 0; i < rc.chain.states(); ++i) target[i] = rc.backlog[i] >= level;
  return target;
}

TEST(RareTipping, TheAgentEngineFillsItsQueueWhenItsChainSays) {
  // 8 requests/s against 10/s, 10 places: from empty to full.
  const Scenario s = markov_case("8", "9", "7200");
  const markov::RetryChain rc = chain_of(s);
  const double exact = rc.chain.hitting_times(backlog_at_least(rc, 10))[rc.empty_state];
  std::vector<double> times;
  for (uint64_t i = 0; i < 400; ++i) {
    SplitControl walk;
    walk.reseeds = {{0, 1000 + i}};
    walk.stop_at_backlog = 10;
    run_agent(s, {.split = &walk});
    ASSERT_TRUE(walk.stopped_after_events) << "not full within 2 h: " << i;
    times.push_back(walk.stopped_s);
  }
  const MetricSummary m = summarize(times, 0);
  EXPECT_LE(m.low, exact);
  EXPECT_GE(m.high, exact);
  EXPECT_LT(m.high - m.low, 0.3 * exact);  // a useful interval
}

TEST(RareTipping, SplittingOnTheAgentEngineHoldsTheChainsRareAnswer) {
  // 3 requests/s against 10/s, 12 places: full within a minute is rare.
  const Scenario s = markov_case("3", "11", "60");
  const markov::RetryChain rc = chain_of(s);
  const double exact = rc.chain.reach_within(backlog_at_least(rc, 12), 60)[rc.empty_state];
  EXPECT_GT(exact, 1e-4);  // 1.5e-4
  EXPECT_LT(exact, 2e-4);
  RiskOptions o;
  o.split_effort = 100;
  o.split_runs = 10;
  const RareTip tip = split_backlog(s, {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, o);
  EXPECT_LE(tip.low, exact);
  EXPECT_GE(tip.high, exact);
  EXPECT_LT(tip.high, 3 * exact) << tip.p << " from " << tip.low;
}

TEST(RareTipping, LevelsClimbToTheStuckBacklog) {
  StuckRule rule{.backlog_above = 30, .goodput_below = 0.9, .window_steps = 3};
  EXPECT_EQ(split_levels(rule, 8), (std::vector<int64_t>{4, 8, 12, 16, 20, 24, 28, 31}));
  EXPECT_EQ(split_levels(rule, 1), (std::vector<int64_t>{31}));
  rule.backlog_above = 2.5;
  EXPECT_EQ(split_levels(rule, 8), (std::vector<int64_t>{1, 2, 3}));
}

TEST(RareTipping, RefusesBadSettingsBeforeAnyWork) {
  const Scenario s = random_server({{"horizon_s", "120"}});
  RiskOptions o = splitting_only(1, 1, 4);
  EXPECT_THROW(assess_risk(s, o), InputError);
  o = splitting_only(1, 10, 1);
  EXPECT_THROW(assess_risk(s, o), InputError);
  o = splitting_only(1, 10, 4);
  o.split_levels = 0;
  EXPECT_THROW(assess_risk(s, o), InputError);
}

TEST(RareTipping, AChanceIsAMeanWaitWithoutMemory) {
  const WaitingTime w = waiting_time_from_chance(0.5, 0.25, 0.75, 3600);
  ASSERT_TRUE(w.mean_s && w.high_s);
  EXPECT_NEAR(*w.mean_s, 3600 / std::log(2.0), 1e-9);
  EXPECT_NEAR(w.within(3600).p, 0.5, 1e-12);
  EXPECT_LT(w.low_s, *w.mean_s);
  EXPECT_GT(*w.high_s, *w.mean_s);
  const WaitingTime none = waiting_time_from_chance(0, 0, 0, 60);
  EXPECT_FALSE(none.mean_s);
  EXPECT_EQ(none.low_s, 60);
}

// A chance of 1 within the horizon has no mean without memory (it would be
// 0 s): a clamp at 1 - 1e-12 made one up, horizon / 27.6 ("mean time to tip
// 11 s (0 s to 11 s)" at 5 min, where the runs timed 4.2 s). Certain within
// the horizon, it is certain within an hour and a day.
TEST(RareTipping, AChanceOfOneGivesNoMean) {
  const WaitingTime every = waiting_time_from_chance(1, 1, 1, 300);
  EXPECT_TRUE(every.certain);
  EXPECT_FALSE(every.mean_s);
  EXPECT_FALSE(every.high_s);
  EXPECT_EQ(every.low_s, 0);
  for (double t : {60.0, 3600.0, 86400.0}) {
    const Share within = every.within(t);
    EXPECT_EQ(within.p, 1) << t;
    EXPECT_EQ(within.low, 1) << t;
    EXPECT_EQ(within.high, 1) << t;
  }
  // Below 1 the mean is there; an interval reaching 1 bounds it by nothing above 0.
  const WaitingTime most = waiting_time_from_chance(0.9, 0.8, 1, 300);
  EXPECT_FALSE(most.certain);
  ASSERT_TRUE(most.mean_s && most.high_s);
  EXPECT_NEAR(*most.mean_s, 300 / std::log(10.0), 1e-9);
  EXPECT_NEAR(*most.high_s, 300 / std::log(5.0), 1e-9);
  EXPECT_EQ(most.low_s, 0);
}

// risk runs side by side only as many replications as fit in one request's
// memory, whatever --threads asks: the price is of one run (eight threads of
// a 0.4 GB run peaked at 3.1 GB, past the 1 GiB limit, without --allow-large).
TEST(RareTipping, ThreadsDoNotMultiplyAPricedRunsMemory) {
  testing::TempDir dir("risk_threads");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const testing::Outcome o = testing::run_cli(dir.path(), {"risk",
                                                           "--scenario",
                                                           example,
                                                           "--set",
                                                           "demand.rate_per_s=200000",
                                                           "--set",
                                                           "server.capacity_per_s=10000",
                                                           "--set",
                                                           "server.queue_limit=0",
                                                           "--set",
                                                           "client.retries=0",
                                                           "--set",
                                                           "client.timeout_s=100",
                                                           "--set",
                                                           "horizon_s=20",
                                                           "--set",
                                                           "incident.duration_s=0",
                                                           "--no-exact",
                                                           "--runs",
                                                           "8",
                                                           "--threads",
                                                           "8"});
  ASSERT_EQ(o.status, 0) << o.err;
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  EXPECT_LT(double(children.ru_maxrss) * 1024, 1.1 * 1024 * 1024 * 1024) << "peak of the run";
}

// A splitting stage's walks side by side are runs too: as many as fit in
// the memory the request was priced at, not --threads (8 walks of a 0.4 GB
// run at once, where the replications beside them ran 2).
TEST(RareTipping, AStagesWalksRunNoMoreAtOnceThanFitInMemory) {
  const Scenario s = random_server({{"demand.rate_per_s", "200000"},
                                    {"server.capacity_per_s", "10000"},
                                    {"server.queue_limit", "0"},
                                    {"client.retries", "0"},
                                    {"client.timeout_s", "100"},
                                    {"horizon_s", "20"}});
  RiskOptions o = splitting_only(1, 40, 8);
  o.threads = 8;
  const unsigned fit = runs_at_once(s);
  ASSERT_LT(fit, 8u);
  EXPECT_EQ(risk_threads(s, o), fit);
  EXPECT_EQ(split_plan(s, 8, true, o).threads, fit);
  EXPECT_EQ(split_plan(s, 8, true, o).stages, 9u);
  o.threads = 1;
  EXPECT_EQ(split_plan(s, 8, true, o).threads, 1u);
}

// A map's cells are each checked and priced before any run: the largest
// value priced them all (a smaller step_s costs more: accepted, then killed
// after minutes), and a cell that fails validation failed after the others ran.
TEST(RareTipping, AMapIsPricedCellByCellBeforeAnyRun) {
  testing::TempDir dir("risk_map_price");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  for (const char* vary : {"step_s=1,0.0001", "step_s=0.0001,1"}) {
    const auto start = std::chrono::steady_clock::now();
    const testing::Outcome bad = testing::run_cli(
        dir.path(),
        {"risk", "--scenario", example, "--loads", "0.8,0.9,1", "--runs", "300", "--vary", vary});
    EXPECT_EQ(bad.status, 2) << vary << bad.out;
    EXPECT_NE(bad.err.find("step_s 0.0001"), std::string::npos) << bad.err;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3)
        << vary << ": refused before the first cell's runs";
  }
  const testing::Outcome dear =
      testing::run_cli(dir.path(), {"risk", "--scenario", example, "--loads", "0.8,0.9,1", "--runs",
                                    "300", "--vary", "step_s=1,0.001", "--set", "horizon_s=999"});
  EXPECT_EQ(dear.status, 2) << dear.out;
  EXPECT_NE(dear.err.find("2 cells of step_s, the dearest (0.001)"), std::string::npos) << dear.err;
}

TEST(RareTipping, TheCommandLinePrintsItBesideTheRuns) {
  testing::TempDir dir("risk_splitting");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const testing::Outcome o =
      testing::run_cli(dir.path(), {"risk", "--scenario", example, "--loads", "0.6", "--runs", "5",
                                    "--horizon", "300", "--no-exact", "--splitting",
                                    "--split-effort", "40", "--split-runs", "3"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("by splitting: tips within 5 min:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("40 walks per stage, 3 independent splitting runs"), std::string::npos);
  const testing::Outcome bad = testing::run_cli(
      dir.path(), {"risk", "--scenario", example, "--splitting", "--split-runs", "1"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("split runs 1 must be 2 to 1000"), std::string::npos) << bad.err;
  // The printed replay runs, and tips (its peak backlog above the rule's 30).
  const size_t at = o.out.find("--walk ");
  ASSERT_NE(at, std::string::npos) << o.out;
  const std::string walk = o.out.substr(at + 7, o.out.find('\n', at) - at - 7);
  const testing::Outcome replay =
      testing::run_cli(dir.path(), {"run", "--scenario", example, "--set", "incident.duration_s=0",
                                    "--set", "demand.rate_per_s=5.7", "--set", "horizon_s=300",
                                    "--walk", walk, "--format", "json"});
  ASSERT_EQ(replay.status, 0) << replay.err;
  const auto backlog = nlohmann::json::parse(replay.out)["series"]["backlog"];
  EXPECT_GT(*std::max_element(backlog.begin(), backlog.end()), 30) << walk;
  const testing::Outcome bad_walk =
      testing::run_cli(dir.path(), {"run", "--scenario", example, "--walk", "9:1,3:2"});
  EXPECT_EQ(bad_walk.status, 2);
  EXPECT_NE(bad_walk.err.find("the events must grow"), std::string::npos) << bad_walk.err;
  const testing::Outcome map = testing::run_cli(
      dir.path(), {"risk", "--scenario", example, "--splitting", "--vary", "client.retries=0,1"});
  EXPECT_EQ(map.status, 2);
  EXPECT_NE(map.err.find("not a map"), std::string::npos) << map.err;
}

// At twice the load every walk tips within 5 min: splitting's chance is 1,
// which gives no mean (it printed "mean time to tip 11 s (0 s to 11 s)",
// made up from a clamp, beside the runs' 4.2 s); the chances within an hour
// and a day stay 100%.
TEST(RareTipping, EveryWalkTippingGivesNoMeanTimeToTip) {
  testing::TempDir dir("risk_certain");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const testing::Outcome o =
      testing::run_cli(dir.path(), {"risk", "--scenario", example, "--loads", "2", "--runs", "20",
                                    "--horizon", "300", "--no-exact", "--splitting",
                                    "--split-effort", "10", "--split-runs", "4"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("by splitting: tips within 5 min: 100% (100% to 100%); mean time to tip "
                       "none (a chance of 1 within 5 min gives no mean; the plain runs above "
                       "time it)\n    tips within 1 h: 100%; within 1 day: 100%\n"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("mean time to tip 11 s"), std::string::npos) << o.out;
  const nlohmann::json json = nlohmann::json::parse(
      testing::run_cli(dir.path(),
                       {"risk", "--scenario", example, "--loads", "2", "--runs", "20", "--horizon",
                        "300", "--no-exact", "--splitting", "--split-effort", "10", "--split-runs",
                        "4", "--format", "json"})
          .out);
  const nlohmann::json& tip = json["levels"][0]["splitting"]["time_to_tip"];
  EXPECT_TRUE(tip["mean_s"].is_null()) << tip;
  EXPECT_EQ(tip["within_hour"]["p"], 1) << tip;
}

// Every probability of a splitting result is a chance, low <= p <= high:
// the chance and its interval, each stage's mean factor and the chances
// within an hour and a day (not the levels, walks or times). Nine replicas
// that all passed a stage summed as ninths gave a factor of
// 1.0000000000000002 (`risk --loads 2 --split-runs 9`, JSON `factors`).
void expect_chance(double low, double p, double high, const std::string& what) {
  EXPECT_GE(low, 0) << what;
  EXPECT_LE(low, p) << what;
  EXPECT_LE(p, high) << what;
  EXPECT_LE(high, 1) << what;
}

void expect_chances(const RareTip& t, const std::string& what) {
  expect_chance(t.low, t.p, t.high, what + " p");
  for (size_t k = 0; k < t.factors.size(); ++k)
    expect_chance(t.factors[k], t.factors[k], t.factors[k], what + " factor " + std::to_string(k));
  for (double within : {3600.0, 86400.0}) {
    const Share s = t.enter.within(within);
    expect_chance(s.low, s.p, s.high, what + " within " + std::to_string(within));
  }
}

// One replica as split_replicas makes it: stage factors of k / effort,
// most walks passing, until a stage none passed.
markov::RareEstimate generated_estimate(std::mt19937_64& gen) {
  const int replicas = std::uniform_int_distribution<int>(2, 40)(gen);
  const int effort = std::uniform_int_distribution<int>(2, 60)(gen);
  const size_t stages = std::uniform_int_distribution<size_t>(1, 9)(gen);
  std::binomial_distribution<int> passed(effort, std::uniform_real_distribution<>(0.5, 1)(gen));
  std::vector<double> products;
  std::vector<std::vector<double>> factors(static_cast<size_t>(replicas));
  for (auto& f : factors) {
    double p = 1;
    for (size_t k = 0; k < stages && p > 0; ++k) {
      f.push_back(static_cast<double>(passed(gen)) / effort);
      p *= f.back();
    }
    products.push_back(p);
  }
  return markov::combine_replicas(products, factors);
}

TEST(RareTipping, CombinedReplicasGiveChancesWithinOne) {
  std::mt19937_64 gen(20240611);
  for (int trial = 0; trial < 2000; ++trial) {
    const markov::RareEstimate e = generated_estimate(gen);
    const std::string what = "trial " + std::to_string(trial);
    expect_chance(e.low, e.p, e.high, what);
    for (double f : e.factors) expect_chance(f, f, f, what + " factor");
  }
  // Every walk of 9, 11 or 18 replicas passing: each factor is 1 exactly.
  for (size_t n : {9u, 11u, 18u}) {
    const markov::RareEstimate all = markov::combine_replicas(
        std::vector<double>(n, 1.0), std::vector(n, std::vector{1.0, 1.0}));
    EXPECT_EQ(all.factors, (std::vector{1.0, 1.0})) << n;
    EXPECT_EQ(all.p, 1);
    EXPECT_EQ(all.high, 1);
  }
}

TEST(RareTipping, EveryProbabilityOfASplittingResultIsAChance) {
  std::mt19937_64 gen(7);
  const std::vector<double> loads = {0.6, 0.9, 1.2, 2, 3};
  for (int trial = 0; trial < 24; ++trial) {
    const double load = loads[gen() % loads.size()];
    const std::string seed = std::to_string(1 + gen() % 1000);
    RiskOptions o = splitting_only(load, 2 + static_cast<int>(gen() % 9), 2 + int(gen() % 19));
    o.split_levels = 1 + static_cast<int>(gen() % 4);
    const RiskResult r = assess_risk(random_server({{"horizon_s", "120"}, {"seed", seed}}), o);
    ASSERT_TRUE(r.levels[0].rare);
    expect_chances(*r.levels[0].rare, "load " + std::to_string(load) + " seed " + seed + " runs " +
                                          std::to_string(o.split_runs));
  }
}

// The JSON the reproduction read: at twice the load with 9 splitting runs
// every walk tips, and every chance written is at most 1.
TEST(RareTipping, TheJsonsChancesStayWithinOneWhenEveryWalkTips) {
  testing::TempDir dir("risk_split_ceiling");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const testing::Outcome o = testing::run_cli(
      dir.path(), {"risk", "--scenario", example, "--loads", "2", "--runs", "4", "--horizon", "300",
                   "--no-exact", "--splitting", "--split-effort", "4", "--split-runs", "9",
                   "--split-levels", "2", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json split = nlohmann::json::parse(o.out)["levels"][0]["splitting"];
  EXPECT_EQ(split["p"], 1.0) << split;
  for (const char* key : {"low", "high"}) EXPECT_LE(split[key].get<double>(), 1.0) << key;
  for (const auto& f : split["factors"]) EXPECT_LE(f.get<double>(), 1.0) << split["factors"];
  for (const char* within : {"within_hour", "within_day"})
    for (const char* key : {"p", "low", "high"})
      EXPECT_LE(split["time_to_tip"][within][key].get<double>(), 1.0) << within << key;
}

// `run --walk` replays one run: where the scenario's runs are not 1 the
// printed replay sets runs=1 (it was refused, exit 2, "--walk: one run").
TEST(RareTipping, ThePrintedReplayRunsWhereTheScenarioHasManyRuns) {
  testing::TempDir dir("risk_replay_runs");
  const std::string example = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  const std::filesystem::path many = dir.path() / "many.yaml";
  testing::write_file(many, "runs: 4\n" + testing::read_all(example));
  const testing::Outcome o =
      testing::run_cli(dir.path(), {"risk", "--scenario", many.string(), "--loads", "0.6", "--runs",
                                    "5", "--horizon", "300", "--no-exact", "--splitting",
                                    "--split-effort", "40", "--split-runs", "3"});
  ASSERT_EQ(o.status, 0) << o.err;
  const std::string lead = "replay a walk that tipped: ";
  const size_t at = o.out.find(lead);
  ASSERT_NE(at, std::string::npos) << o.out;
  const std::string line = o.out.substr(at + lead.size(), o.out.find('\n', at) - at - lead.size());
  EXPECT_EQ(line.rfind("--set engine=agent --set runs=1 --set incident.duration_s=0 ", 0), 0u)
      << line;
  std::vector<std::string> args = {"run", "--scenario", many.string()};
  std::istringstream words(line);
  for (std::string word; words >> word;) args.push_back(word);
  args.insert(args.end(), {"--format", "json"});
  const testing::Outcome replay = testing::run_cli(dir.path(), args);
  ASSERT_EQ(replay.status, 0) << replay.err;
  const auto backlog = nlohmann::json::parse(replay.out)["series"]["backlog"];
  EXPECT_GT(*std::max_element(backlog.begin(), backlog.end()), 30) << line;
  // Where the scenario's runs are 1 the line is as it was.
  const testing::Outcome one =
      testing::run_cli(dir.path(), {"risk", "--scenario", example, "--loads", "0.6", "--runs", "5",
                                    "--horizon", "300", "--no-exact", "--splitting",
                                    "--split-effort", "40", "--split-runs", "3"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find(lead + "--set engine=agent --set incident.duration_s=0 "),
            std::string::npos)
      << one.out;
}

}  // namespace
}  // namespace retrystorm
