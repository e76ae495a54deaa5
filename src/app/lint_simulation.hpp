// lint --simulate: the incident run with the imported policy, with each
// finding's fix, with all fixes together, and down the defense ladder, on the
// scenario's own engine (checked first: the session model has no per-step
// run and is refused before any work).
#pragma once

#include "analysis/cost.hpp"
#include "systems/lint.hpp"

namespace retrystorm::app {

// Throws InputError naming --simulate when the incident cannot run the policy.
configs::LintSimulation simulate_lint(const configs::LintReport& report,
                                      const configs::LintOptions& options);

// What simulate_lint will run, priced before it runs: the incident as
// configured, each fix, all fixes together, the ladder and the instance rows.
Cost lint_simulation_cost(const configs::LintReport& report, const configs::LintOptions& options);

}  // namespace retrystorm::app
