// The names and labels below are the exporters' own; each block cites where
// they come from. Quantities map as docs/prometheus.md, "Mappings", lists.
#include "formats/metrics_out.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "engines/incident_window.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// One second of the run, summed over its steps.
struct Second {
  double requests = 0, retries = 0, successes = 0, failed = 0, timeouts = 0, overflow = 0,
         rejected = 0, in_flight = 0;
};

// Adds `share` of step i's counts to second s.
void add_share(Second& s, const Series& x, size_t i, double share) {
  s.requests += x.first_attempts[i] * share;
  s.retries += x.retries[i] * share;
  s.successes += x.goodput[i] * share;
  s.failed += x.failed[i] * share;
  s.timeouts += x.gave_up[i] * share;
  s.overflow += x.budget_denied[i] * share;
  s.rejected += x.rejected[i] * share;
}

// The run's seconds. A step longer than a second spreads its counts over the
// seconds it covers, in proportion to the time it spends in each; the gauge
// at the end of a second is the backlog of the last step that had ended by
// then (a second inside a long step keeps the step before's).
std::vector<Second> per_second(const RunResult& run) {
  const Series& x = run.series;
  const int steps = static_cast<int>(x.size());
  std::vector<Second> out;
  std::vector<char> gauged;
  for (int i = 0; i < steps; ++i) {
    const auto [start, end] = step_span(run.scenario, i, steps);
    const auto first = static_cast<size_t>(std::floor(start + 1e-9));
    const size_t last = std::max(first, static_cast<size_t>(std::ceil(end - 1e-9)) - 1);
    if (out.size() <= last) {
      out.resize(last + 1);
      gauged.resize(last + 1, 0);
    }
    for (size_t k = first; k <= last; ++k) {
      const double in_second = std::min(end, double(k + 1)) - std::max(start, double(k));
      add_share(out[k], x, size_t(i), first == last ? 1.0 : in_second / (end - start));
    }
    out[last].in_flight = x.backlog[size_t(i)];
    gauged[last] = 1;
  }
  for (size_t k = 1; k < out.size(); ++k)
    if (!gauged[k]) out[k].in_flight = out[k - 1].in_flight;
  return out;
}

// Writes families of counters (cumulative, one sample a second, a zero sample
// at the start) and gauges.
class Writer {
 public:
  Writer(const std::vector<Second>& secs, double start) : secs_(secs), start_(start) {}

  using Amount = std::function<double(const Second&)>;

  // `family` is the OpenMetrics family; samples are named `family + suffix`.
  void family(const std::string& family, const std::string& type, const std::string& help) {
    o_ << "# TYPE " << family << " " << type << "\n# HELP " << family << " " << help << "\n";
  }
  void counter(const std::string& sample, const std::string& labels, const Amount& f) {
    double total = 0;
    line(sample, labels, 0, start_);
    for (size_t k = 0; k < secs_.size(); ++k) {
      total += std::max(0.0, f(secs_[k]));
      line(sample, labels, total, start_ + k + 1);
    }
  }
  void gauge(const std::string& sample, const std::string& labels, const Amount& f) {
    line(sample, labels, 0, start_);
    for (size_t k = 0; k < secs_.size(); ++k) line(sample, labels, f(secs_[k]), start_ + k + 1);
  }
  // A histogram of attempts: `fast` ones (on-time and refused answers) at
  // latency `ok`, `slow` ones (timed out) at `timeout`, in the unit of `bounds`.
  void histogram(const std::string& family, const std::string& labels,
                 const std::vector<double>& bounds, double ok, double timeout,
                 const Amount& fast = fast_answers, const Amount& slow = timed_out) {
    auto below = [&](double latency, double bound) { return latency <= bound * (1 + 1e-9); };
    for (double b : bounds)
      counter(family + "_bucket", labels + ",le=\"" + number_text(b) + "\"", [&](const Second& s) {
        return (below(ok, b) ? fast(s) : 0) + (below(timeout, b) ? slow(s) : 0);
      });
    Amount all = [&](const Second& s) { return fast(s) + slow(s); };
    counter(family + "_bucket", labels + ",le=\"+Inf\"", all);
    counter(family + "_count", labels, all);
    counter(family + "_sum", labels,
            [&](const Second& s) { return fast(s) * ok + slow(s) * timeout; });
  }
  static double fast_answers(const Second& s) { return s.successes + s.rejected; }
  static double timed_out(const Second& s) { return s.timeouts; }
  static double successes(const Second& s) { return s.successes; }
  static double none(const Second&) { return 0; }
  std::string text() { return o_.str() + "# EOF\n"; }

