// Benchmarks with the targets of the agent engine issue:
//   the per-request primary-failover ladder (5 runs, ~1.5 M events)  < 100 ms
//   the engine's own event rate (M/M/1 at load 0.9, one core)         >= 40 M events/s
//   partial-brownout in the stuck state, the engine alone (issue 32: >= 2x 3f92ed2)
// Counters: events and events per second; memory: peak entities in flight.
#include <benchmark/benchmark.h>

#include "analysis/ladder.hpp"
#include "engine_counters.hpp"
#include "engines/agent/agent.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "open_queue.hpp"  // tests/

using namespace retrystorm;

static void BM_AgentPrimaryFailoverLadder(benchmark::State& state) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  s.engine = Engine::agent;
  // The ladder's five scenarios, run as run_ladder runs them.
  std::vector<Scenario> rows;
  for (const auto& r : run_ladder(s)) rows.push_back(r.scenario);
  uint64_t events = 0;
  for (auto _ : state) {
    events = 0;
    for (const Scenario& row : rows) {
      AgentStats stats;
      benchmark::DoNotOptimize(run_agent(row, {nullptr, &stats}));
      events += stats.events;
    }
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AgentPrimaryFailoverLadder)->Unit(benchmark::kMillisecond);

// One run of `s` an iteration, with the engine's counters.
static void run_each_iteration(benchmark::State& state, const Scenario& s) {
  AgentStats stats;
  for (auto _ : state) {
    stats = {};
    benchmark::DoNotOptimize(run_agent(s, {nullptr, &stats}));
  }
  engine_counters(state, stats);
}

static void BM_AgentEventRate(benchmark::State& state) {
  Scenario s = testing::open_queue(900, 1000, 2000, 1000);
  s.step_s = 1;
  validate(s);
  run_each_iteration(state, s);
}
BENCHMARK(BM_AgentEventRate)->Unit(benchmark::kMillisecond);

// Where users wait: `run --preset partial-brownout --set engine=agent`'s own
// run, stuck from the incident on (a queue of tens of thousands, about 4x
// amplification). The engine alone, without the report's advice and tipping.
static void BM_AgentStuckPartialBrownout(benchmark::State& state) {
  Scenario s = preset_or_throw("partial-brownout").scenario;
  s.engine = Engine::agent;
  validate(s);
  run_each_iteration(state, s);
}
BENCHMARK(BM_AgentStuckPartialBrownout)->Unit(benchmark::kMillisecond);
