// What `analyze --prometheus` asks Prometheus and how it reads the answers,
// without the network: the mapping of each system's metrics to retrystorm's
// quantities (built in, or a --metrics file) and the parsing of
// /api/v1/query_range answers into per-step amounts. docs/prometheus.md.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace retrystorm {

// PromQL per quantity; `SELECTOR` in an expression stands for the matchers of
// --selector (`,SELECTOR` drops its comma when there are none). Counters are
// cumulative: each series is turned into increases (resets counted from 0) and
// the series are summed. An empty expression (the default, so a mapping names
// only what it has): the system does not export it.
struct MetricsMapping {
  std::string name{};
  std::string requests{};         // counter: user requests (first attempts)
  std::string attempts{};         // counter: every attempt (first and retries)
  std::string retries{};          // counter: retries sent
  std::string successes{};        // counter: user requests that succeeded
  std::string failed{};           // counter: user requests that failed
  std::string timeouts{};         // counter: attempts timed out
  std::string overflow{};         // counter: retries refused by a budget or breaker
  std::string in_flight{};        // gauge: attempts in flight
  std::string latency_buckets{};  // counters with an `le` label: attempt latency
  double latency_unit_s = 1;      // seconds per unit of `le` (0.001 for milliseconds)
};

// "envoy", "istio", "linkerd", "grpc". InputError for another name.
const MetricsMapping& builtin_mapping(const std::string& name);

// A mapping file, YAML or JSON: the keys of MetricsMapping (`name` optional).
// InputError naming `source` for an unknown key, a wrong type, or a mapping
// without successes and failed and two of requests, attempts and retries.
MetricsMapping mapping_from_text(const std::string& text, const std::string& source);

// The matchers inside `selector` ("{cluster=\"orders\"}"); InputError unless
// it is one brace pair with no braces inside.
std::string selector_matchers(const std::string& selector);
std::string expand_selector(const std::string& expr, const std::string& matchers);

// One series of a range query's answer.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;  // unix seconds, value
};

// The series of a /api/v1/query_range answer (a matrix). InputError naming
// `what` for a body that is not JSON, status "error" (with Prometheus' error
// text), another result type, or values that are not numbers.
std::vector<PromSeries> parse_query_answer(const std::string& body, const std::string& what);
// The same, also taking a /api/v1/query answer (a vector: one point a series).
std::vector<PromSeries> parse_instant_or_range_answer(const std::string& body,
                                                      const std::string& what);
// What one answer of the API may take (docs/prometheus.md).
inline constexpr size_t kMaxAnswerBytes = 64u << 20;

// The grid of a query: `points` instants from `from` every `step` seconds;
// amounts are per step between consecutive instants (points - 1 of them).
struct QueryGrid {
  double from = 0;
  double step = 1;
  size_t points = 0;
};

// Increases per step, summed over the series (a counter that goes down was
// reset: its new value is the increase).
std::vector<double> counter_increases(const std::vector<PromSeries>& series, const QueryGrid& g);
// The gauge at the end of each step, summed over the series.
std::vector<double> gauge_values(const std::vector<PromSeries>& series, const QueryGrid& g);

// Attempts measured and attempts at or above `timeout_s` per step, from
// histogram buckets (series with an `le` label, in `unit_s` seconds).
struct SlowAttempts {
  std::vector<double> measured, slow;
};
SlowAttempts slow_attempts(const std::vector<PromSeries>& buckets, const QueryGrid& g,
                           double timeout_s, double unit_s);

}  // namespace retrystorm
