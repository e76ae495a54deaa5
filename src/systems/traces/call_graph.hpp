// Who calls whom, as traces show it (docs/graph.md, "The call graph from
// traces"): a saved export of Jaeger (its API's or UI's JSON), Zipkin (v2
// JSON) or OpenTelemetry (OTLP JSON). Each span names its service and its
// parent; a span whose parent is in another service (or that has none) is a
// visit of its service, called by the parent's service (or from outside).
#pragma once

#include <string>

#include "systems/observed_calls.hpp"

namespace retrystorm {

// The calls of the traces as rates: each pair's visits over the traces' span
// of time (sampling makes these the sampled rates, which the calls' counts,
// ratios of rates, do not depend on), and each service's pattern: parallel
// when most of its visits with two calls or more overlap them in time.
// InputError naming `what` for a text that is none of the three formats, a
// span without its service or id, a parent cycle, or more than 2,000,000 spans.
ObservedCalls read_traced_calls(const std::string& body, const std::string& what);

}  // namespace retrystorm
