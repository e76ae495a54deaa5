// The agent engine over a graph of services (docs/graph.md): every user
// request, every call on an edge, every attempt and its visit to a service
// is an entity. A service with a server queues and serves the attempt, then
// makes its calls (in sequence or all at once); each edge has its own
// retrying client (timeout, retries, backoff, budget, retried answers).
#pragma once

#include "engines/agent/agent.hpp"
#include "engines/run_result.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Runs a validated scenario with a graph (validate()). The top-level Series
// is the view of the incident's service (docs/graph.md, "Results"); the
// per-service and per-edge series are in RunResult::graph.
RunResult run_graph(const Scenario& s, const AgentOptions& options = {});

// The graph's own checks, and what the graph engine does not run yet.
void validate_graph_run(const Scenario& s, const RunLimits& limits);

}  // namespace retrystorm
