// Picks the engine a scenario names: `engine: fluid` (default) or `agent`.
#pragma once

#include "engines/run_result.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Runs a validated scenario with its engine (one replication for agent).
RunResult run_engine(const Scenario& s);

// InputError unless the scenario's engine makes per-step runs (fluid, agent).
void require_step_run(const Scenario& s);

}  // namespace retrystorm