 private:
  void line(const std::string& sample, const std::string& labels, double v, double t) {
    o_ << sample << "{" << labels << "} " << number_text(v) << " " << number_text(t) << "\n";
  }
  const std::vector<Second>& secs_;
  double start_;
  std::ostringstream o_;
};

// Successful attempts that were retries: the run counts successes, not which
// attempt succeeded, so each second splits them by the retries' share of attempts.
double retry_successes(const Second& s) {
  double attempts = s.requests + s.retries;
  return attempts > 0 ? s.successes * s.retries / attempts : 0;
}

// Envoy: cluster stats ALL_CLUSTER_TRAFFIC_STATS in envoy/upstream/upstream.h
// (upstream_rq_total, upstream_rq_retry, upstream_rq_retry_overflow,
// upstream_rq_retry_success, upstream_rq_timeout, upstream_rq_active,
// upstream_rq_time); retry_overflow is counted in RetryStateImpl::shouldRetry
// (source/common/router/retry_state_impl.cc) when the retry circuit breaker or
// budget refuses. Prometheus names and the envoy_cluster_name /
// envoy_response_code_class labels come from the tag extractors in
// source/common/config/well_known_names.cc; counters keep their stat name
// (no _total added), so they are written as type `unknown`.
void envoy(Writer& w, const std::string& svc, double ok_s, double timeout_s) {
  std::string c = "envoy_cluster_name=\"" + svc + "\"";
  auto plain = [&](const std::string& name, const std::string& help, const Writer::Amount& f) {
    w.family(name, "unknown", help);
    w.counter(name, c, f);
  };
  plain("envoy_cluster_upstream_rq_total", "Total requests",
        [](auto& s) { return s.requests + s.retries; });
  plain("envoy_cluster_upstream_rq_retry", "Total request retries",
        [](auto& s) { return s.retries; });
  plain("envoy_cluster_upstream_rq_retry_overflow",
        "Total requests not retried due to circuit breaking or exceeding the retry budget",
        [](auto& s) { return s.overflow; });
  plain("envoy_cluster_upstream_rq_retry_success", "Total request retry successes",
        retry_successes);
  plain("envoy_cluster_upstream_rq_timeout", "Total requests that timed out waiting for a response",
        [](auto& s) { return s.timeouts; });
  w.family("envoy_cluster_upstream_rq_xx", "unknown", "Upstream responses by class");
  w.counter("envoy_cluster_upstream_rq_xx", "envoy_response_code_class=\"2\"," + c,
            [](auto& s) { return s.successes; });
  w.counter("envoy_cluster_upstream_rq_xx", "envoy_response_code_class=\"5\"," + c,
            [](auto& s) { return s.rejected; });
  // Downstream (the listener's connection manager): what the user got.
  w.family("envoy_http_downstream_rq_xx", "unknown", "Downstream responses by class");
  std::string hcm = "envoy_http_conn_manager_prefix=\"ingress_http\",envoy_response_code_class=";
  w.counter("envoy_http_downstream_rq_xx", hcm + "\"2\"", [](auto& s) { return s.successes; });
  w.counter("envoy_http_downstream_rq_xx", hcm + "\"5\"", [](auto& s) { return s.failed; });
  w.family("envoy_cluster_upstream_rq_active", "gauge", "Total active requests");
  w.gauge("envoy_cluster_upstream_rq_active", c, [](auto& s) { return s.in_flight; });
  // Envoy's default histogram buckets (milliseconds), HistogramSettingsImpl::defaultBuckets.
  w.family("envoy_cluster_upstream_rq_time", "histogram", "Request time milliseconds");
  w.histogram("envoy_cluster_upstream_rq_time", c,
              {0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000,
               600000, 1800000, 3600000},
              ok_s * 1000, timeout_s * 1000);
}

