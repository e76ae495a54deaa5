// Views of a run a person reads: the headline verdict, the goodput table,
// the step-by-step decision trace and the ranked advice. All text here is
// ours; numbers come from the run.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "analysis/tipping.hpp"
#include "engines/run_result.hpp"
#include "text/units.hpp"  // format_percent

namespace retrystorm {

struct Verdict {
  bool recovered = false;
  std::string headline;  // "Recovered 19 s after the incident ended"
  std::string detail;    // why, with the model bound
};
Verdict verdict(const RunResult& run, const Metrics& m);

struct GoodputRow {
  double t_s;
  std::string phase;  // before | during | after
  double goodput_per_s;
};
// Goodput per second at chosen seconds before, during and after the
// incident; `at` overrides the automatic choice.
std::vector<GoodputRow> goodput_table(const RunResult& run, std::vector<double> at = {});

struct TraceEntry {
  double t_s;
  std::string text;
};
// One line per step: what arrived, was served on time or late, gave up,
// was retried, denied, rejected or shed, and why.
std::vector<TraceEntry> decision_trace(const RunResult& run);

// The service whose arrivals the load chart and the decision trace show: a
// graph's incident service (docs/graph.md), whose own first attempts and
// retries may be several per user request; null without a graph (the
// top-level series, which count each user request once).
const ServiceSeries* charted_service(const RunResult& run);

struct Advice {
  std::string title;
  std::string why;
  std::vector<std::pair<std::string, KeyValue>> change;  // empty: no single change
  std::optional<double> failed_fraction;                 // with the change, when run
  bool recovers = false;
};
// A defense tried as one change to the scenario: the scenario with it and
// its run's metrics.
struct DefenseTrial {
  Advice advice;  // failed_fraction and recovers not yet filled in
  Scenario changed;
  Metrics with;
};
// Runs each defense advise() tries for `s`, on every core; `beside`, when
// given, runs first among them (the scenario's own run, the longest), so
// that the report's runs all start at once.
std::vector<DefenseTrial> try_defenses(const Scenario& s, const std::function<void()>& beside = {});
// How many runs try_defenses makes (the report's advice: its price).
size_t defense_trials(const Scenario& s);
// Ranks the defenses that help (trials: try_defenses(run.scenario)); then
// adds what the run itself says (backoff alone, headroom).
std::vector<Advice> advise(const RunResult& run, const Metrics& m,
                           const std::optional<TippingResult>& tipping,
                           std::vector<DefenseTrial> trials);

// "12.5", "0.05", "64,170": numbers as the reports print them.
std::string format_amount(double v);
std::string format_seconds(double s);  // "21.05 s"

}  // namespace retrystorm
