// Writing a scenario's client policy as the configuration of a real system,
// with comments (or "_comment" fields in JSON) on what it cannot express.
#pragma once

#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::configs {

struct ExportResult {
  std::string system;              // envoy | grpc | istio | linkerd | aws
  std::string text;                // the configuration
  std::vector<std::string> notes;  // what the system cannot express
};

const std::vector<std::string>& export_systems();
// Throws InputError for an unknown system.
ExportResult export_config(const Scenario& s, const std::string& system);

}  // namespace retrystorm::configs
