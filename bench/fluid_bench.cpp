// Benchmarks with the targets of the fluid engine issue:
//   one primary-failover run (2,400 steps)        < 200 us
//   its ladder plus an exact tipping point        < 5 ms
//   a 100 x 100 sweep on two cores                < 2 s
#include <benchmark/benchmark.h>

#include "analysis/ladder.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "engines/fluid.hpp"
#include "formats/scenario_io.hpp"

using namespace retrystorm;

static void BM_PrimaryFailoverRun(benchmark::State& state) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  for (auto _ : state) benchmark::DoNotOptimize(run_fluid(s));
  state.counters["steps"] = s.steps();
}
BENCHMARK(BM_PrimaryFailoverRun)->Unit(benchmark::kMicrosecond);

static void BM_OrderStatusRun(benchmark::State& state) {
  Scenario s = preset_or_throw("order-status").scenario;
  for (auto _ : state) benchmark::DoNotOptimize(run_fluid(s));
}
BENCHMARK(BM_OrderStatusRun)->Unit(benchmark::kMicrosecond);

static void BM_PrimaryFailoverLadderAndTipping(benchmark::State& state) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  for (auto _ : state) {
    benchmark::DoNotOptimize(run_ladder(s));
    benchmark::DoNotOptimize(tipping_point(s, 0.5));
  }
}
BENCHMARK(BM_PrimaryFailoverLadderAndTipping)->Unit(benchmark::kMillisecond);

static void BM_Sweep100x100(benchmark::State& state) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  std::vector<SweepAxis> axes = {{"incident.duration_s", 0.5, 50, 0.5},
                                 {"demand.rate_per_s", 10, 1000, 10}};
  SweepOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(run_sweep(s, axes, options));
  state.counters["runs"] = 100 * 100;
}
BENCHMARK(BM_Sweep100x100)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
