// Envoy's fault filter (envoy.extensions.filters.http.fault.v3.HTTPFault), and
// the answers an injected abort sends as the model's classes. Istio's
// VirtualService fault is this filter (TranslateFault, istio/istio
// pilot/pkg/networking/core/route/route.go), so its room reads the
// statuses through the same table (docs/graph.md, "A fault on a call").
#pragma once

#include <optional>
#include <string>

#include "model/scenario.hpp"
#include "systems/readers.hpp"

namespace retrystorm::configs::envoy {

// The model's class of an HTTP status an abort answers with: 503 and 429 as
// they are, any other 5xx read as 503 (the server error; `note` says what a
// policy retrying by code would do differently); nullopt for a status the
// model has no class for, with the reason in `note`.
std::optional<FailureClass> http_abort_class(long long status, std::string& note);
// The same for a gRPC status name or number: UNAVAILABLE (14) as 503,
// RESOURCE_EXHAUSTED (8) as 429.
std::optional<FailureClass> grpc_abort_class(const std::string& status, std::string& note);

// Keeps a fault read at `key` as the layer's, with the note that says where
// it runs (import --mesh: the incident on its call).
void keep_fault(const RouteFault& f, const std::string& key, Reader& r);

// An HTTPFault object at `key` (a filter's typed_config, or a route's
// typed_per_filter_config entry) into r.layer.fault.
void read_fault(const YAML::Node& fault, const std::string& key, Reader& r);

}  // namespace retrystorm::configs::envoy