// Istio: the standard metric istio_requests_total and its labels (reporter,
// destination_service_name, response_code, response_flags) from the stats
// filter in istio/proxy (source/extensions/filters/http/istio_stats) and
// Istio's "Istio Standard Metrics" page. The client's sidecar
// (reporter="source") counts each request once, after its retries; the
// server's (reporter="destination") counts every attempt. Response flags are
// Envoy's (UT upstream timeout, URX retry limit exceeded, UO overflow).
void istio(Writer& w, const std::string& svc) {
  std::string base = "destination_service_name=\"" + svc + "\",";
  w.family("istio_requests", "counter", "Requests, by reporter, response code and flags");
  auto series = [&](const std::string& reporter, const std::string& code, const std::string& flags,
                    const Writer::Amount& f) {
    w.counter("istio_requests_total",
              base + "reporter=\"" + reporter + "\",response_code=\"" + code +
                  "\",response_flags=\"" + flags + "\"",
              f);
  };
  series("source", "200", "-", [](auto& s) { return s.successes; });
  // A failed request ends on the retry limit when retries were refused in its
  // second, else on a timeout.
  series("source", "504", "UT", [](auto& s) { return s.failed - std::min(s.failed, s.overflow); });
  series("source", "503", "URX", [](auto& s) { return std::min(s.failed, s.overflow); });
  series("destination", "200", "-", [](auto& s) { return s.requests + s.retries - s.rejected; });
  series("destination", "503", "UO", [](auto& s) { return s.rejected; });
}

// Linkerd: the proxy's request_total / response_total (labels direction,
// authority, classification, status_code: linkerd2 docs "Proxy Metrics",
// linkerd2-proxy linkerd/app/core/src/classify.rs for the classification)
// count every attempt the outbound proxy sends; the route's retry counters
// outbound_http_route_retry_requests_total and
// outbound_http_route_retry_overflow_total (linkerd2-proxy
// linkerd/app/outbound/src/http/logical/policy/route/retry.rs, labels
// parent_name, route_name) and the route's request statuses
// outbound_http_route_request_statuses_total (http_status) count logical requests.
void linkerd(Writer& w, const std::string& svc, double ok_s, double timeout_s) {
  std::string out =
      "direction=\"outbound\",authority=\"" + svc + ".default.svc.cluster.local:8080\"";
  w.family("request", "counter", "Total count of HTTP requests");
  w.counter("request_total", out, [](auto& s) { return s.requests + s.retries; });
  w.family("response", "counter", "Total count of HTTP responses");
  w.counter("response_total", out + ",classification=\"success\",status_code=\"200\"",
            [](auto& s) { return s.successes; });
  w.counter("response_total", out + ",classification=\"failure\",status_code=\"504\"",
            [](auto& s) { return s.timeouts; });
  w.counter("response_total", out + ",classification=\"failure\",status_code=\"503\"",
            [](auto& s) { return s.rejected; });
  std::string route = "parent_name=\"" + svc + "\",route_name=\"default\"";
  w.family("outbound_http_route_retry_requests", "counter", "Retry requests emitted");
  w.counter("outbound_http_route_retry_requests_total", route, [](auto& s) { return s.retries; });
  w.family("outbound_http_route_retry_overflow", "counter",
           "Retryable requests not sent due to circuit breakers");
  w.counter("outbound_http_route_retry_overflow_total", route, [](auto& s) { return s.overflow; });
  w.family("outbound_http_route_request_statuses", "counter", "Completed request-response streams");
  w.counter("outbound_http_route_request_statuses_total", route + ",http_status=\"200\"",
            [](auto& s) { return s.successes; });
  w.counter("outbound_http_route_request_statuses_total", route + ",http_status=\"504\"",
            [](auto& s) { return s.failed; });
  w.family("response_latency_ms", "histogram",
           "Elapsed times between a request's headers "
           "being received and its response stream completing");
  w.histogram("response_latency_ms", out,
              {1,   2,   3,    4,    5,    10,   20,   30,    40,    50,    100,   200,  300,
               400, 500, 1000, 2000, 3000, 4000, 5000, 10000, 20000, 30000, 40000, 50000},
              ok_s * 1000, timeout_s * 1000);
}

