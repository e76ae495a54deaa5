#include "systems/prometheus/series.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "formats/input_text.hpp"
#include "logs/line_reader.hpp"
#include "logs/times.hpp"
#include "model/keys.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

// The built-in mappings. Names and labels as src/formats/metrics_out.cpp writes
// them, with the exporters' sources cited there.
std::vector<MetricsMapping> builtins() {
  return {
      {
          .name = "envoy",
          .attempts = "envoy_cluster_upstream_rq_total{SELECTOR}",
          .retries = "envoy_cluster_upstream_rq_retry{SELECTOR}",
          .successes = "envoy_cluster_upstream_rq_xx{envoy_response_code_class=\"2\",SELECTOR}",
          // The connection manager's counters carry no cluster label: the user's
          // 5xx, under the selector's other matchers (the scrape's namespace, pod).
          .failed = "envoy_http_downstream_rq_xx{envoy_response_code_class=\"5\","
                    "SELECTOR_WITHOUT_CLUSTER}",
          .timeouts = "envoy_cluster_upstream_rq_timeout{SELECTOR}",
          .overflow = "envoy_cluster_upstream_rq_retry_overflow{SELECTOR}",
          .in_flight = "envoy_cluster_upstream_rq_active{SELECTOR}",
          .latency_buckets = "envoy_cluster_upstream_rq_time_bucket{SELECTOR}",
          .latency_unit_s = 0.001,
      },
      {
          .name = "istio",
          .requests = "istio_requests_total{reporter=\"source\",SELECTOR}",
          .attempts = "istio_requests_total{reporter=\"destination\",SELECTOR}",
          .successes = "istio_requests_total{reporter=\"source\",response_code=~\"2..\",SELECTOR}",
          .failed = "istio_requests_total{reporter=\"source\",response_code!~\"2..\",SELECTOR}",
          .timeouts =
              "istio_requests_total{reporter=\"source\",response_flags=~\".*UT.*\",SELECTOR}",
          // Requests that ended on the retry limit: Istio counts no refused retry itself.
          .overflow =
              "istio_requests_total{reporter=\"source\",response_flags=~\".*URX.*\",SELECTOR}",
      },
      {
          .name = "linkerd",
          .attempts = "request_total{direction=\"outbound\",SELECTOR}",
          .retries = "outbound_http_route_retry_requests_total{SELECTOR}",
          .successes = "outbound_http_route_request_statuses_total{http_status=~\"2..\",SELECTOR}",
          .failed = "outbound_http_route_request_statuses_total{http_status!~\"2..\",SELECTOR}",
          .timeouts = "response_total{direction=\"outbound\",classification=\"failure\","
                      "status_code=\"504\",SELECTOR}",
          .overflow = "outbound_http_route_retry_overflow_total{SELECTOR}",
          .latency_buckets = "response_latency_ms_bucket{direction=\"outbound\",SELECTOR}",
          .latency_unit_s = 0.001,
      },
      {
          .name = "grpc",
          .requests = "grpc_client_call_duration_seconds_count{SELECTOR}",
          .attempts = "grpc_client_attempt_started_total{SELECTOR}",
          .successes = "grpc_client_call_duration_seconds_count{grpc_status=\"OK\",SELECTOR}",
          .failed = "grpc_client_call_duration_seconds_count{grpc_status!=\"OK\",SELECTOR}",
          .timeouts = "grpc_client_attempt_duration_seconds_count{"
                      "grpc_status=\"DEADLINE_EXCEEDED\",SELECTOR}",
          .latency_buckets = "grpc_client_attempt_duration_seconds_bucket{SELECTOR}",
      },
  };
}

void check_complete(const MetricsMapping& m, const std::string& source) {
  int counts = !m.requests.empty() + !m.attempts.empty() + !m.retries.empty();
  if (counts < 2 || m.successes.empty() || m.failed.empty())
    throw InputError(source +
                     ": a mapping needs successes, failed and two of requests, attempts, retries");
}

// The text keys of a mapping file, in MetricsMapping's order; latency_unit_s
// is the one number.
constexpr std::pair<std::string_view, std::string MetricsMapping::*> kMappingTexts[] = {
    {"name", &MetricsMapping::name},
    {"requests", &MetricsMapping::requests},
    {"attempts", &MetricsMapping::attempts},
    {"retries", &MetricsMapping::retries},
    {"successes", &MetricsMapping::successes},
    {"failed", &MetricsMapping::failed},
    {"timeouts", &MetricsMapping::timeouts},
    {"overflow", &MetricsMapping::overflow},
    {"in_flight", &MetricsMapping::in_flight},
    {"latency_buckets", &MetricsMapping::latency_buckets},
};

std::string mapping_keys() {
  std::string keys;
  for (const auto& [key, member] : kMappingTexts) keys += std::string(key) + ", ";
  return keys + "latency_unit_s";
}

constexpr double kMaxSampleValue = 1e15;

