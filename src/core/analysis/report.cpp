#include "analysis/report.hpp"

#include <utility>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"

namespace retrystorm {

namespace {

RunReport report_with_trials(const Scenario& s, RunResult run, const ReportOptions& options,
                             std::vector<DefenseTrial> trials) {
  RunReport r;
  r.run = std::move(run);
  r.metrics = compute_metrics(r.run);
  r.verdict = verdict(r.run, r.metrics);
  r.goodput = goodput_table(r.run);
  if (options.trace) r.trace = decision_trace(r.run);
  // A very long run leaves the tipping point to the `tipping` command, and an
  // incident too close to the horizon leaves no length to try.
  if (options.tipping && tipping_steps(s) <= kReportTippingSteps && tipping_grid_points(s) >= 1)
    r.tipping = options.cache ? options.cache->get(s) : tipping_point(s);
  if (options.advice) r.advice = advise(r.run, r.metrics, r.tipping, std::move(trials));
  return r;
}

}  // namespace

RunReport report_of_run(const Scenario& s, RunResult run, const ReportOptions& options) {
  require_scripted_incident(s, "a run's report");
  std::vector<DefenseTrial> trials;
  if (options.advice) trials = try_defenses(s);
  return report_with_trials(s, std::move(run), options, std::move(trials));
}

RunReport make_report(const Scenario& s, const ReportOptions& options) {
  require_scripted_incident(s, "a run's report");
  if (!options.advice) return report_with_trials(s, run_engine(s), options, {});
  // The run and the defenses' runs at once: none needs another's result.
  RunResult run;
  std::vector<DefenseTrial> trials = try_defenses(s, [&] { run = run_engine(s); });
  return report_with_trials(s, std::move(run), options, std::move(trials));
}

}  // namespace retrystorm
