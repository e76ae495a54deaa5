// JSON views of results, with the names of contract.md ("JSON result").
// Values keep full precision; the same input gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/ladder.hpp"
#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "engines/montecarlo.hpp"

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
// Runs a validated scenario and builds every view of it.
// A cache, when given, supplies the tipping point.
RunReport make_report(const Scenario& s, bool with_advice = true, bool with_tipping = true,
                      TippingCache* cache = nullptr, bool with_trace = true);

// The trace is left out when the report has none (see make_report).
nlohmann::json run_json(const RunReport& r);
// The Monte Carlo part of a `run` answer: each metric's mean and interval,
// and the goodput band.
nlohmann::json montecarlo_json(const MonteCarloResult& mc);
nlohmann::json advice_json(const std::vector<Advice>& advice);
nlohmann::json trace_json(const std::vector<TraceEntry>& trace);
nlohmann::json ladder_json(const std::vector<LadderResult>& rows);
nlohmann::json tipping_json(const TippingResult& t);
nlohmann::json sweep_json(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows);

}  // namespace retrystorm
