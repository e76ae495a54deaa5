#include "systems/prometheus/client.hpp"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "formats/input_text.hpp"
#include "logs/line_reader.hpp"
#include "logs/times.hpp"
#include "model/keys.hpp"
#include "systems/prometheus/call_graph.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

struct Endpoint {
  std::string scheme_host_port;  // what httplib::Client takes
  std::string prefix;            // a path prefix ("/prometheus"), or ""
};

Endpoint endpoint_of(const std::string& url, const std::string& flag) {
  std::string rest;
  if (url.rfind("http://", 0) == 0)
    rest = url.substr(7);
  else
    throw InputError(flag + ": '" + printable(url) +
                     "' is not an http:// URL (e.g. http://127.0.0.1:9090)");
  size_t slash = rest.find('/');
  std::string host = rest.substr(0, slash);
  if (host.empty() || host.find_first_of("@?# ") != std::string::npos)
    throw InputError(flag + ": '" + printable(url) + "' names no host");
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {"http://" + host, prefix};
}

// Stops a client's request once `seconds` have passed, from a thread of its own.
class Deadline {
 public:
  Deadline(httplib::Client& client, double seconds)
      : watch_([this, &client, seconds] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                                 [&] { return done_; })) {
            passed_ = true;
            client.stop();
          }
        }) {}
  ~Deadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    watch_.join();
  }
  bool passed() {
    std::lock_guard lock(mutex_);
    return passed_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false, passed_ = false;
  std::thread watch_;  // last: started once the rest is ready
};

// One GET of the API; the body of a 2xx answer (or a 4xx/5xx whose JSON
// carries Prometheus' error, which parse_query_answer reports).
std::string api_get(const PrometheusQuery& q, const std::string& path,
                    const httplib::Params& params, const std::string& what) {
  Endpoint e = endpoint_of(q.url, q.flag);
  httplib::Client client(e.scheme_host_port);
  auto secs = std::chrono::duration<double>(q.http_timeout_s);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(secs);
  client.set_connection_timeout(micros);
  client.set_read_timeout(micros);
  client.set_write_timeout(micros);
  std::string body;
  bool too_big = false;
  // The timeouts above are per read: a server trickling a byte now and then
  // meets none of them. The whole request ends at the deadline.
  Deadline deadline(client, q.http_timeout_s);
  auto res = client.Get((e.prefix + path).c_str(), params, httplib::Headers{},
                        [&](const char* data, size_t n) {
                          if (body.size() + n > kMaxAnswerBytes) return !(too_big = true);
                          body.append(data, n);
                          return true;
                        });
  if (deadline.passed())
    throw InputError(q.flag + ": " + printable(q.url) + " did not answer within " +
                     number_text(q.http_timeout_s) + " s");
  if (too_big)
    throw InputError(what + ": the answer is over " + std::to_string(kMaxAnswerBytes >> 20) +
                     " MiB; narrow --from/--to, a larger --step or a --selector");
  if (!res)
    throw InputError(q.flag + ": cannot reach " + printable(q.url) + ": " +
                     httplib::to_string(res.error()));
  int status = res->status;
  bool json_error = body.find("\"status\":\"error\"") != std::string::npos;
  if ((status < 200 || status >= 300) && !json_error)
    throw InputError(q.flag + ": " + printable(q.url + path) + " answered HTTP " +
                     std::to_string(status) + (status == 404 ? " (not a Prometheus API?)" : ""));
  return body;
}

std::vector<PromSeries> range_query(const PrometheusQuery& q, const std::string& expr,
                                    const std::string& what, size_t points) {
  httplib::Params params = {{"query", expr},
                            {"start", number_text(q.from_unix_s)},
                            {"end", number_text(q.to_unix_s)},
                            {"step", number_text(q.step_s)}};
  auto series = parse_query_answer(api_get(q, "/api/v1/query_range", params, what), what);
  if (series.size() * static_cast<double>(points) > kMaxPoints)
    throw InputError(what + ": " + std::to_string(series.size()) + " series of " +
                     std::to_string(points) + " points each, over " + number_text(kMaxPoints) +
                     "; narrow it with --selector or a larger --step");
  return series;
}

// How many series `expr` has now: refuses a query over the point cap before
// its range is asked for.
void check_series_count(const PrometheusQuery& q, const std::string& expr, const std::string& what,
                        size_t points) {
  httplib::Params params = {{"query", "count(" + expr + ")"}, {"time", number_text(q.to_unix_s)}};
  std::string body = api_get(q, "/api/v1/query", params, what);
  nlohmann::json j;
  try {
    j = parse_json_text(body, what, kMaxAnswerBytes);  // nesting bounded, as every answer
  } catch (const InputError& e) {
    throw InputError(what + ": the answer is not Prometheus JSON (" + e.what() + ")");
  }
  if (!j.is_object() || j.value("status", "") != "success")
    parse_query_answer(body, what);  // throws with Prometheus' message
  double count = 0;
  try {
    const auto& r = j["data"]["result"];
    if (r.is_array() && !r.empty()) count = std::stod(r[0]["value"][1].get<std::string>());
  } catch (const std::exception&) {
    count = 0;  // an odd answer: the range query's own check decides
  }
  if (count * points > kMaxPoints)
    throw InputError(what + ": " + number_text(count) + " series of " + std::to_string(points) +
                     " points each, over " + number_text(kMaxPoints) +
                     "; narrow it with --selector or a larger --step");
}

