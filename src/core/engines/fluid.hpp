// The fluid (cohort) engine: ../shared/spec/fluid-model.md, implemented rule
// by rule. Deterministic: amounts are real numbers, jitter is split exactly.
#pragma once

#include "engines/run_result.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Runs a validated scenario (see validate()) over its whole horizon.
RunResult run_fluid(const Scenario& scenario);

}  // namespace retrystorm
