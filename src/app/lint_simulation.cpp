#include "app/lint_simulation.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"
#include "text/units.hpp"

namespace retrystorm::app {

using configs::SimulatedFix;
using configs::SimulatedOutcome;
using KeyFix = std::vector<std::pair<std::string, KeyValue>>;

namespace {

// The fluid engine's timeouts are whole steps: a timeout between two is
// rounded, and said so once.
void snap_timeouts(Scenario& s, std::vector<std::string>& notes) {
  double step = s.step_s;
  double t = s.client.timeout_s;
  double snapped = std::max(step, std::round(t / step) * step);
  if (std::fabs(snapped - t) > 1e-12) {
    set_key(s, "client.timeout_s", snapped);
    // In milliseconds as people write them: a decimal timeout read from a
    // file (0.285 s) and its multiple of the step carry binary noise.
    std::string note = "client.timeout_s " + human_duration(t) + " rounded to " +
                       human_duration(snapped) + " (a whole number of " + human_duration(step) +
                       " steps)";
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  }
}

SimulatedOutcome outcome_of(const Scenario& s, const Metrics& m) {
  return {m.recovered,          recovery_time(m, s), m.failed_fraction,       m.wasted_fraction,
          m.peak_amplification, m.backlog_growing,   m.bound.safe_load_below, m.retries,
          m.budget_denied};
}

// One row: the scenario with `keys` set, on its engine.
SimulatedOutcome run_with(Scenario s, const KeyFix& keys, std::vector<std::string>& notes) {
  for (const auto& [path, v] : keys) set_key(s, path, v);
  snap_timeouts(s, notes);
  validate(s);
  return outcome_of(s, compute_metrics(run_engine(s)));
}

// A fix row: its outcome, or why its keys do not run.
SimulatedFix fix_row(const Scenario& s, SimulatedFix row, std::vector<std::string>& notes) {
  try {
    row.outcome = run_with(s, row.set, notes);
  } catch (const InputError& e) {
    row.error = e.what();
  }
  return row;
}

// The incident with the imported keys; InputError when it cannot run them.
Scenario incident_with_policy(const configs::LintReport& r, const configs::LintOptions& o,
                              std::vector<std::string>& notes) {
  Scenario base = configs::lint_incident(o);
  if (!engine_facts(base).run)
    throw InputError("--simulate: scenario '" + base.name +
                     "' runs on the session model (engine: sessions), which has no per-step "
                     "run to try a policy on; simulate with a fluid or agent scenario, e.g. "
                     "--preset primary-failover");
  Scenario s = base;
  KeyFix imported;
  for (const auto& k : r.imported.keys) imported.emplace_back(k.path, k.value);
  bool has_timeout = std::any_of(imported.begin(), imported.end(),
                                 [](const auto& kv) { return kv.first == "client.timeout_s"; });
  if (!has_timeout)
    notes.push_back("the files set no per-attempt timeout; the scenario's " +
                    number_text(base.client.timeout_s) + " s is kept");
  for (const auto& [path, v] : imported) set_key(s, path, v);
  set_key(s, "client.budget.clients", r.instances.count);  // --instances over the files'
  snap_timeouts(s, notes);
  try {
    validate(s);
  } catch (const InputError& e) {
    throw InputError(std::string("--simulate: the imported policy does not run: ") + e.what());
  }
  return s;
}

// The policy as configured with 1, 10, 100 and `count` client instances
// (the run of `count` is `as_configured`): how much the verdict depends on a
// number that a retry configuration does not state.
std::vector<std::pair<double, SimulatedOutcome>> by_instances(
    const Scenario& s, double count, const SimulatedOutcome& as_configured) {
  std::vector<double> counts = {1, 10, 100, count};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<std::pair<double, SimulatedOutcome>> rows;
  for (double n : counts) {
    if (n == count) {
      rows.emplace_back(n, as_configured);
      continue;
    }
    Scenario with = s;
    set_key(with, "client.budget.clients", n);
    rows.emplace_back(n, outcome_of(with, compute_metrics(run_engine(with))));
  }
  return rows;
}

}  // namespace

Cost lint_simulation_cost(const configs::LintReport& r, const configs::LintOptions& o) {
  std::vector<std::string> notes;
  const Scenario s = incident_with_policy(r, o, notes);
  double runs = 1;  // as configured
  size_t fixes = 0;
  for (const auto& f : r.findings)
    if (!f.fix_keys.empty() && f.severity != configs::Severity::info) ++fixes;
  runs += double(fixes) + (fixes > 1 ? 1 : 0);
  if (r.instances_matter) runs += 3;  // 1, 10 and 100 instances beside the configured count
  Cost cost = engine_run_cost(s);
  const std::string one = cost.size;
  cost.seconds *= runs;
  cost.size = number_text(runs) + " runs of " + one + " and the defense ladder";
  cost += ladder_cost(s);
  return cost;
}

configs::LintSimulation simulate_lint(const configs::LintReport& r, const configs::LintOptions& o) {
  configs::LintSimulation out;
  Scenario s = incident_with_policy(r, o, out.notes);
  out.scenario = s.name;
  out.description = s.description;
  out.as_configured = outcome_of(s, compute_metrics(run_engine(s)));
  KeyFix all;  // every fix's keys, a later fix's value winning
  for (const auto& f : r.findings) {
    if (f.fix_keys.empty() || f.severity == configs::Severity::info) continue;
    for (const auto& kv : f.fix_keys) {
      auto it = std::find_if(all.begin(), all.end(),
                             [&kv](const auto& e) { return e.first == kv.first; });
      if (it == all.end())
        all.push_back(kv);
      else
        it->second = kv.second;
    }
    out.fixes.push_back(fix_row(s, {f.rule, f.file, f.fix_keys, std::nullopt, ""}, out.notes));
  }
  if (out.fixes.size() > 1)
    out.all_fixes = fix_row(s, {"all fixes", "", all, std::nullopt, ""}, out.notes);
  for (const auto& row : run_ladder(s))
    out.ladder.emplace_back(row.row.name, outcome_of(row.scenario, row.metrics));
  if (r.instances_matter) out.instances = by_instances(s, r.instances.count, out.as_configured);
  return out;
}

}  // namespace retrystorm::app
