#include "engines/engine.hpp"

#include "engines/agent/agent.hpp"
#include "engines/fluid.hpp"

namespace retrystorm {

RunResult run_engine(const Scenario& s) {
  return s.engine == "agent" ? run_agent(s) : run_fluid(s);
}

}  // namespace retrystorm