size_t grid_index(double t, const QueryGrid& g) {
  double k = std::round((t - g.from) / g.step);
  return k < 0 || k >= static_cast<double>(g.points) ? g.points : static_cast<size_t>(k);
}

}  // namespace

const MetricsMapping& builtin_mapping(const std::string& name) {
  static const std::vector<MetricsMapping> all = builtins();
  for (const auto& m : all)
    if (m.name == name) return m;
  throw InputError("--metrics-as: '" + printable(name) +
                   "' is not one of envoy, istio, linkerd, grpc (or give --metrics FILE)");
}

MetricsMapping mapping_from_text(const std::string& text, const std::string& source) {
  bool is_json = text.find_first_not_of(" \t\r\n") != std::string::npos &&
                 text[text.find_first_not_of(" \t\r\n")] == '{';
  json j = is_json ? parse_json_text(text, source) : parse_yaml_text(text, source);
  if (!j.is_object()) throw InputError(source + ": a mapping is an object of quantity: PromQL");
  MetricsMapping m;
  m.name = "file";
  for (const auto& [key, value] : j.items()) {
    if (key == "latency_unit_s") {
      if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > text::kHour)
        throw InputError(source + ": latency_unit_s is seconds above 0 and at most " +
                         number_text(text::kHour));
      m.latency_unit_s = value.get<double>();
      continue;
    }
    auto f = std::ranges::find(kMappingTexts, key, [](const auto& text) { return text.first; });
    if (f == std::end(kMappingTexts))
      throw InputError(source + ": unknown key '" + printable(key) +
                       "'; allowed: " + mapping_keys());
    if (!value.is_string() || value.get<std::string>().size() > 4096)
      throw InputError(source + ": " + key + " is a PromQL expression (text, at most 4096 bytes)");
    m.*(f->second) = value.get<std::string>();
  }
  check_complete(m, source);
  return m;
}

std::string selector_matchers(const std::string& selector) {
  if (selector.empty()) return "";
  if (selector.size() < 2 || selector.front() != '{' || selector.back() != '}' ||
      selector.find_first_of("{}", 1) != selector.size() - 1 || selector.size() > 4096)
    throw InputError("--selector: '" + printable(selector) +
                     "' is not one label selector, e.g. '{cluster=\"orders\"}'");
  return selector.substr(1, selector.size() - 2);
}

namespace {

// The matchers but those on Envoy's cluster label (a quoted value may hold a comma).
std::string without_cluster(const std::string& matchers) {
  std::string out, item;
  bool quoted = false;
  auto keep = [&] {
    const size_t name_end = item.find_first_of("=!");
    std::string name = item.substr(0, name_end);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!item.empty() && name != "envoy_cluster_name") out += (out.empty() ? "" : ",") + item;
    item.clear();
  };
  for (size_t i = 0; i < matchers.size(); ++i) {
    const char c = matchers[i];
    if (c == '\\' && quoted && i + 1 < matchers.size()) {
      item += matchers.substr(i++, 2);
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      keep();
      continue;
    }
    item += c;
  }
  keep();
  return out;
}

}  // namespace

std::string expand_selector(const std::string& expr, const std::string& matchers) {
  static constexpr std::string_view kAll = "SELECTOR", kNoCluster = "SELECTOR_WITHOUT_CLUSTER";
  std::string out;
  for (size_t at = 0;;) {
    size_t k = expr.find(kAll, at);
    if (k == std::string::npos) return out + expr.substr(at);
    const bool no_cluster = expr.compare(k, kNoCluster.size(), kNoCluster) == 0;
    const std::string these = no_cluster ? without_cluster(matchers) : matchers;
    bool comma = k > at && expr[k - 1] == ',';
    out += expr.substr(at, k - at - (comma ? 1 : 0));
    if (!these.empty()) out += (comma ? "," : "") + these;
    at = k + (no_cluster ? kNoCluster.size() : kAll.size());
  }
}

