// What a run of a graph of services says hop by hop (docs/graph.md,
// "Results"): per service and per edge totals and amplification, and the
// defenses tried one edge or one service at a time.
#pragma once

#include <string>
#include <vector>

#include "engines/run_result.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

struct ServiceHop {
  std::string name;
  bool serves = false;
  double first_attempts = 0, retries = 0;  // arriving
  double served = 0, late = 0, rejected = 0, shed = 0, failed = 0;
  double peak_queue = 0;
  double amplification = 0;  // (first attempts + retries) / first attempts; 0 when none came
  double per_request = 0;    // attempts per user request (end to end)
  double worst_case = 0;     // attempts per user request when all fail, nothing budgeted
};

struct EdgeHop {
  std::string from, to;
  double calls = 0, retries = 0, timeouts = 0, failed = 0, denied = 0;
  double attempts_per_call = 0;     // (calls + retries) / calls; 0 when no call was made
  double delayed = 0, aborted = 0;  // by the incident's fault on the call
  double paced = 0;                 // held by the call's rate limiter
};

struct GraphSummary {
  std::vector<ServiceHop> services;
  std::vector<EdgeHop> edges;
};

// Totals of a graph's run (empty for a run without a graph).
GraphSummary graph_summary(const RunResult& run);

// A graph's defenses, each on one edge or one service: no retries on an
// edge that retries, a 10% retry budget on an edge without one, deadline
// propagation on an edge without it, shedding at a server that does not
// shed. Rows of a `single` ladder; the advice ranks them.
std::vector<LadderRow> graph_defenses(const Scenario& s);

}  // namespace retrystorm