// A quantity's series; none is refused as a wrong name unless `may_be_absent`
// (an outcome that has not happened has no series yet: a 5xx, a timeout).
std::vector<PromSeries> quantity(const PrometheusQuery& q, const std::string& name,
                                 const std::string& expr, size_t points,
                                 bool may_be_absent = false) {
  std::string what = "--prometheus " + name + " '" + printable(expr) + "'";
  check_series_count(q, expr, what, points);
  auto series = range_query(q, expr, what, points);
  if (series.empty() && !may_be_absent)
    throw InputError(what +
                     ": no series between --from and --to (a wrong metric name or "
                     "selector?)");
  return series;
}

}  // namespace

incident::ObservedSeries fetch_observed(const PrometheusQuery& q, const MetricsMapping& m) {
  double span = q.to_unix_s - q.from_unix_s;
  if (!(q.step_s > 0) || !(span >= q.step_s))
    throw InputError("--step: the range --from..--to must hold at least one step");
  double points = std::floor(span / q.step_s + 1e-9) + 1;
  if (points > kMaxPointsPerSeries)
    throw InputError("--step: " + number_text(points) + " points per series, over Prometheus' " +
                     number_text(kMaxPointsPerSeries) + "; use a larger --step");
  QueryGrid g{q.from_unix_s, q.step_s, static_cast<size_t>(points)};
  std::string sel = selector_matchers(q.selector);
  incident::ObservedSeries s;
  auto counter = [&](const std::string& name, const std::string& expr) {
    return counter_increases(quantity(q, name, expand_selector(expr, sel), g.points), g);
  };
  // Outcomes counted in series of their own (a label that filters on the
  // answer): none yet means none happened, or a wrong name; said in the report.
  auto outcome = [&](const std::string& name, const std::string& expr) {
    auto series = quantity(q, name, expand_selector(expr, sel), g.points, true);
    if (series.empty())
      s.no_series.push_back(name + " '" + printable(expand_selector(expr, sel)) + "'");
    return counter_increases(series, g);
  };
  s.start_unix_s = q.from_unix_s;
  s.step_s = q.step_s;
  std::vector<double> attempts;
  if (!m.attempts.empty()) attempts = counter("attempts", m.attempts);
  if (!m.requests.empty()) s.requests = counter("requests", m.requests);
  if (!m.retries.empty()) s.retries = counter("retries", m.retries);
  size_t n = g.points - 1;
  // Two of the three give the third; retries never below zero (calls that are
  // counted when they end can trail their attempts).
  if (s.requests.empty()) {
    s.requests.resize(n);
    for (size_t i = 0; i < n; ++i) s.requests[i] = std::max(0.0, attempts[i] - s.retries[i]);
  } else if (s.retries.empty()) {
    s.retries.resize(n);
    for (size_t i = 0; i < n; ++i) s.retries[i] = std::max(0.0, attempts[i] - s.requests[i]);
  }
  double total = 0;
  for (double v : s.requests) total += v;
  if (!(total > 0))
    throw InputError(
        "--prometheus: no user requests between --from and --to (the request "
        "counters did not move)");
  s.successes = counter("successes", m.successes);
  s.failed = outcome("failed", m.failed);
  if (!m.timeouts.empty()) s.timeouts = outcome("timeouts", m.timeouts);
  if (!m.overflow.empty()) s.overflow = outcome("overflow", m.overflow);
  if (!m.in_flight.empty())
    s.in_flight =
        gauge_values(quantity(q, "in_flight", expand_selector(m.in_flight, sel), g.points), g);
  if (!m.latency_buckets.empty() && q.timeout_s) {
    auto b = slow_attempts(
        quantity(q, "latency_buckets", expand_selector(m.latency_buckets, sel), g.points), g,
        *q.timeout_s, m.latency_unit_s);
    s.measured = std::move(b.measured);
    s.slow = std::move(b.slow);
  }
  return s;
}

CallRatesAnswer fetch_call_rates(const LiveCallRates& live) {
  PrometheusQuery q;
  q.url = live.url;
  q.http_timeout_s = live.http_timeout_s;
  q.flag = "--calls-from-prometheus";
  std::string at = live.at_unix_s ? number_text(*live.at_unix_s) : std::string();
  std::string asked;
  for (const CallRatesQuery& c : call_rate_queries(live.window_s)) {
    httplib::Params params = {{"query", c.expr}};
    if (live.at_unix_s) params.emplace("time", at);
    std::string what = "--calls-from-prometheus: " + c.mesh + "'s " + c.expr;
    std::string body = api_get(q, "/api/v1/query", params, what);
    if (!parse_instant_or_range_answer(body, what).empty())
      return {body, printable(live.url) + ": " + c.expr + (at.empty() ? "" : " at " + at)};
    asked += (asked.empty() ? "" : " nor ") + c.mesh + "'s " + c.expr;
  }
  throw InputError("--calls-from-prometheus: " + printable(live.url) + " has no series for " +
                   asked + (at.empty() ? " now" : " at " + at) +
                   "; give --calls-at a time the mesh was serving, or a longer --calls-window");
}

std::optional<double> parse_unix_time(const std::string& text) {
  if (auto v = logs::parse_number(text)) return *v;
  return logs::parse_date_time(text);
}

}  // namespace retrystorm
