// Who calls whom, as a mesh's own metrics count it: a saved Prometheus answer
// of a request rate by caller and callee workload (docs/graph.md, "The call
// graph from Prometheus"). The labels are the mesh's; the graph built from
// the rates is the mesh room's (systems/mesh/mesh.hpp).
#pragma once

#include <string>
#include <vector>

#include "systems/observed_calls.hpp"

namespace retrystorm {

// The pairs of an answer of /api/v1/query (a vector) or /api/v1/query_range
// (a matrix: each series' mean) whose series carry Istio's canonical service
// or workload labels, or Linkerd's owner labels (deployment, ...; dst_*), summed
// per pair. InputError naming `what` for an answer Prometheus
// refused, series with neither pair of labels, or a negative rate.
ObservedCalls read_observed_calls(const std::string& body, const std::string& what);

// The instant query whose answer read_observed_calls reads, per mesh (Istio
// first): the request rate by caller and callee over the last `window_s`.
struct CallRatesQuery {
  std::string mesh;  // "Istio", "Linkerd"
  std::string expr;  // PromQL
};
std::vector<CallRatesQuery> call_rate_queries(double window_s);

}  // namespace retrystorm
