#include "app/scenario_request.hpp"

#include "formats/input_text.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm::app {

namespace {

// Sets one key; returns its path, for ignored_keys().
std::string apply(Scenario& s, const KeySetting& k) {
  if (k.json) {
    set_key_json(s, k.text, *k.json);
    return k.text;
  }
  auto eq = k.text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set: '" + k.text + "' must look like PATH=VALUE, e.g. client.retries=0");
  set_key_text(s, k.text.substr(0, eq), k.text.substr(eq + 1));
  return k.text.substr(0, eq);
}

}  // namespace

AssembledScenario assemble_scenario(const ScenarioRequest& r) {
  Scenario s;
  std::vector<std::string> given;  // the keys the request set, for ignored_keys()
  if (!r.preset.empty())
    s = preset_or_throw(r.preset).scenario;
  else if (!r.file.empty())
    s = scenario_from_text(r.file_text ? *r.file_text : read_input_file(r.file, "--scenario"),
                           r.file, &given);
  else if (r.scenario)
    s = scenario_from_json(*r.scenario, Scenario{}, &given);
  else
    s = preset_or_throw(r.fallback).scenario;
  for (const KeySetting& k : r.sets) given.push_back(apply(s, k));
  validate(s, r.limits);
  Scenario judged = s;
  if (r.warn_for_engine) judged.engine = *r.warn_for_engine;
  return {s, ignored_keys(judged, given)};
}

}  // namespace retrystorm::app
