#include <cmath>
#include <map>
#include <sstream>

#include "formats/scenario_io.hpp"
#include "systems/lint.hpp"
#include "systems/lint/rules.hpp"

namespace retrystorm::configs {

using lint::kFitQuantile;
using lint::LadderView;
using nlohmann::json;

namespace {

// A fix's keys as one object: by path, the last value of a path kept.
json keys_json(const std::vector<std::pair<std::string, KeyValue>>& keys) {
  json out = json::object();
  for (const auto& [path, value] : keys) out[path] = key_value_to_json(value);
  return out;
}

json outcome_json(const SimulatedOutcome& m) {
  return {{"recovered", m.recovered},
          {"recovery_s", m.recovery_s ? json(*m.recovery_s) : json(nullptr)},
          {"failed_fraction", m.failed_fraction},
          {"wasted_fraction", m.wasted_fraction},
          {"peak_amplification", m.peak_amplification},
          {"backlog_growing", m.backlog_growing},
          {"safe_load_below", m.safe_load_below},
          {"retries_sent", m.retries_sent},
          {"budget_denied", m.budget_denied}};
}

json fix_json(const SimulatedFix& f, bool with_file) {
  json row = {{"rule", f.rule}, {"set", keys_json(f.set)}};
  if (with_file) row["file"] = f.file;
  if (f.outcome)
    row["metrics"] = outcome_json(*f.outcome);
  else
    row["error"] = f.error;
  return row;
}

json simulation_json(const LintSimulation& s) {
  json out = {{"scenario", s.scenario}, {"description", s.description}};
  out["as_configured"] = outcome_json(s.as_configured);
  json fixes = json::array();
  for (const SimulatedFix& f : s.fixes) fixes.push_back(fix_json(f, true));
  out["fixes"] = fixes;
  if (s.all_fixes) out["all_fixes"] = fix_json(*s.all_fixes, false);
  json ladder = json::array();
  for (const auto& [name, m] : s.ladder)
    ladder.push_back({{"name", name}, {"metrics", outcome_json(m)}});
  out["ladder"] = ladder;
  json instances = json::array();
  for (const auto& [n, m] : s.instances)
    instances.push_back({{"instances", n}, {"metrics", outcome_json(m)}});
  out["instances"] = instances;
  out["notes"] = s.notes;
  return out;
}

std::string outcome_text(const SimulatedOutcome& m) {
  std::ostringstream o;
  if (m.recovered)
    o << "recovers " << (m.recovery_s ? human_duration(*m.recovery_s) : std::string("?"))
      << " after the incident";
  else
    o << "does not recover";
  o << "; failed " << number_text(std::round(m.failed_fraction * 1000) / 10) << "%, wasted "
    << number_text(std::round(m.wasted_fraction * 1000) / 10) << "%, peak amplification "
    << number_text(std::round(m.peak_amplification * 100) / 100) << "x";
  return o.str();
}

std::string fix_outcome_text(const SimulatedFix& f) {
  return f.outcome ? outcome_text(*f.outcome) : f.error;
}

// "client.retries=1, client.budget.kind=window": by path, as JSON orders them.
std::string keys_text(const std::vector<std::pair<std::string, KeyValue>>& keys) {
  std::map<std::string, KeyValue> by_path;
  for (const auto& [path, value] : keys) by_path[path] = value;
  std::string out;
  for (const auto& [path, value] : by_path) {
    std::string shown = std::holds_alternative<std::string>(value) ? std::get<std::string>(value)
                        : std::holds_alternative<double>(value)
                            ? number_text(std::get<double>(value))
                            : (std::get<bool>(value) ? "true" : "false");
    out += (out.empty() ? "" : ", ") + path + "=" + shown;
  }
  return out;
}

void simulation_text(std::ostringstream& o, const LintSimulation& s) {
  o << "\nsimulation: " << s.scenario << " with the imported policy\n";
  o << "  as configured: " << outcome_text(s.as_configured) << "\n";
  for (const SimulatedFix& f : s.fixes)
    o << "  fix " << f.rule << " (" << keys_text(f.set) << "): " << fix_outcome_text(f) << "\n";
  if (s.all_fixes) o << "  all fixes together: " << fix_outcome_text(*s.all_fixes) << "\n";
  o << "  defense ladder:\n";
  for (const auto& [name, m] : s.ladder) o << "    " << name << ": " << outcome_text(m) << "\n";
  if (!s.instances.empty())
    o << "  as configured, by client instances (the budget is per instance):\n";
  for (const auto& [n, m] : s.instances)
    o << "    with " << number_text(n) << (n == 1 ? " instance: " : " instances: ")
      << outcome_text(m) << "; " << text::grouped_text(m.retries_sent) << " retries sent, "
      << text::grouped_text(m.budget_denied) << " denied\n";
  for (const auto& n : s.notes) o << "  note: " << n << "\n";
}

}  // namespace

std::string lint_text(const LintReport& r) {
  std::ostringstream o;
  o << "retrystorm lint: ";
  for (size_t i = 0; r.graph.empty() && i < r.imported.formats.size(); ++i)
    o << (i ? "; " : "") << r.imported.formats[i];
  o << r.graph << "\n";
  if (r.imported.layers.size() > 1 && r.graph.empty()) {
    o << "stack, outermost first:";
    for (const auto& l : r.imported.layers) o << " [" << l.file << "]";
    o << "\n";
  }
  if (r.instances_matter)
    o << "client instances: "
      << (r.instances.from.rfind("per call:", 0) == 0
              ? r.instances.from
              : number_text(r.instances.count) + " (" + r.instances.from + ")")
      << (r.instances.given ? ""
                            : "; budgets here are per instance: give --instances N, or the "
                              "Kubernetes Deployment beside the files")
      << "\n";
  o << "\n";
  for (const auto& f : r.findings) {
    std::string severity = severity_name(f.severity);
    o << severity << std::string(8 - severity.size(), ' ') << f.rule << "  (" << f.file << ")\n";
    o << "  " << f.message << "\n";
    if (!f.fix.empty()) o << "  fix: " << f.fix << "\n";
    if (f.edit) o << "  edit of " << f.edit->file << ": " << f.edit->change << "\n";
    o << "\n";
  }
  o << r.findings.size() << (r.findings.size() == 1 ? " finding" : " findings") << ": " << r.errors
    << (r.errors == 1 ? " error, " : " errors, ") << r.warnings
    << (r.warnings == 1 ? " warning, " : " warnings, ") << r.infos << " info\n";
  if (r.simulation) simulation_text(o, *r.simulation);
  return o.str();
}

namespace {

// A layer's ladder as run reports it and lint reasons over it (the same
// ClientPolicy ladder): mean, 99th percentile, worst case, and the share of
// requests whose attempts all fail that it carries past the deadline.
json ladder_json(const LayerPolicy& l) {
  LadderView v(l);
  json out = {{"retries", l.retries},
              {"mean_s", v.alone.mean_s()},
              {"p99_s", v.alone.quantile(kFitQuantile)},
              {"max_s", v.alone.max_s()}};
  double deadline = l.deadline_s.value_or(0);
  if (deadline > 0) {
    out["deadline_s"] = deadline;
    out["p_exceeds_deadline"] = v.total.p_exceeds(deadline);
  }
  return out;
}
}  // namespace

json lint_json(const LintReport& r) {
  json files = json::array();
  for (const auto& f : r.imported.formats) files.push_back(f);
  json layers = json::array();
  for (const auto& l : r.imported.layers)
    layers.push_back({{"file", l.file},
                      {"format", l.format},
                      {"system", system_name(l.system)},
                      {"retries", l.retries},
                      {"budget", budget_kind_name(l.budget.kind)},
                      {"ladder", ladder_json(l)}});
  json findings = json::array();
  for (const auto& f : r.findings) {
    json keys = keys_json(f.fix_keys);
    findings.push_back({{"severity", severity_name(f.severity)},
                        {"rule", f.rule},
                        {"file", f.file},
                        {"message", f.message},
                        {"fix", f.fix},
                        {"numbers", f.numbers},
                        {"fix_keys", keys}});
    if (f.edit)  // the fix written into the file: its whole edited text
      findings.back()["edit"] = {
          {"file", f.edit->file}, {"change", f.edit->change}, {"text", f.edit->text}};
  }
  json out = {{"formats", files},
              {"layers", layers},
              {"keys", keys_flat(r.imported.keys)},
              {"warnings", r.imported.warnings},
              {"findings", findings},
              {"summary", {{"errors", r.errors}, {"warnings", r.warnings}, {"info", r.infos}}},
              {"exit_status", r.exit_status()}};
  out["instances"] = {{"count", r.instances.count},
                      {"from", r.instances.from},
                      {"given", r.instances.given},
                      {"matters", r.instances_matter}};
  if (!r.graph.empty()) out["graph"] = r.graph;
  if (r.simulation) out["simulation"] = simulation_json(*r.simulation);
  return out;
}

}  // namespace retrystorm::configs
