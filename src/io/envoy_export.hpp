// Envoy configuration for a scenario's client policy: the route's
// retry_policy and the cluster's retry_budget, as a YAML fragment, with
// comments on what Envoy cannot express. Facts: docs/configs.md ("Sources").
#pragma once

#include <string>

#include "model/scenario.hpp"

namespace retrystorm {
std::string envoy_yaml(const Scenario& s);
}
