// `run --metrics-out FILE --metrics-as envoy|istio|linkerd|grpc`: the run's
// series as OpenMetrics text, one sample a second with timestamps, under the
// names and labels one system exports (docs/prometheus.md, "Writing"). Load it
// with `promtool tsdb create-blocks-from openmetrics FILE DIR`.
#pragma once

#include <string>
#include <vector>

#include "engines/run_result.hpp"

namespace retrystorm {

// The default first timestamp: 2024-01-01T00:00:00Z. Fixed so that the output
// of a run is the same every time; inside any Prometheus retention of a few
// years, not in the future.
inline constexpr double kDefaultMetricsStart = 1704067200;

// "envoy", "istio", "linkerd", "grpc".
const std::vector<std::string>& metrics_schemes();

// Throws InputError for an unknown scheme. `start_unix_s` is the time of the
// run's t = 0; `service` is the label value naming the upstream.
std::string metrics_openmetrics(const RunResult& run, const std::string& scheme,
                                double start_unix_s, const std::string& service = "orders");

}  // namespace retrystorm
