#include "engines/engine.hpp"

#include "engines/agent/agent.hpp"
#include "engines/fluid.hpp"
#include "model/keys.hpp"

namespace retrystorm {

void require_step_run(const Scenario& s) {
  // Ladders, tipping points, sweeps and traces are built on per-step runs.
  if (s.engine == "sessions")
    throw InputError(
        "engine: sessions runs with `run` (and `run --runs N`); it has no per-step run for "
        "ladders, tipping points, sweeps or traces");
}

RunResult run_engine(const Scenario& s) {
  require_step_run(s);
  return s.engine == "agent" ? run_agent(s) : run_fluid(s);
}

}  // namespace retrystorm
