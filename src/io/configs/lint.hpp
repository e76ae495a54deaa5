// Linting retry configurations: the rules of docs/configs.md ("Lint
// rules"), each finding with its numbers and fix,
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

// The largest load (demand / capacity) lint takes, from the CLI and the server.
constexpr double kMaxLintLoad = 100;

// `load` when it is a number from 0 to kMaxLintLoad; else throws InputError
// naming `option` ("--load", "load"), the value and the range. NaN and
// infinities are refused too (a range check alone lets NaN through).
double checked_lint_load(double load, const std::string& option);

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
// Lints a scenario's own client policy, passed as it is (import_scenario):
// `source` names it in findings ("preset scheduler-429-outage").
LintReport lint_scenario(const Scenario& s, const std::string& source,
                         const LintOptions& options = {});
std::string lint_text(const LintReport& r);
nlohmann::json lint_json(const LintReport& r);

}  // namespace retrystorm::configs
