// The scenario a request names, assembled one way for every front end (the
// command line's --preset/--scenario/--set, the HTTP API's preset/scenario/set).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::app {

// One key set by the request: "PATH=VALUE" as typed after --set, or a path
// and a JSON value of a request's "set" object.
struct KeySetting {
  std::string text;  // "PATH=VALUE"; with `json`, the path alone
  std::optional<nlohmann::json> json;
};

// Where the scenario comes from. At most one of preset, file and scenario is
// given (each front end refuses two in its own words); none: the fallback preset.
struct ScenarioRequest {
  std::string preset;  // a preset name ("": none)
  std::string file;    // a scenario file, YAML or JSON (read here)
  // The file's text when the caller read it already (a pipe reads once): `file` names it.
  std::optional<std::string> file_text;
  std::optional<nlohmann::json> scenario;  // a scenario object, as in a file
  std::vector<KeySetting> sets;            // applied in order, after the above
  std::string fallback = "order-status";
  RunLimits limits;  // what validation allows
  // The engine whose reading of the keys the warnings judge, where the
  // command runs another than the scenario names (risk runs the agent
  // engine); none: the scenario's own.
  std::optional<Engine> warn_for_engine;
};

struct AssembledScenario {
  Scenario scenario;
  // One line per key the request set that this scenario's engine ignores.
  std::vector<std::string> warnings;
};

// The scenario, validated. Throws InputError naming the bad part.
AssembledScenario assemble_scenario(const ScenarioRequest& request);

}  // namespace retrystorm::app
