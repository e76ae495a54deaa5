// Peak memory of the largest request each engine is allowed (analysis/cost.hpp):
// target: none above 1 GiB. Each run is made in a child process, so its peak
// RSS is its own; counters: peak_MiB (measured), estimate_MiB (run_cost).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/cost.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"
#include "model/keys.hpp"

using namespace retrystorm;

namespace {

// The scenario with `key` doubled until one more doubling would pass the
// cost limits: the largest allowed request of its shape.
Scenario largest_allowed(Scenario s, const std::string& key) {
  for (int i = 0; i < 60; ++i) {
    Scenario next = s;
    try {
      set_key(next, key, 2 * get_number(s, key));
      validate(next);
      check_cost(run_cost(next), CostLimits{}, "bench");
    } catch (const InputError&) {
      break;
    }
    s = next;
  }
  return s;
}

// Peak RSS in bytes of one run of `s` in a child process.
double child_peak_bytes(const Scenario& s) {
  pid_t pid = fork();
  if (pid == 0) {
    if (s.engine == Engine::sessions)
      benchmark::DoNotOptimize(make_session_report(s));
    else
      benchmark::DoNotOptimize(run_engine(s));
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return usage.ru_maxrss * 1024.0;
}

void peak_of(benchmark::State& state, const Scenario& s) {
  double peak = 0;
  for (auto _ : state) peak = std::max(peak, child_peak_bytes(s));
  state.counters["peak_MiB"] = peak / (1 << 20);
  state.counters["estimate_MiB"] = run_cost(s).bytes / (1 << 20);
  state.counters["steps"] = s.steps();
}

}  // namespace

static void BM_PeakFluidLargestAllowed(benchmark::State& state) {
  Scenario s = preset_or_throw("order-status").scenario;
  set_key(s, "client.layers", 2.0);
  set_key(s, "client.retries", 99.0);
  peak_of(state, largest_allowed(s, "horizon_s"));
}
BENCHMARK(BM_PeakFluidLargestAllowed)->Unit(benchmark::kMillisecond)->Iterations(1);

static void BM_PeakAgentLargestAllowed(benchmark::State& state) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  set_key(s, "engine", std::string("agent"));
  set_key(s, "server.capacity_per_s", 1e3);
  set_key(s, "demand.rate_per_s", 600.0);
  peak_of(state, largest_allowed(s, "demand.rate_per_s"));
}
BENCHMARK(BM_PeakAgentLargestAllowed)->Unit(benchmark::kMillisecond)->Iterations(1);

static void BM_PeakSessionsLargestAllowed(benchmark::State& state) {
  Scenario s = preset_or_throw("scheduler-429-outage").scenario;
  peak_of(state, largest_allowed(s, "horizon_s"));
}
BENCHMARK(BM_PeakSessionsLargestAllowed)->Unit(benchmark::kMillisecond)->Iterations(1);