namespace {

// One sample [unix seconds, "value"], checked.
std::pair<double, double> sample_of(const json& p, const std::string& what) {
  auto v = p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_string()
               ? logs::parse_number(p[1].get<std::string>())
               : std::nullopt;
  if (!v || !std::isfinite(*v) || !std::isfinite(p[0].get<double>()))
    throw InputError(what + ": a value that is not a finite number");
  // Sums of up to kMaxPoints values stay finite below this.
  if (std::fabs(*v) > kMaxSampleValue)
    throw InputError(what + ": a value beyond 1e15 (" + number_text(*v) + ")");
  return {p[0].get<double>(), *v};
}

// A matrix (query_range) always; a vector (query) too when `instant`: each
// of its series has one point.
std::vector<PromSeries> series_of_answer(const json& j, const std::string& what, bool instant) {
  if (!j.is_object() || !j.contains("status"))
    throw InputError(what + ": the answer is not Prometheus JSON");
  if (j["status"] != "success") {
    std::string err = j.value("error", std::string("no error text"));
    throw InputError(what + ": Prometheus says: " + printable(err.substr(0, 300)));
  }
  const json data = j.value("data", json::object());
  std::string type = data.is_object() ? data.value("resultType", std::string()) : "";
  bool vector = instant && type == "vector";
  if ((type != "matrix" && !vector) || !data.contains("result") || !data["result"].is_array())
    throw InputError(what + (instant ? ": the answer is not a vector or a matrix of series"
                                     : ": the answer is not a range of series (a matrix)"));
  std::vector<PromSeries> out;
  for (const auto& r : data["result"]) {
    PromSeries s;
    const char* field = vector ? "value" : "values";
    if (!r.is_object() || !r.contains(field) || !r[field].is_array())
      throw InputError(what + ": a series without " + field);
    const json metric = r.value("metric", json::object());  // a copy: items() must outlive it
    if (metric.is_object())
      for (const auto& [k, v] : metric.items())
        if (v.is_string()) s.labels[k] = v.get<std::string>();
    if (vector)
      s.points.push_back(sample_of(r[field], what));
    else
      for (const auto& p : r[field]) s.points.push_back(sample_of(p, what));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

namespace {

std::vector<PromSeries> parse_answer(const std::string& body, const std::string& what,
                                     bool instant) {
  json j;
  try {
    j = parse_json_text(body, what, kMaxAnswerBytes);
  } catch (const InputError& e) {
    throw InputError(what + ": the answer is not Prometheus JSON (" + e.what() + ")");
  }
  try {
    return series_of_answer(j, what, instant);
  } catch (const json::exception& e) {  // a field of another type ("resultType": 1)
    throw InputError(what + ": the answer is not Prometheus JSON (" + e.what() + ")");
  }
}

}  // namespace

std::vector<PromSeries> parse_query_answer(const std::string& body, const std::string& what) {
  return parse_answer(body, what, false);
}

std::vector<PromSeries> parse_instant_or_range_answer(const std::string& body,
                                                      const std::string& what) {
  return parse_answer(body, what, true);
}

std::vector<double> counter_increases(const std::vector<PromSeries>& series, const QueryGrid& g) {
  std::vector<double> out(g.points > 0 ? g.points - 1 : 0, 0.0);
  for (const auto& s : series) {
    double last = 0;
    bool seen = false;
    for (const auto& [t, v] : s.points) {
      size_t k = grid_index(t, g);
      if (k == g.points) continue;
      // A series' first sample is its baseline, as PromQL's increase() takes
      // it: a series found late (a failed scrape at the start, a target
      // discovered late) counted its whole past in one step, while one
      // created in the range loses at most its first step.
      double inc = !seen ? 0 : v >= last ? v - last : v;
      if (k > 0) out[k - 1] += inc;
      last = v;
      seen = true;
    }
  }
  return out;
}

std::vector<double> gauge_values(const std::vector<PromSeries>& series, const QueryGrid& g) {
  std::vector<double> out(g.points > 0 ? g.points - 1 : 0, 0.0);
  for (const auto& s : series)
    for (const auto& [t, v] : s.points) {
      size_t k = grid_index(t, g);
      if (k > 0 && k < g.points) out[k - 1] += v;
    }
  return out;
}

SlowAttempts slow_attempts(const std::vector<PromSeries>& buckets, const QueryGrid& g,
                           double timeout_s, double unit_s) {
  // Each histogram (its labels but le) on its own buckets: its highest bound
  // below the timeout, attempts above which took the timeout. Two pods with
  // different bounds each keep their own (one bound for all dropped the
  // other's fast bucket, and its fast attempts read as slow).
  struct Fast {
    double bound = -1;
    const PromSeries* series = nullptr;
  };
  std::map<std::map<std::string, std::string>, Fast> fastest;
  std::vector<PromSeries> inf, fast;
  for (const auto& s : buckets) {
    auto le = s.labels.find("le");
    if (le == s.labels.end()) continue;
    auto v =
        le->second == "+Inf" ? std::optional<double>(INFINITY) : logs::parse_number(le->second);
    if (!v) continue;
    if (std::isinf(*v)) {
      inf.push_back(s);
    } else if (*v * unit_s < timeout_s * (1 - 1e-9)) {
      std::map<std::string, std::string> histogram = s.labels;
      histogram.erase("le");
      Fast& f = fastest[histogram];
      if (*v > f.bound) f = {*v, &s};
    }
  }
  for (const auto& [labels, f] : fastest) fast.push_back(*f.series);
  SlowAttempts out;
  out.measured = counter_increases(inf, g);
  auto quick = counter_increases(fast, g);
  out.slow.resize(out.measured.size());
  for (size_t i = 0; i < out.slow.size(); ++i)
    out.slow[i] = std::max(0.0, out.measured[i] - quick[i]);
  return out;
}

}  // namespace retrystorm
