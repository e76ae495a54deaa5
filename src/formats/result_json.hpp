// JSON views of finished results (a report assembled by analysis/report.hpp,
// a sweep, a ladder), with the names docs/cli.md gives them.
// Values keep full precision; the same input gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/graph_report.hpp"
#include "analysis/ladder.hpp"
#include "analysis/report.hpp"
#include "analysis/run_montecarlo.hpp"
#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"

namespace retrystorm {

// A figure that may be missing: null when absent or not finite (an
// expected time beyond what can be computed), else the number.
nlohmann::json optional_json(const std::optional<double>& v);

nlohmann::json metrics_json(const Metrics& m);
nlohmann::json series_json(const Series& s);
// A graph's run per service and per edge: totals and series (docs/graph.md).
nlohmann::json graph_json(const RunResult& run);

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
