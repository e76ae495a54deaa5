#include "analysis/report.hpp"

#include <utility>

#include "engines/engine.hpp"

namespace retrystorm {

RunReport report_of_run(const Scenario& s, RunResult run, const ReportOptions& options) {
  RunReport r;
  r.run = std::move(run);
  r.metrics = compute_metrics(r.run);
  r.verdict = verdict(r.run, r.metrics);
  r.goodput = goodput_table(r.run);
  if (options.trace) r.trace = decision_trace(r.run);
  // A very long run leaves the tipping point to the `tipping` command.
  if (options.tipping && tipping_steps(s) <= kReportTippingSteps)
    r.tipping = options.cache ? options.cache->get(s) : tipping_point(s);
  if (options.advice) r.advice = advise(r.run, r.metrics, r.tipping);
  return r;
}

RunReport make_report(const Scenario& s, const ReportOptions& options) {
  return report_of_run(s, run_engine(s), options);
}

}  // namespace retrystorm
