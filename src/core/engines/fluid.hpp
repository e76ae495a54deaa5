// The fluid (cohort) engine: docs/fluid-model.md, implemented rule
// by rule. Deterministic: amounts are real numbers, jitter is split exactly.
#pragma once

#include "engines/run_result.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Runs a validated scenario (see validate()) over its whole horizon.
RunResult run_fluid(const Scenario& scenario);

// The size of a fluid run, known before it runs, in O(attempts) arithmetic:
// the engine sizes its retry ring with it, analysis/cost.cpp prices the run.
struct FluidShape {
  long steps = 0;
  // Attempt numbers a request can reach inside the horizon (each retry comes
  // at least a step, or a timeout, plus its shortest backoff after the last
  // attempt); retries of later attempts never land inside the horizon.
  int attempts = 1;
  int last_retrying = 1;    // attempts from here on fail instead of retrying (deadline)
  size_t ring_rows = 0;     // rows of the retry ring: the longest backoff inside the horizon
  double landings = 0;      // entries of the landing tables (one per distinct backoff range)
  double landing_walk = 0;  // landings walked when each reachable attempt fails once
};
FluidShape fluid_shape(const Scenario& s);

}  // namespace retrystorm
