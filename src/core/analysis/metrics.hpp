// Metrics of one run: docs/fluid-model.md, "Metrics" (names as in docs/cli.md).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "engines/run_result.hpp"

namespace retrystorm {

struct LastWindow {
  double seconds = 60;
  double goodput_per_s = 0;
  double utilization = 0;
  double attempts_per_request = 0;
};

// The model bound: with every response late, demand reaches
// max_amplification x normal; the backlog surely drains only below
// safe_load_below of capacity.
struct Bound {
  double max_amplification = 1;
  double safe_load_below = 1;
  double load = 0;  // demand / capacity outside the incident
};

struct Metrics {
  double user_requests = 0;
  double failed = 0;
  double failed_fraction = 0;
  double succeeded = 0;
  double in_flight = 0;
  double served = 0;
  double served_on_time = 0;
  double served_late = 0;
  double shed = 0;
  double rejected = 0;
  double budget_denied = 0;
  double retries = 0;  // retries sent over the run (lint's instance rows; not in metric_fields)
  double wasted_fraction = 0;
  double peak_amplification = 0;
  double peak_t_s = 0;
  std::optional<double> goodput_recovery_s;
  std::optional<double> failure_recovery_s;
  bool backlog_growing = false;
  bool recovered = false;  // by the scenario's recovery.criterion
  LastWindow last_window;
  Bound bound;
  // Latency percentiles of successful requests (per-request engines; the
  // fluid model knows amounts, not requests).
  std::optional<double> latency_p50_s, latency_p90_s, latency_p99_s;
};

Metrics compute_metrics(const RunResult& run);

// InputError for incidents at random (incident.random_per_h): `what` (a run's
// report, a ladder, a tipping point) measures recovery from the scripted
// incident's end; `retrystorm risk` is what reads them.
void require_scripted_incident(const Scenario& s, std::string_view what);

// How a figure reads: a number, a number or null, true or false.
enum class FigureKind { number, optional, flag };

// One figure of Metrics, described once: its place in the JSON answer (group
// "" is the top level, else the nested object: last_window, bound,
// latency_s), its name in Monte Carlo summaries (empty: not summarised; a
// flag counts as 1 or 0) and how to read it (missing: null, never happened).
struct MetricField {
  std::string_view group;
  std::string_view name;
  std::string_view montecarlo_name;
  FigureKind kind;
  std::optional<double> (*get)(const Metrics&);
};

// Every figure; the Monte Carlo summaries (and `run --runs N`'s table) list
// theirs in this order.
std::span<const MetricField> metric_fields();
// The top-level figure named `name` (a programming error when none is).
const MetricField& metric_field(std::string_view name);

// (first attempts + retries sent) / first attempts over [from_s, to_s).
double attempts_per_request(const RunResult& run, double from_s, double to_s);

// The recovery time the scenario's criterion names (null when stuck).
std::optional<double> recovery_time(const Metrics& m, const Scenario& s);

}  // namespace retrystorm
