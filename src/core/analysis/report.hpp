// A run's report: the run and the views of it every answer shows (metrics,
// verdict, goodput table, decision trace, advice, tipping point). Assembled
// here, once, for the command line, the server and the Python module; the
// writers in src/formats only show a finished report.
#pragma once

#include <optional>
#include <vector>

#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"
#include "analysis/tipping.hpp"
#include "engines/run_result.hpp"

namespace retrystorm {

struct RunReport {
  RunResult run;
  Metrics metrics;
  Verdict verdict;
  std::vector<GoodputRow> goodput;
  std::vector<TraceEntry> trace;
  std::vector<Advice> advice;
  std::optional<TippingResult> tipping;
};
// Which views a report holds besides the run, metrics, verdict and goodput.
struct ReportOptions {
  bool advice = true;
  bool tipping = true;  // skipped anyway for a very long run (kReportTippingSteps)
  bool trace = true;
  TippingCache* cache = nullptr;  // when given, supplies the tipping point
};
// Runs a validated scenario and builds the views `options` asks for.
RunReport make_report(const Scenario& s, const ReportOptions& options = {});
// The same views of a run already made (e.g. replication 0 of a Monte Carlo).
RunReport report_of_run(const Scenario& s, RunResult run, const ReportOptions& options = {});

}  // namespace retrystorm
