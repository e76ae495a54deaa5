// The engines a scenario can name (`engine: fluid`, `agent`, `sessions`) and
// one table of what each can do; callers ask the table, not the name.
#pragma once

#include "engines/run_result.hpp"
#include "model/keys.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

struct EngineFacts {
  Engine engine;
  // The engine's own key checks, after the model's validate_horizon.
  void (*validate)(const Scenario&, const RunLimits&);
  // One per-step run (ladders, tipping points, sweeps, traces are built on
  // it); nullptr when the engine has none (sessions: its own report).
  RunResult (*run)(const Scenario&);
  // The work of one step relative to a fluid step (tipping point and cost
  // estimates): an agent step moves every request one by one, measured at
  // about thirty times a fluid step for the presets' loads.
  double step_cost;
  // Whole requests at random instants: `runs` > 1 are seeded replications,
  // and a drained queue can hold one request more than a moment ago.
  bool random;
  // Writes logs with --log (requests.csv; sessions.csv and events.jsonl).
  bool logs;
  // Its calls have a per-try timeout (client.timeout_s).
  bool per_try_timeout;
};

// The facts of an engine (one row of the table in engine.cpp).
const EngineFacts& engine_facts(Engine e);
inline const EngineFacts& engine_facts(const Scenario& s) {
  return engine_facts(s.engine);
}

// Runs a validated scenario with its engine (one replication for agent).
RunResult run_engine(const Scenario& s);

// InputError unless the scenario's engine makes per-step runs (fluid, agent).
void require_step_run(const Scenario& s);

}  // namespace retrystorm
