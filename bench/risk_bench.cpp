// The targets of docs/risk.md, "Speed": multilevel splitting against plain
// Monte Carlo on a chance both can estimate (about 0.8%), each with the work
// that gives it an interval about ±12% wide (32,000 plain walks; ten
// splitting runs of 300 walks per level), so that their times compare the
// cost of one answer; metafor's example solved exactly; and a 20 x 20
// metastable-region map; and a one-in-a-million tip on the agent engine.
#include <benchmark/benchmark.h>

#include "analysis/markov/retry_chain.hpp"
#include "analysis/markov/splitting.hpp"
#include "analysis/risk.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "random_server.hpp"

using namespace retrystorm;

namespace {

markov::RetryChain rare_case() {
  markov::RetryChainParams p;
  p.arrival_per_s = 4, p.service_per_s = 10, p.queue = 20, p.orbit = 15;
  p.timeout_s = 1, p.retries = 3, p.retry_delay_s = 0.3;
  return markov::build_retry_chain(p);
}

}  // namespace

static void BM_RareTipSplitting(benchmark::State& state) {
  const markov::RetryChain rc = rare_case();
  const markov::Walker walker(rc.chain);
  double width = 0, p = 0;
  for (auto _ : state) {
    auto e = markov::split_reach(walker, 0, rc.backlog, {4, 6, 8, 10, 12, 14, 16, 18, 20}, 20, 300,
                                 10, 1);
    width = (e.high - e.low) / e.p, p = e.p;
    benchmark::DoNotOptimize(e);
  }
  state.counters["relative_width"] = width;
  state.counters["p"] = p;
}
BENCHMARK(BM_RareTipSplitting)->Unit(benchmark::kMillisecond);

static void BM_RareTipPlain(benchmark::State& state) {
  const markov::RetryChain rc = rare_case();
  const markov::Walker walker(rc.chain);
  double width = 0, p = 0;
  for (auto _ : state) {
    auto e = markov::plain_reach(walker, 0, rc.backlog, 20, 20, 32000, 1);
    width = (e.high - e.low) / e.p, p = e.p;
    benchmark::DoNotOptimize(e);
  }
  state.counters["relative_width"] = width;
  state.counters["p"] = p;
}
BENCHMARK(BM_RareTipPlain)->Unit(benchmark::kMillisecond);

static void BM_MetaforChainSolved(benchmark::State& state) {
  markov::RetryChainParams p;
  p.rules = markov::Rules::metafor;
  p.bad_from = 90;
  for (auto _ : state) benchmark::DoNotOptimize(markov::solve_retry_chain(p));
}
BENCHMARK(BM_MetaforChainSolved)->Unit(benchmark::kMillisecond);

// 20 loads x 20 retry counts, 10 replications of 5 minutes each: the map
// of docs/risk.md on the agent engine.
static void BM_RiskMap20x20(benchmark::State& state) {
  Scenario s = preset_or_throw("order-status").scenario;
  for (const auto& [key, value] : testing::random_server_keys()) set_key_text(s, key, value);
  set_key_text(s, "horizon_s", "300");
  RiskOptions o;
  for (int i = 1; i <= 20; ++i) o.loads.push_back(0.05 * i);
  o.runs = 10;
  for (auto _ : state)
    benchmark::DoNotOptimize(assess_risk_map(s, SweepAxis("client.retries", 0, 19, 1), o));
}
BENCHMARK(BM_RiskMap20x20)->Unit(benchmark::kMillisecond)->Iterations(1);

// The target for rare tips on the agent engine: a chance of about
// one in a million per hour (45% load, 1 h) by splitting, in seconds: 100
// walks per stage, 8 splitting runs.
static void BM_AgentRareTipSplitting(benchmark::State& state) {
  Scenario s = preset_or_throw("order-status").scenario;
  for (const auto& [key, value] : testing::random_server_keys()) set_key_text(s, key, value);
  set_key_text(s, "horizon_s", "3600");
  RiskOptions o;
  o.loads = {0.45};
  o.runs = 2;
  o.exact = false;
  o.splitting = true;
  o.split_effort = 100;
  for (auto _ : state) {
    const RiskResult r = assess_risk(s, o);
    state.counters["p_per_hour"] = r.levels[0].rare->p;
  }
}
BENCHMARK(BM_AgentRareTipSplitting)->Unit(benchmark::kMillisecond)->Iterations(1);

// The same comparison on the agent engine, where a walk is a replayed run: a
// chance of about 1% of tipping within 5 minutes at 75% load, by splitting
// (10 runs of 100 walks per level, 6 levels) and by 4,000 plain runs. Both
// report their estimate and interval; docs/risk.md compares the cost of one
// interval width (plain Monte Carlo's width shrinks as 1 / sqrt(runs)).
namespace {
Scenario agent_tip_case() {
  Scenario s = preset_or_throw("order-status").scenario;
  for (const auto& [key, value] : testing::random_server_keys()) set_key_text(s, key, value);
  set_key_text(s, "horizon_s", "300");
  return s;
}
void tip_counters(benchmark::State& state, double p, double low, double high) {
  state.counters["p"] = p;
  state.counters["low"] = low;
  state.counters["high"] = high;
  state.counters["relative_width"] = p > 0 ? (high - low) / p : 0;
}
RiskOptions at_three_quarters(int runs) {
  RiskOptions o;
  o.loads = {0.75};
  o.runs = runs;
  o.exact = false;
  return o;
}
}  // namespace

static void BM_AgentTipSplitting(benchmark::State& state) {
  const Scenario s = agent_tip_case();
  RiskOptions o = at_three_quarters(2);
  o.splitting = true;
  o.split_effort = 100, o.split_runs = 10, o.split_levels = 6;
  for (auto _ : state) {
    const RareTip tip = *assess_risk(s, o).levels[0].rare;
    tip_counters(state, tip.p, tip.low, tip.high);
  }
}
BENCHMARK(BM_AgentTipSplitting)->Unit(benchmark::kMillisecond)->Iterations(1);

static void BM_AgentTipPlain(benchmark::State& state) {
  const Scenario s = agent_tip_case();
  const RiskOptions o = at_three_quarters(4000);
  for (auto _ : state) {
    const Share tip = assess_risk(s, o).levels[0].enter_within_horizon;
    tip_counters(state, tip.p, tip.low, tip.high);
  }
}
BENCHMARK(BM_AgentTipPlain)->Unit(benchmark::kMillisecond)->Iterations(1);
