// The call graph from observed rates (docs/graph.md, "The call graph from
// Prometheus"): the mesh room's half of it; the metrics' labels are the
// Prometheus room's (systems/prometheus/call_graph.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "systems/prometheus/call_graph.hpp"

namespace retrystorm::configs {

// A calls document (docs/graph.md, "From the mesh's configuration") from the
// rates: one entry call from the user, each observed call reached from it with
// `count` its rate over its caller's arrivals, and demand.rate_per_s the
// entry's rate. `calls_doc`, when not null, is a calls file whose keys win:
// its other keys are kept, its calls add their keys to the observed call of
// the same caller and callee (a call from `user` names the entry). Warnings
// say what was rounded, guessed or left out. InputError naming `what`.
nlohmann::json calls_from_observed(const ObservedCalls& seen, const nlohmann::json* calls_doc,
                                   const std::string& what, std::vector<std::string>& warnings);

}  // namespace retrystorm::configs
