// Linting retry configurations: the rules of ../shared/reference/retry-configs.md
// ("Lint rules these facts support"), each finding with its numbers and fix,
// and optionally a simulation of an incident with the imported policy.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/configs/import.hpp"

namespace retrystorm::configs {

struct Finding {
  std::string severity;  // error | warning | info
  std::string rule;      // ladder-exceeds-deadline, ...
  std::string file;      // the file (or files) it is about
  std::string message;   // the finding with its numbers
  std::string fix;       // what to change, in the system's own terms
  nlohmann::json numbers = nlohmann::json::object();
  std::vector<std::pair<std::string, KeyValue>> fix_keys;  // the fix as scenario keys
};

struct LintOptions {
  std::optional<double> load;  // demand / capacity outside incidents
  bool simulate = false;
  std::string preset;            // incident to simulate (default primary-failover)
  std::optional<Scenario> base;  // or a scenario file instead of a preset
};

struct LintReport {
  ImportResult imported;
  std::vector<Finding> findings;
  nlohmann::json simulation;  // null unless simulated
  int errors = 0, warnings = 0, infos = 0;
  int exit_status() const { return errors + warnings > 0 ? 1 : 0; }
};

// Throws InputError for broken files (exit 2).
LintReport lint_configs(const std::vector<ConfigFile>& files, const LintOptions& options = {});
std::string lint_text(const LintReport& r);
nlohmann::json lint_json(const LintReport& r);

// The ladder of backoff delays of a layer (explicit, or from base, multiplier, cap).
std::vector<double> backoff_ladder(const LayerPolicy& l);

}  // namespace retrystorm::configs
