// The session model: one three-day scheduler-429-outage run (the page's
// redraw), its 40-seed Monte Carlo (the acceptance tests' figures), and the
// JSON answer the server builds from it.
#include <benchmark/benchmark.h>

#include "analysis/session_metrics.hpp"
#include "engines/sessions/session_engine.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"

using namespace retrystorm;

static void BM_SessionsOutageRun(benchmark::State& state) {
  Scenario s = preset_or_throw("scheduler-429-outage").scenario;
  uint64_t events = 0;
  for (auto _ : state) {
    auto run = sessions::run_sessions(s);
    events = run.events;
    benchmark::DoNotOptimize(run);
  }
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_SessionsOutageRun)->Unit(benchmark::kMillisecond);

static void BM_SessionsOutageReportJson(benchmark::State& state) {
  Scenario s = preset_or_throw("scheduler-429-outage").scenario;
  for (auto _ : state) benchmark::DoNotOptimize(session_json(make_session_report(s)).dump());
}
BENCHMARK(BM_SessionsOutageReportJson)->Unit(benchmark::kMillisecond);

static void BM_SessionsOutageFortySeeds(benchmark::State& state) {
  Scenario s = preset_or_throw("scheduler-429-outage").scenario;
  for (auto _ : state) benchmark::DoNotOptimize(run_session_montecarlo(s, 40, 1));
}
BENCHMARK(BM_SessionsOutageFortySeeds)->Unit(benchmark::kMillisecond);
