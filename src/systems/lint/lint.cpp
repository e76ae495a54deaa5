#include "systems/lint.hpp"

#include <algorithm>
#include <cmath>

#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "systems/fix_edit.hpp"
#include "systems/lint/rules.hpp"

namespace retrystorm::configs {

const char* severity_name(Severity s) {
  static constexpr const char* kNames[] = {"error", "warning", "info"};  // the enum's order
  return kNames[static_cast<size_t>(s)];
}

Scenario lint_incident(const LintOptions& o) {
  return o.base ? *o.base
                : preset_or_throw(o.preset.empty() ? "primary-failover" : o.preset).scenario;
}

double checked_lint_load(double load, const std::string& option) {
  if (std::isfinite(load) && load >= 0 && load <= kMaxLintLoad) return load;
  throw InputError(option + ": " + number_text(load) + " is not a load; allowed 0 to " +
                   number_text(kMaxLintLoad) + " (demand / capacity, e.g. 0.6)");
}

double checked_lint_instances(double n, const std::string& option) {
  if (std::isfinite(n) && n >= 1 && n <= kMaxLintInstances && n == std::floor(n)) return n;
  throw InputError(option + ": " + number_text(n) +
                   " is not a number of client instances; "
                   "allowed a whole number from 1 to " +
                   number_text(kMaxLintInstances));
}

namespace {

using namespace lint;

// The client instances lint assumes: --instances, else a Kubernetes workload
// given with the files, else the scenario's own count (a scenario linted or
// simulated that sets it), else the model's default, said to be one.
ClientInstances instances_of(const ImportResult& imp, const LintOptions& o,
                             const std::optional<Scenario>& linted) {
  const double plain = Scenario().client.budget.clients;
  if (o.instances) return {*o.instances, "--instances", true};
  if (imp.instances) return {imp.instances->count, imp.instances->from, true};
  std::optional<Scenario> s = linted;
  if (!s && (o.base || !o.preset.empty())) s = lint_incident(o);
  if (s && s->client.budget.clients != plain)
    return {s->client.budget.clients, s->name + "'s client.budget.clients", true};
  return {plain, "the model's default, not read from any file", false};
}

// Errors first, then warnings, then info (the enum's order), and their counts.
void count_findings(LintReport& r) {
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  r.errors = r.warnings = r.infos = 0;
  for (const auto& f : r.findings) {
    if (f.severity == Severity::error)
      ++r.errors;
    else if (f.severity == Severity::warning)
      ++r.warnings;
    else
      ++r.infos;
  }
}

// The rules over the layers read (files, or a scenario's own policy).
LintReport lint_imported(ImportResult imported, const LintOptions& o,
                         const std::optional<Scenario>& linted) {
  LintReport r;
  r.imported = std::move(imported);
  r.instances = instances_of(r.imported, o, linted);
  Context c{r.imported, {}, r.findings, r.instances};
  for (const auto& l : r.imported.layers)
    if (l.has_retry_policy) {
      c.retrying.push_back(&l);
      r.instances_matter = r.instances_matter || (l.retries > 0 && per_instance(l));
    }
  for (size_t i = 0; i < c.retrying.size(); ++i) {
    rule_deadline(c, i);
    rule_never_retried(c, i);
    rule_budget(c, i);
    rule_no_deadline(c, i);
    rule_c_core_only(c, i);
    rule_hedging(c, i);
    rule_haproxy(c, i);
    rule_nginx(c, i);
    rule_model_cap(c, i);
    rule_haproxy_16_bit(c, i);
    rule_adaptive_limiter(c, i);
    rule_pool_wait_unbounded(c, i);
    rule_outlier_never_ejects(c, i);
    rule_aws_cap_after_jitter(c, i);
  }
  rule_layers(c);
  rule_hedging_layers(c);
  rule_counting(c);
  std::optional<double> load = o.load;
  std::string load_from = "--load";
  if (!load && (o.simulate || o.base || !o.preset.empty())) {
    Scenario base = lint_incident(o);
    // The session model has no demand / capacity ratio: its load is sessions.
    if (key_applies(base, "demand.rate_per_s")) {
      load = base.demand.rate_per_s / base.server.capacity_per_s;
      load_from = "demand / capacity of " + base.name;
    }
  }
  if (!c.retrying.empty()) rule_load(c, load, load_from);
  count_findings(r);
  return r;
}

// The instances of a graph's budgeted calls: one count when they agree, else
// each call's (a mesh gives each caller its own replicas).
ClientInstances graph_instances(const std::vector<std::pair<size_t, ClientInstances>>& calls) {
  if (calls.empty()) return {};
  ClientInstances out = calls.front().second;
  bool same = std::all_of(calls.begin(), calls.end(),
                          [&](const auto& c) { return c.second.count == out.count; });
  if (same) return out;
  out.from = "per call:";
  for (size_t k = 0; k < calls.size(); ++k) {
    const auto& [i, n] = calls[k];
    out.from += (k ? "; calls[" : " calls[") + std::to_string(i) + "] " + number_text(n.count) +
                (n.given ? "" : " (the model's default)");
  }
  out.given = std::all_of(calls.begin(), calls.end(), [](const auto& c) { return c.second.given; });
  return out;
}

// A graph: each call's own policy as one layer, then the rules of the graph
// (docs/graph.md, "Lint"). A simulation of a graph is `retrystorm run`.
LintReport lint_graph(const Scenario& s, const std::string& source, const LintOptions& o) {
  LintReport r;
  r.graph = source + ": a graph of " + std::to_string(s.graph.services.size()) + " services and " +
            std::to_string(s.graph.calls.size()) +
            " calls; each call's policy linted as one layer, at its own rate, then the graph";
  std::vector<std::pair<size_t, ClientInstances>> per_call;
  for (size_t i = 0; i < s.graph.calls.size(); ++i) {
    const GraphCall& call = s.graph.calls[i];
    Scenario alone = call_scenario(s, static_cast<int>(i));
    // Its load is its callee's, when that has a server (a proxy has no capacity).
    LintOptions one;
    one.instances = o.instances;
    if (s.graph.services[static_cast<size_t>(service_index(s.graph, call.to))].serves())
      one.base = alone;
    std::string where =
        source + " calls[" + std::to_string(i) + "] (" + call.from + " -> " + call.to + ")";
    LintReport part = lint_imported(import_scenario(alone, where), one, alone);
    for (Finding& f : part.findings) r.findings.push_back(std::move(f));
    for (LayerPolicy& l : part.imported.layers) r.imported.layers.push_back(std::move(l));
    for (std::string& f : part.imported.formats) r.imported.formats.push_back(std::move(f));
    if (part.instances_matter) per_call.push_back({i, part.instances});
    r.instances_matter = r.instances_matter || part.instances_matter;
  }
  r.instances = graph_instances(per_call);
  graph_rules(s, source, r.findings);
  count_findings(r);
  return r;
}

}  // namespace

// Each finding about one file gets its fix as an edit of that file, where
// the system says it there (systems/fix_edit.hpp).
namespace {
void attach_edits(LintReport& r, const std::vector<ConfigFile>& files) {
  for (Finding& f : r.findings) {
    auto file = std::find_if(files.begin(), files.end(),
                             [&](const ConfigFile& c) { return c.name == f.file; });
    auto layer = std::find_if(r.imported.layers.begin(), r.imported.layers.end(),
                              [&](const LayerPolicy& l) { return l.file == f.file; });
    if (file != files.end() && layer != r.imported.layers.end())
      f.edit = fix_edit(*file, *layer, f);
  }
}
}  // namespace

LintReport lint_configs(const std::vector<ConfigFile>& files, const LintOptions& o) {
  if (o.load) checked_lint_load(*o.load, "load");
  if (o.instances) checked_lint_instances(*o.instances, "instances");
  LintReport r = lint_imported(import_configs(files, false), o, std::nullopt);  // out of range too
  attach_edits(r, files);
  return r;
}

LintReport lint_scenario(const Scenario& s, const std::string& source, const LintOptions& o) {
  if (o.load) checked_lint_load(*o.load, "load");
  if (o.instances) checked_lint_instances(*o.instances, "instances");
  if (!s.graph.empty()) return lint_graph(s, source, o);
  return lint_imported(import_scenario(s, source), o, s);
}

}  // namespace retrystorm::configs
