// What one run of an engine produces: per-step series and the end state.
// The metrics, the trace, the terminal report, the JSON and the page are
// all views of this one type.
#pragma once

#include "engines/graph_series.hpp"
#include "engines/series.hpp"
#include "histogram/latency_histogram.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// One of a dependency's hosts over a run (server.hosts > 1, agent engine).
struct HostTotals {
  double attempts = 0;   // sent to it
  double served = 0;     // answered (in time or late)
  double refused = 0;    // answered at once with a failure (full queue, incident, injected)
  double ejected_s = 0;  // seconds ejected by outlier detection, the clients' mean
  double ejections = 0;  // ejections, all clients together
};

struct RunResult {
  Scenario scenario;
  Series series;
  // Where every user request stands at the end of the horizon.
  double user_requests = 0;
  double succeeded = 0;
  double failed = 0;
  double in_flight = 0;  // queued and not given up, or waiting to retry
  // Per-request engines only: arrival to success of each successful request.
  LatencyHistogram success_latency;
  // A graph of services (agent engine): per service and per edge.
  GraphResult graph;
  // A dependency of several hosts (server.hosts): per host; empty otherwise.
  std::vector<HostTotals> hosts;
};

}  // namespace retrystorm
