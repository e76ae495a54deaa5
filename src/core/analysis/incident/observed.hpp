// `analyze --prometheus`: the diagnosis of a run from the counters a proxy or a
// client library exports (docs/prometheus.md), without I/O. The series are
// rebuilt into a RunResult so the verdict, the amplification, the failed share
// and the recovery time are computed by the same code as `run`'s
// (analysis/metrics.hpp, analysis/summary.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/incident/replay.hpp"
#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"

namespace retrystorm::incident {

// Amounts per step of `step_s` seconds, from `start_unix_s`. An empty series
// is one the metrics do not carry.
struct ObservedSeries {
  double start_unix_s = 0;
  double step_s = 1;
  std::vector<double> requests;   // user requests (first attempts)
  std::vector<double> retries;    // retries sent
  std::vector<double> successes;  // user requests that succeeded
  std::vector<double> failed;     // user requests that failed
  std::vector<double> timeouts;   // attempts their client timed out
  std::vector<double> overflow;   // retries refused by a budget or a circuit breaker
  std::vector<double> in_flight;  // attempts in flight (a gauge)
  std::vector<double> slow;       // attempts at or above the timeout (latency histogram)
  std::vector<double> measured;   // attempts in the latency histogram
  // Outcome quantities no series matched, read as 0 ("failed 'expr'").
  std::vector<std::string> no_series;
  size_t size() const { return requests.size(); }
};

struct ObservedOptions {
  std::optional<double> trigger_start_s;  // seconds from the first point
  std::optional<double> trigger_end_s;
  std::optional<double> timeout_s;       // the client's timeout, for the replay
  std::optional<double> capacity_per_s;  // the server's capacity, for the replay
  double window_s = 10;                  // rows of the table over time
};

// One row of the table over time.
struct ObservedWindow {
  double t_s = 0;  // seconds from the first point
  double requests_per_s = 0;
  double attempts_per_s = 0;     // throughput: first attempts and retries
  double goodput_per_s = 0;      // successes
  double amplification = 0;      // attempts per request
  double retry_share = 0;        // retries among attempts
  double failed_share = 0;       // failed among requests
  double slow_share = kUnknown;  // attempts at or above the timeout
  double overflow_per_s = kUnknown;
};

// The most retries a fitted scenario gets: the key table's range is wider,
// but per-second counters do not show more than a few attempts per request.
constexpr double kMaxFittedRetries = 10;
// Attempts per request a step would have sent with no budget (retries sent
// plus retries refused), at its peak over the steps with at least a fifth of
// the most requests: the attempts each request may cost.
double unconstrained_peak(const Series& x);
// Those attempts less one, whole, from 0 to kMaxFittedRetries: the clients'
// retries as the series show them.
int fitted_retries(double peak);

struct ObservedReport {
  RunResult run;  // the series as a run, for the verdict
  Metrics metrics;
  Verdict verdict;
  double trigger_start_s = 0, trigger_end_s = 0;
  std::string trigger_source;  // "--trigger-start/--trigger-end" or how it was inferred
  double demand_per_s = 0;     // user requests a second before the trigger
  double capacity_per_s = 0;
  std::string capacity_source;
  double amplification = 0;        // attempts per request over the whole range
  double amplification_after = 0;  // ... after the trigger ended
  double retry_share = 0;
  double failed_share = 0;
  std::optional<double> recovery_s;  // last failure after the trigger's end
  double overflow = kUnknown;        // retries refused, in all
  double slow_share = kUnknown;      // attempts at or above the timeout, in all
  double goodput_after = 0;          // successes a second in the last window
  double throughput_after = 0;       // attempts a second in the last window
  bool metastable = false;           // load stayed up and goodput down after the trigger
  bool ongoing = false;              // the trigger ran to the end of the range
  std::vector<ObservedWindow> windows;
  std::vector<Diagnosis> findings;  // ranked; first is the diagnosis
  std::vector<Unknown> unknowns;
};

// Throws std::invalid_argument when the series are empty or of unequal length.
ObservedReport analyze_observed(const ObservedSeries& s, const ObservedOptions& o);

// A scenario (per-step engines) that replays the observed incident: demand,
// capacity during and after the trigger, timeout, retries, a budget when
// retries overflowed. Keys as scenario paths, with where each value came from.
std::vector<ReplayKey> observed_replay_keys(const ObservedReport& r, const ObservedOptions& o);

}  // namespace retrystorm::incident
