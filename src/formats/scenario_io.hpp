// Reading and writing scenarios: JSON and YAML files, JSON objects from the
// HTTP API, and the presets compiled into the program. Every leaf goes
// through the key table (model/keys.hpp), so all inputs share one validation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/keys.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Applies a (possibly partial) scenario object onto `base`. Unknown keys and
// wrong types throw InputError naming the dotted path. `given`, when not
// null, receives the path of every key the object sets.
Scenario scenario_from_json(const nlohmann::json& object, Scenario base = {},
                            std::vector<std::string>* given = nullptr);
nlohmann::json scenario_to_json(const Scenario& s);

// Parses scenario text, JSON or YAML (detected), `source` names it in errors;
// the bounds of formats/input_text.hpp apply.
Scenario scenario_from_text(const std::string& text, const std::string& source,
                            std::vector<std::string>* given = nullptr);

// Sets one key from a JSON value (number, boolean or string).
void set_key_json(Scenario& s, const std::string& path, const nlohmann::json& value);
KeyValue key_value_from_json(const std::string& path, const nlohmann::json& value);
nlohmann::json key_value_to_json(const KeyValue& v);

struct Preset {
  std::string name;
  std::string description;
  Scenario scenario;
};
const std::vector<Preset>& presets();
// Throws InputError listing the preset names when `name` is unknown.
const Preset& preset_or_throw(const std::string& name);

// The key table as JSON, for the page's controls (GET /api/schema).
nlohmann::json schema_json();

}  // namespace retrystorm
