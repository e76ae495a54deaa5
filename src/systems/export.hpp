// Writing a scenario's client policy as the configuration of a real system,
// with comments (or "_comment" fields in JSON) on what it cannot express.
// Each system's writer is its room's export.cpp (src/systems/<name>/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.hpp"
#include "systems/system.hpp"

namespace retrystorm::configs {

struct ExportResult {
  System system;
  std::string text;                // the configuration
  std::vector<std::string> notes;  // what the system cannot express
};

// The names of the systems we write, in table order.
const std::vector<std::string>& export_systems();
ExportResult export_config(const Scenario& s, System system);
// The system by name, as a flag or a URL gives it; InputError naming `option`
// and the systems we write for a name that is not one of them.
ExportResult export_config(const Scenario& s, std::string_view system,
                           const std::string& option = "--to");

}  // namespace retrystorm::configs
