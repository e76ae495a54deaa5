// Who calls whom, as a mesh observed it: the pairs of caller and callee with
// their rates, read by the Prometheus room (request rates by workload) and the
// traces room (spans and their parents); the mesh room builds the graph of a
// scenario from them (systems/mesh/observed.hpp, docs/graph.md).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace retrystorm {

// One caller -> callee pair and its rate; `from` (`to`) is empty for a
// caller (callee) outside the mesh (Istio's "unknown", a trace's root).
struct ObservedCall {
  std::string from, to;
  double rate_per_s = 0;
};

struct ObservedCalls {
  std::string labels;              // "Istio's source_workload and destination_workload"
  std::string source = "metrics";  // what the warnings call it: "metrics", "traces"
  std::vector<ObservedCall> calls;
  // The call pattern a source can see (traces: calls that overlap in time),
  // by service: "parallel"; a service left out is read in sequence.
  std::map<std::string, std::string> patterns;
};

}  // namespace retrystorm
