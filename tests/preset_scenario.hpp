// A preset with some keys set as on the command line, validated: how the
// session-model tests name the scenario they run.
#pragma once

#include <map>
#include <string>

#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm::testing {

inline Scenario preset(const std::string& name, std::map<std::string, std::string> sets = {}) {
  Scenario s = preset_or_throw(name).scenario;
  for (const auto& [path, value] : sets) set_key_text(s, path, value);
  validate(s);
  return s;
}

}  // namespace retrystorm::testing
