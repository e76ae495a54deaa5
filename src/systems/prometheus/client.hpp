// `analyze --prometheus URL`: the series of one mapping read through
// Prometheus' HTTP API (/api/v1/query_range), bounded in time and size, as
// the per-step amounts the diagnosis reads (analysis/incident/observed.hpp).
#pragma once

#include <optional>
#include <string>

#include "analysis/incident/observed.hpp"
#include "systems/prometheus/series.hpp"

namespace retrystorm {

struct PrometheusQuery {
  std::string url;  // http://host:port[/prefix]
  double from_unix_s = 0;
  double to_unix_s = 0;
  double step_s = 1;
  std::string selector;               // "{cluster=\"orders\"}" or ""
  std::optional<double> timeout_s;    // the client's timeout, for the latency histogram
  double http_timeout_s = 10;         // per request, the whole of it: connect, read and write
  std::string flag = "--prometheus";  // what the messages name
};

// Prometheus refuses more points than this per series; so do we, before asking.
inline constexpr double kMaxPointsPerSeries = 11000;
// Points (series x instants) one quantity may bring (bytes of one answer:
// kMaxAnswerBytes, systems/prometheus/series.hpp).
inline constexpr double kMaxPoints = 2'000'000;

// InputError (one line) for an unreachable server, an HTTP error, a query
// Prometheus refuses, a quantity with no series (naming the expression) or
// too many points.
incident::ObservedSeries fetch_observed(const PrometheusQuery& q, const MetricsMapping& m);

// import/lint --mesh --calls-from-prometheus URL: the call rates by caller and
// callee at `at_unix_s` (none: Prometheus' now) over `window_s`, asked as
// Istio's query and, when that has no series, as Linkerd's
// (call_graph.hpp). The answer's body, named by the query that gave it, for
// read_observed_calls; InputError naming both queries when neither has series.
struct LiveCallRates {
  std::string url;
  std::optional<double> at_unix_s;
  double window_s = 600;
  double http_timeout_s = 10;
};
struct CallRatesAnswer {
  std::string body;
  std::string source;  // "URL: EXPR at T"
};
CallRatesAnswer fetch_call_rates(const LiveCallRates& q);

// "2024-01-01T00:00:00Z" (logs::parse_date_time) or Unix seconds.
std::optional<double> parse_unix_time(const std::string& text);

}  // namespace retrystorm
