#include "io/envoy_export.hpp"

#include <cmath>
#include <sstream>

namespace retrystorm {

namespace {
// Envoy durations are protobuf Duration strings: "0.100s".
std::string duration(double s) {
  std::ostringstream out;
  out.precision(9);
  out << std::fixed << s;
  std::string t = out.str();
  while (t.back() == '0') t.pop_back();
  if (t.back() == '.') t += "0";
  return t + "s";
}
}  // namespace

std::string envoy_yaml(const Scenario& s) {
  const auto& c = s.client;
  std::ostringstream y;
  y << "# Envoy retry settings for scenario '" << s.name << "' (written by retrystorm).\n";
  y << "# Route: goes under route_config.virtual_hosts[].routes[].route\n";
  double overall = c.timeout_s * (c.retries + 1) + c.backoff.cap_s * c.retries;
  y << "timeout: " << duration(overall)
    << "  # whole request, all attempts included; Envoy's default is 15s\n";
  y << "retry_policy:\n";
  y << "  retry_on: \"5xx,reset,connect-failure,refused-stream\"\n";
  y << "  num_retries: " << c.retries << "  # retries, so " << c.retries + 1
    << " attempts per request\n";
  y << "  per_try_timeout: " << duration(c.timeout_s)
    << "  # without it a timed-out attempt is never retried\n";
  if (c.retries > 0) {
    double base = c.backoff.base_s > 0 ? c.backoff.base_s : 0.001;
    y << "  retry_back_off:\n";
    y << "    base_interval: " << duration(base) << "\n";
    if (c.backoff.cap_s > 0)
      y << "    max_interval: " << duration(c.backoff.cap_s) << "\n";
    else
      y << "    # max_interval unset: Envoy uses 10 x base_interval\n";
    if (c.backoff.base_s <= 0)
      y << "    # Envoy needs base_interval > 0; 1ms is the closest to immediate retries.\n";
  }
  if (c.backoff.jitter != Jitter::full)
    y << "  # Envoy always uses full jitter: each delay is uniform in [0, window).\n";
  if (c.backoff.multiplier != 2)
    y << "  # Envoy doubles the window each retry; a multiplier of " << c.backoff.multiplier
      << " cannot be expressed.\n";
  if (c.layers > 1)
    y << "  # This scenario retries at " << c.layers << " layers: each layer's Envoy gets this "
      << "policy and attempts multiply to " << s.attempts() << ".\n";
  y << "\n# Cluster: goes under clusters[].circuit_breakers\n";
  y << "circuit_breakers:\n  thresholds:\n  - priority: DEFAULT\n";
  if (c.budget.kind == BudgetKind::none) {
    y << "    # No retry budget in this scenario. Envoy then limits only concurrent retries\n"
      << "    # (max_retries, default 3). A budget such as the one below caps retries\n"
      << "    # as a share of traffic:\n"
      << "    # retry_budget:\n    #   budget_percent: {value: 10.0}\n"
      << "    #   min_retry_concurrency: 3\n";
  } else {
    y << "    retry_budget:\n";
    y << "      budget_percent: {value: " << c.budget.ratio * 100 << "}\n";
    y << "      min_retry_concurrency: 3\n";
    y << "    # Envoy counts active retries against active plus pending requests, not\n"
      << "    # retries against first attempts over a " << c.budget.window_s
      << " s window; at steady load the share is the same.\n";
  }
  if (s.server.shed_abandoned)
    y << "\n# Shedding abandoned work happens in the server, not in Envoy: propagate the\n"
      << "# deadline (x-envoy-expected-rq-timeout-ms, grpc-timeout) and drop expired work.\n";
  if (s.server.queue_limit > 0)
    y << "\n# The queue limit of " << s.server.queue_limit
      << " is closest to circuit_breakers max_pending_requests.\n";
  return y.str();
}

}  // namespace retrystorm
