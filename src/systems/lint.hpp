// Linting retry configurations: the rules of docs/configs.md ("Lint
// rules"), each finding with its numbers and fix, and optionally a simulation
// of an incident with the imported policy (computed by app/lint_simulation).
// One typed report; lint_text and lint_json are two views of it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "systems/import.hpp"

namespace retrystorm::configs {

enum class Severity { error, warning, info };
const char* severity_name(Severity s);  // "error", "warning", "info"

// A fix written into the user's file: its whole edited text.
struct FileEdit {
  std::string file;    // the file's name, as given
  std::string change;  // what changed, in the system's terms ("retryThrottling added")
  std::string text;    // the edited file
};

struct Finding {
  Severity severity = Severity::info;
  std::string rule;     // ladder-exceeds-deadline, ...
  std::string file;     // the file (or files) it is about
  std::string message;  // the finding with its numbers
  std::string fix;      // what to change, in the system's own terms
  nlohmann::json numbers = nlohmann::json::object();
  std::vector<std::pair<std::string, KeyValue>> fix_keys;  // the fix as scenario keys
  std::optional<FileEdit> edit;  // the fix as an edit of the file, where one file says it
};

// The largest load (demand / capacity) lint takes, from the CLI and the server.
constexpr double kMaxLintLoad = 100;

// `load` when it is a number from 0 to kMaxLintLoad; else throws InputError
// naming `option` ("--load", "load"), the value and the range. NaN and
// infinities are refused too (a range check alone lets NaN through).
double checked_lint_load(double load, const std::string& option);

// The largest number of client instances lint takes (client.budget.clients).
constexpr double kMaxLintInstances = 1e7;
// `n` when it is a whole number from 1 to kMaxLintInstances; else throws
// InputError naming `option` ("--instances", "instances"), the value and the range.
double checked_lint_instances(double n, const std::string& option);

struct LintOptions {
  std::optional<double> load;       // demand / capacity outside incidents
  std::optional<double> instances;  // client instances (--instances), over any file's
  bool simulate = false;
  std::string preset;            // incident to simulate (default primary-failover)
  std::optional<Scenario> base;  // or a scenario file instead of a preset
};

// How one simulated run went: the as-configured policy, a fix, a ladder row.
struct SimulatedOutcome {
  bool recovered = false;
  std::optional<double> recovery_s;  // after the incident
  double failed_fraction = 0, wasted_fraction = 0, peak_amplification = 0;
  bool backlog_growing = false;
  double safe_load_below = 1;
  double retries_sent = 0, budget_denied = 0;  // over the run
};

// A fix (or all fixes together) run on the incident: its keys, and how it
// went or why it could not run.
struct SimulatedFix {
  std::string rule;
  std::string file;  // empty for all fixes together
  std::vector<std::pair<std::string, KeyValue>> set;
  std::optional<SimulatedOutcome> outcome;
  std::string error;  // when there is no outcome
};

struct LintSimulation {
  std::string scenario, description;
  SimulatedOutcome as_configured;
  std::vector<SimulatedFix> fixes;
  std::optional<SimulatedFix> all_fixes;                         // when there are two fixes or more
  std::vector<std::pair<std::string, SimulatedOutcome>> ladder;  // the defense ladder's rows
  // The policy as configured with other numbers of client instances, where
  // its budget holds amounts per instance (LintReport::instances_matter).
  std::vector<std::pair<double, SimulatedOutcome>> instances;
  std::vector<std::string> notes;
};

// How many client instances the findings and the simulation assume: per
// instance budget amounts (Envoy's cap, gRPC tokens, the AWS quota,
// Linkerd's reserve) scale by it.
struct ClientInstances {
  double count = 100;
  std::string from;    // "--instances", "deploy.yaml:6: spec.replicas: 12 (Deployment a)", ...
  bool given = false;  // false: the model's default, which no file or option states
};

struct LintReport {
  std::string graph;  // a graph of services: what was linted (docs/graph.md, "Lint")
  ImportResult imported;
  std::vector<Finding> findings;
  std::optional<LintSimulation> simulation;
  ClientInstances instances;
  bool instances_matter = false;  // a retrying layer's budget holds per-instance amounts
  int errors = 0, warnings = 0, infos = 0;
  int exit_status() const { return errors + warnings > 0 ? 1 : 0; }
};

// Throws InputError for broken files (exit 2).
LintReport lint_configs(const std::vector<ConfigFile>& files, const LintOptions& options = {});
// Lints a scenario's own client policy, passed as it is (import_scenario):
// `source` names it in findings ("preset scheduler-429-outage").
LintReport lint_scenario(const Scenario& s, const std::string& source,
                         const LintOptions& options = {});
// The incident a simulation runs: the options' scenario, else their preset
// (default primary-failover).
Scenario lint_incident(const LintOptions& options);

std::string lint_text(const LintReport& r);
nlohmann::json lint_json(const LintReport& r);

}  // namespace retrystorm::configs
