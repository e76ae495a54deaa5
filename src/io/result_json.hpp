// JSON views of results, with the names docs/cli.md gives them.
// Values keep full precision; the same input gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/ladder.hpp"
#include "analysis/run_montecarlo.hpp"
#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"

namespace retrystorm {

nlohmann::json metrics_json(const Metrics& m);
nlohmann::json series_json(const Series& s);

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

// The trace is left out when the report has none (see make_report).
nlohmann::json run_json(const RunReport& r);
// The Monte Carlo part of a `run` answer: each metric's mean and interval,
// and the goodput band.
nlohmann::json montecarlo_json(const MonteCarloResult& mc);
// Each figure's mean, interval, min, median, max and n (all null but n when
// it never happened): the `metrics` of every Monte Carlo answer.
nlohmann::json summaries_json(const Summaries& metrics);
nlohmann::json advice_json(const std::vector<Advice>& advice);
nlohmann::json trace_json(const std::vector<TraceEntry>& trace);
nlohmann::json ladder_json(const std::vector<LadderResult>& rows);
nlohmann::json tipping_json(const TippingResult& t);
nlohmann::json sweep_json(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows);

}  // namespace retrystorm
