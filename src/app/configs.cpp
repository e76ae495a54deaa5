#include "app/configs.hpp"

#include "app/lint_simulation.hpp"
#include "formats/input_text.hpp"

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
  const configs::SystemFacts& f = configs::facts(r.system);
  return {{"text", r.text}, {"notes", r.notes}, {"system", f.name}, {"extension", f.extension}};
}

configs::LintReport lint(const LintRequest& r) {
  // The scenario's own policy, as it is: no text written and read back.
  configs::LintReport report = r.files.empty() && r.scenario
                                   ? configs::lint_scenario(*r.scenario, r.source, r.options)
                                   : configs::lint_configs(r.files, r.options);  // none: refused
  if (r.options.simulate) report.simulation = simulate_lint(report, r.options);
  return report;
}

}  // namespace retrystorm::app
