#include "app/configs.hpp"

#include "io/input_text.hpp"

namespace retrystorm::app {

std::vector<configs::ConfigFile> read_config_files(const std::vector<std::string>& paths) {
  std::vector<configs::ConfigFile> files;
  for (const auto& p : paths) files.push_back({p, read_input_file(p, "file")});
  return files;
}

nlohmann::json import_json(const configs::ImportResult& r) {
  return {{"keys", configs::keys_flat(r.keys)}, {"warnings", r.warnings}, {"formats", r.formats}};
}

nlohmann::json import_details_json(const configs::ImportResult& r) {
  nlohmann::json j = import_json(r);
  j["scenario"] = configs::keys_object(r.keys);
  nlohmann::json from = nlohmann::json::object();
  for (const auto& k : r.keys) from[k.path] = k.from;
  j["from"] = from;
  return j;
}

nlohmann::json export_json(const configs::ExportResult& r) {
  return {{"text", r.text}, {"notes", r.notes}};
}

configs::LintReport lint(const LintRequest& r) {
  // The scenario's own policy, as it is: no text written and read back.
  if (r.files.empty() && r.scenario)
    return configs::lint_scenario(*r.scenario, r.source, r.options);
  return configs::lint_configs(r.files, r.options);  // none: "give at least one file"
}

}  // namespace retrystorm::app
