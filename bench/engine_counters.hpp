// The counters of an engine benchmark (one run an iteration): events, events
// per second and the pools' high-water marks, which bound the memory.
#pragma once

#include <benchmark/benchmark.h>

#include "engines/agent/agent.hpp"

namespace retrystorm {

inline void engine_counters(benchmark::State& state, const AgentStats& stats) {
  state.counters["events"] = static_cast<double>(stats.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(stats.events) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["peak_calls"] = static_cast<double>(stats.peak_calls);
  state.counters["peak_jobs"] = static_cast<double>(stats.peak_jobs);
}

}  // namespace retrystorm