// gRPC: the OpenTelemetry instruments of gRFC A66 (grpc/proposal
// A66-otel-stats.md): grpc.client.attempt.started, grpc.client.attempt.duration,
// grpc.client.call.duration, attributes grpc.method, grpc.target, grpc.status.
// The Prometheus exporter turns dots into underscores, adds the unit
// (_seconds) and _total to counters. Calls are counted when they end.
void grpc(Writer& w, const std::string& svc, double ok_s, double timeout_s) {
  std::string m = "grpc_method=\"" + svc + ".Orders/Get\",grpc_target=\"dns:///" + svc + ":443\"";
  w.family("grpc_client_attempt_started", "counter", "Number of client call attempts started");
  w.counter("grpc_client_attempt_started_total", m, [](auto& s) { return s.requests + s.retries; });
  // A66's latency buckets (seconds), from 10 ms up.
  std::vector<double> bounds = {0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065,
                                0.08, 0.1,   0.13,  0.16, 0.2,   0.25, 0.3,  0.4,  0.5,
                                0.65, 0.8,   1,     2,    5,     10,   20,   50,   100};
  w.family("grpc_client_attempt_duration_seconds", "histogram",
           "End-to-end time taken to complete a client call attempt");
  w.histogram("grpc_client_attempt_duration_seconds", m + ",grpc_status=\"DEADLINE_EXCEEDED\"",
              bounds, ok_s, timeout_s, Writer::none, Writer::timed_out);
  w.histogram("grpc_client_attempt_duration_seconds", m + ",grpc_status=\"OK\"", bounds, ok_s,
              timeout_s, Writer::successes, Writer::none);
  w.family("grpc_client_call_duration_seconds", "histogram",
           "Time taken by gRPC to complete an RPC");
  // Calls: the histogram's count is what the mapping reads; every call in one bucket pair.
  auto calls = [&](const std::string& status, const Writer::Amount& f) {
    std::string l = m + ",grpc_status=\"" + status + "\"";
    w.counter("grpc_client_call_duration_seconds_bucket", l + ",le=\"+Inf\"", f);
    w.counter("grpc_client_call_duration_seconds_count", l, f);
  };
  calls("OK", [](auto& s) { return s.successes; });
  calls("DEADLINE_EXCEEDED", [](auto& s) { return s.failed; });
}

}  // namespace

const std::vector<std::string>& metrics_schemes() {
  static const std::vector<std::string> names = {"envoy", "istio", "linkerd", "grpc"};
  return names;
}

std::string metrics_openmetrics(const RunResult& run, const std::string& scheme,
                                double start_unix_s, const std::string& service) {
  auto secs = per_second(run);
  Writer w(secs, start_unix_s);
  double timeout = run.scenario.client.timeout_s;
  // On-time answers: the median success latency when the engine measured it.
  double ok = std::min(run.success_latency.quantile(0.5).value_or(timeout / 10), timeout * 0.99);
  if (scheme == "envoy")
    envoy(w, service, ok, timeout);
  else if (scheme == "istio")
    istio(w, service);
  else if (scheme == "linkerd")
    linkerd(w, service, ok, timeout);
  else if (scheme == "grpc")
    grpc(w, service, ok, timeout);
  else
    throw InputError("--metrics-as: '" + scheme + "' is not one of envoy, istio, linkerd, grpc");
  return w.text();
}

}  // namespace retrystorm
