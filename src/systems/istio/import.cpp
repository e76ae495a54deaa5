// Istio: VirtualService (http[].retries, timeout) and DestinationRule
// (trafficPolicy.retryBudget, connectionPool.http.maxRetries).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "systems/envoy/fault.hpp"
#include "systems/envoy/retry_on.hpp"
#include "systems/readers.hpp"
#include "text/list.hpp"
#include "text/number.hpp"
#include "text/units.hpp"

namespace retrystorm::configs {

namespace {

const DurationRules kIstio{false, false, true};  // "1s", "500ms", "1m", "1h"

// Istio's ValidateDuration (pkg/config/validation/agent/validation.go), run on
// every duration read here, refuses one under 1 ms and one that is not whole
// milliseconds; the second is read as written, with a warning.
double istio_duration(const YAML::Node& n, const Where& w, const Reader& r) {
  double v = duration(n, w, kIstio);
  if (v > 0 && v < 0.001) fail(w, "Istio requires at least 1ms");
  // In whole nanoseconds, as Go holds a Duration (up to 292 years): 1.001 s
  // is 1000999999.9... ns as a double, 1001000000 ns.
  if (v < 9e9 && std::llround(v * 1e9) % 1'000'000 != 0)
    r.warn(w, "'" + n.Scalar() +
                  "' is not whole milliseconds: Istio's validation refuses it (\"only durations "
                  "to ms precision are supported\"), so kubectl apply fails; read as written");
  return v;
}

// Whether `gateways` (a VirtualService's or a match's) lets the rule apply
// between sidecars: left out, or naming "mesh" (the VirtualService proto:
// "If a list of gateway names is provided, the rules will apply only to the
// gateways").
bool reaches_sidecars(const YAML::Node& gateways) {
  if (!gateways || !gateways.IsSequence() || gateways.size() == 0) return true;
  for (const auto& g : gateways)
    if (g.IsScalar() && g.Scalar() == "mesh") return true;
  return false;
}

// A route every sidecar caller may take: no match, or a match whose
// condition does not name some callers only (sourceLabels or sourceNamespace,
// which the caller's pod decides, or gateways without "mesh").
bool for_every_caller(const YAML::Node& route) {
  const YAML::Node match = route["match"];
  if (!match || !match.IsSequence() || match.size() == 0) return true;
  for (const auto& m : match)
    if (m.IsMap() && !m["sourceLabels"] && !m["sourceNamespace"] && reaches_sidecars(m["gateways"]))
      return true;
  return false;
}

// The route read: among the routes every caller may take, the first that
// sets retries, else the first (a route for some callers only, one with
// sourceLabels or sourceNamespace, is not what the others get).
size_t pick_route(YAML::Node http, const Reader& r) {
  std::optional<size_t> pick, first;
  int with_retries = 0, for_some = 0;
  for (size_t i = 0; i < http.size(); ++i) {
    std::string k = "spec.http[" + std::to_string(i) + "]";
    if (!http[i].IsMap()) fail(at(r.file, k, http[i]), "must be an object");
    r.check_fields(http[i], k,
                   {"name", "match", "route", "redirect", "directResponse", "delegate", "rewrite",
                    "timeout", "retries", "fault", "mirror", "mirrors", "mirrorPercentage",
                    "mirrorPercent", "mirror_percent", "corsPolicy", "headers"});
    if (!for_every_caller(http[i])) {
      ++for_some;
      continue;
    }
    if (!first) first = i;
    if (http[i]["retries"] && ++with_retries == 1) pick = i;
  }
  if (with_retries > 1)
    r.warn(at(r.file, "spec.http", http),
           std::to_string(with_retries) + " routes set retries; the first is read");
  if (for_some > 0)
    r.warn(at(r.file, "spec.http", http),
           std::to_string(for_some) + (for_some == 1 ? " route applies" : " routes apply") +
               " to some callers only (sourceLabels, sourceNamespace, or gateways without "
               "mesh); not read");
  if (pick || first) return pick ? *pick : *first;
  return http.size();  // none: read_virtual_service reads no retries
}

// The route timeout: the whole request, all attempts included.
void read_route_timeout(YAML::Node route, const std::string& hk, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node to = route["timeout"];
  if (to) {
    Where w = at(r.file, hk + ".timeout", to);
    l.deadline_s = istio_duration(to, w, r);
    l.from["client.deadline_s"] = w.text() + ": route timeout, all attempts included";
  } else {
    l.deadline_s = 0;
    l.from["client.deadline_s"] =
        at(r.file, hk, route).text() + ": no timeout (Istio's route timeout is off by default)";
  }
}

// The route's retries block (null when left out) and its path.
struct RetriesAt {
  YAML::Node route, re;
  std::string hk, rk;
};

// What Istio's validation refuses in a retries block (validateHTTPRetry, istio
// pkg/config/validation/validation.go): kubectl apply fails, and the
// VirtualService never reaches the sidecars. Said, and read as written.
void refused_by_validation(const YAML::Node& re, long long attempts, const std::string& rk,
                           Reader& r) {
  if (attempts == 0 && (re["perTryTimeout"] || re["retryOn"] || re["retryRemoteLocalities"]))
    r.warn(at(r.file, rk, re),
           "Istio's validation refuses perTryTimeout, retryOn or retryRemoteLocalities beside "
           "attempts 0 (\"http retry policy configured when attempts are set to 0\"): apply "
           "fails; read as no retries. Write retries: {attempts: 0} alone");
  if (!re["retryOn"]) return;
  static const std::set<std::string> kSupported = {"5xx",
                                                   "gateway-error",
                                                   "reset",
                                                   "reset-before-request",
                                                   "connect-failure",
                                                   "retriable-4xx",
                                                   "refused-stream",
                                                   "retriable-status-codes",
                                                   "retriable-headers",
                                                   "envoy-ratelimited",
                                                   "http3-post-connect-failure",
                                                   "cancelled",
                                                   "deadline-exceeded",
                                                   "internal",
                                                   "resource-exhausted",
                                                   "unavailable"};
  // The codes Go's http.StatusText names, which the validation asks for.
  static const std::set<int> kRegisteredCodes = {
      100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301,
      302, 303, 304, 305, 307, 308, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409,
      410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423, 424, 425, 426, 428,
      429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511};
  const Where w = at(r.file, rk + ".retryOn", re["retryOn"]);
  std::string list = text(re["retryOn"], w), item;
  if (list.empty()) return;
  // Split at each comma with nothing trimmed, as the validation splits it.
  for (size_t start = 0; start <= list.size(); start += item.size() + 1) {
    item = list.substr(start, list.find(',', start) - start);
    const bool code = item.size() == 3 &&
                      item.find_first_not_of("0123456789") == std::string::npos &&
                      kRegisteredCodes.count(std::stoi(item));
    if (!code && !kSupported.count(item))
      r.warn(w, "'" + item +
                    "' is not a retryOn policy Istio's validation accepts (Envoy's conditions, "
                    "a status code, separated by commas without spaces): apply fails");
  }
}

// Retries: attempts, or Istio's default policy without a block. Returns retryOn.
std::string read_retries(const RetriesAt& where, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node route = where.route, re = where.re;
  const std::string &hk = where.hk, &rk = where.rk;
  long long attempts = 2;
  Where count_at = at(r.file, hk, route);
  std::string retry_on =
      "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";
  if (re) {
    if (!re.IsMap()) fail(at(r.file, rk, re), "must be an object");
    r.check_fields(re, rk,
                   {"attempts", "perTryTimeout", "retryOn", "retryRemoteLocalities",
                    "retryIgnorePreviousHosts", "backoff"});
    // A block whose attempts is left out or 0 disables retries: only a
    // missing block gets the default policy (ConvertPolicy, istio/istio
    // pilot/pkg/networking/core/route/retry/retry.go: "Attempts <= 0 ...
    // explicitly disabling the retry policy").
    if (re["attempts"]) {
      r.layer.spots["attempts"] = {re["attempts"].Mark().line, re["attempts"].Mark().column};
      count_at = at(r.file, rk + ".attempts", re["attempts"]);
      attempts = whole(re["attempts"], count_at, 0, 2147483647);  // HTTPRetry.attempts: int32
      l.from["client.retries"] = count_at.text() + ": " + std::to_string(attempts) +
                                 (attempts == 0 ? " (Istio turns retries off)"
                                                : " (Istio counts retries; " +
                                                      std::to_string(attempts + 1) + " attempts)");
    } else {
      attempts = 0;
      l.from["client.retries"] = at(r.file, rk, re).text() +
                                 ": attempts left out: Istio turns retries off (only a route "
                                 "without a retries block gets the default 2)";
    }
    if (re["retryOn"]) retry_on = text(re["retryOn"], at(r.file, rk + ".retryOn", re["retryOn"]));
    refused_by_validation(re, attempts, rk, r);
  } else {
    l.from["client.retries"] = at(r.file, hk, route).text() +
                               ": no retries block: Istio's default policy, 2 retries on "
                               "connect-failure, refused-stream, unavailable, cancelled";
    l.notes.push_back(
        "no retries block: Istio's default retryOn is connect-failure, refused-stream, "
        "unavailable, cancelled (no status codes since Istio 1.24): a refused connection is "
        "retried, a 503, a 429 or a timed-out attempt is not");
  }
  l.as_written = attempts;
  l.retries = model_retries(attempts, count_at, r);  // attempts counts retries

  return retry_on;
}

// Which error answers retryOn retries, as the sidecar's Envoy reads it:
// istio/istio pilot/pkg/networking/core/route/retry/retry.go ConvertPolicy
// moves the HTTP status codes of retryOn into retriable_status_codes
// (parseRetryOn); without retryOn, defaultPolicy lists 503 only when
// EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY is turned off (on by default).
void read_retried_answers(const RetriesAt& where, const std::string& retry_on, Reader& r) {
  LayerPolicy& l = r.layer;
  std::string conditions;
  std::vector<long long> codes;
  for (std::string_view item : text::list_items(retry_on)) {
    bool code = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return c >= '0' && c <= '9';
    }) && item.size() == 3;
    if (code) {
      codes.push_back(std::stoll(std::string(item)));
      conditions += (conditions.empty() ? "" : ",") + std::string("retriable-status-codes");
    } else {
      conditions += (conditions.empty() ? "" : ",") + std::string(item);
    }
  }
  l.retried_answers = envoy::retried_answers(conditions, codes);
  bool given = where.re && where.re["retryOn"];
  std::string source =
      given ? at(r.file, where.rk + ".retryOn", where.re["retryOn"]).text() + ": '" + retry_on + "'"
            : "retryOn left out: Istio's default '" + retry_on +
                  "' (503 left out, EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY)";
  l.from["client.retry_on"] = source + " retries " + envoy::answers_in_words(l.retried_answers);
}

// perTryTimeout, and whether a timed-out attempt is retried.
void read_per_try_timeout(const RetriesAt& where, const std::string& retry_on, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node route = where.route, re = where.re;
  const std::string &hk = where.hk, &rk = where.rk;
  YAML::Node ptt = re ? re["perTryTimeout"] : missing();
  if (ptt && l.retries == 0) {
    // ConvertPolicy returns no retry policy for such a block, so Envoy gets
    // no per_try_timeout either: the attempt is bounded by the route timeout.
    // Still a duration Istio's validation accepts, or refused here.
    istio_duration(ptt, at(r.file, rk + ".perTryTimeout", ptt), r);
    l.notes.push_back(at(r.file, rk + ".perTryTimeout", ptt).text() +
                      ": the retries block turns retries off, and Istio drops the whole retry "
                      "policy with it, so this per-try timeout is not applied and not imported");
    ptt = missing();
  }
  if (ptt) {
    Where w = at(r.file, rk + ".perTryTimeout", ptt);
    double t = istio_duration(ptt, w, r);
    if (t <= 0) fail(w, "must be at least 1ms");
    l.per_try_timeout_s = t;
    l.retry_on_timeout = envoy::retries_timeouts(retry_on);
    l.from["client.timeout_s"] = w.text() + ": " + human_duration(t);
    l.from["client.retry_on_timeout"] =
        l.retry_on_timeout
            ? w.text() + ": set, and retryOn '" + retry_on + "' retries a timed-out attempt"
            : "retryOn '" + retry_on +
                  "' has none of 5xx, gateway-error, reset: a timed-out attempt "
                  "is not retried";
  } else {
    l.per_try_timeout_unset = true;
    l.timeouts_retriable = envoy::retries_timeouts(retry_on);
    l.retry_on_timeout = false;
    l.from["client.retry_on_timeout"] =
        at(r.file, re ? rk : hk, re ? re : route).text() +
        ": perTryTimeout unset, so an attempt runs until the route timeout and a timed-out "
        "attempt is never retried";
    if (l.deadline_s && *l.deadline_s > 0) {
      l.per_try_timeout_s = *l.deadline_s;
      l.from["client.timeout_s"] =
          "perTryTimeout unset: an attempt may take the whole route "
          "timeout " +
          human_duration(*l.deadline_s);
    } else {
      l.notes.push_back(
          "no perTryTimeout and no route timeout: attempts never time out; "
          "client.timeout_s is not imported");
    }
  }
}

void read_backoff(const RetriesAt& where, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node re = where.re;
  const std::string& rk = where.rk;
  // Istio sets no backoff of its own: Envoy's default, 25 ms doubling to 250 ms.
  l.backoff.base_s = 0.025;
  l.backoff.cap_s = 0.25;
  l.backoff.multiplier = 2;
  l.backoff.jitter = Jitter::full;
  l.from["client.backoff.base_s"] = "Istio leaves Envoy's default backoff: 25 ms";
  l.from["client.backoff.cap_s"] = "Envoy's default max_interval: 10 x 25 ms = 250 ms";
  l.from["client.backoff.multiplier"] = "Envoy doubles the backoff window each retry";
  l.from["client.backoff.jitter"] = "Envoy draws each delay uniformly in [0, window)";
  if (re && re["backoff"]) {
    Where w = at(r.file, rk + ".backoff", re["backoff"]);
    double b = istio_duration(re["backoff"], w, r);
    if (b > 0) {
      // Envoy's max_interval is 10 x base_interval (RetryStateImpl); a window
      // above the key's range never binds in any incident the model runs.
      double cap_max = key_or_throw("client.backoff.cap_s").max;
      l.backoff.base_s = b;
      l.backoff.cap_s = std::min(10 * b, cap_max);
      l.from["client.backoff.base_s"] = w.text() + ": " + human_duration(b) + " (Istio 1.26+)";
      l.from["client.backoff.cap_s"] =
          10 * b > cap_max ? "Envoy's max_interval default, 10 x base, is above the largest cap "
                             "the model takes: read as " +
                                 human_duration(cap_max)
                           : "Envoy's max_interval default: 10 x base";
    }
  }
}

// Istio's percentage {value: 0-100}; left out, the fault never fires
// (TranslateFault leaves Envoy's percentage unset, which is 0).
double istio_share(const YAML::Node& fault_part, const std::string& key, Reader& r) {
  YAML::Node p = fault_part["percentage"];
  if (fault_part["percent"])
    r.warn(at(r.file, key + ".percent", fault_part["percent"]),
           "the integer `percent` is no longer read by Istio; give percentage.value");
  if (!p) return 0;
  if (!p.IsMap() || !p["value"]) fail(at(r.file, key + ".percentage", p), "needs {value: 0-100}");
  Where w = at(r.file, key + ".percentage.value", p["value"]);
  double v = number(p["value"], w);
  if (v < 0 || v > 100) fail(w, "out of range; allowed 0 to 100");
  return v / 100;
}

void read_istio_delay(const YAML::Node& d, const std::string& key, RouteFault& f, Reader& r) {
  r.check_fields(d, key, {"fixedDelay", "exponentialDelay", "percentage", "percent"});
  if (!d["fixedDelay"]) {
    r.warn(at(r.file, key, d), "only fixedDelay is injected (Istio drops the others); left out");
    return;
  }
  Where w = at(r.file, key + ".fixedDelay", d["fixedDelay"]);
  f.delay_s = istio_duration(d["fixedDelay"], w, r);
  f.delay_share = istio_share(d, key, r);
  f.from["incident.delay_s"] = w.text() + ": " + human_duration(f.delay_s);
  f.from["incident.delay_share"] =
      d["percentage"] ? at(r.file, key + ".percentage", d["percentage"]).text() + ": " +
                            number_text(f.delay_share * 100) + "% of requests"
                      : at(r.file, key, d).text() + ": percentage left out: no request is delayed";
}

void read_istio_abort(const YAML::Node& a, const std::string& key, RouteFault& f, Reader& r) {
  r.check_fields(a, key, {"httpStatus", "grpcStatus", "http2Error", "percentage", "percent"});
  std::string note;
  std::optional<FailureClass> answer;
  if (a["httpStatus"])
    answer = envoy::http_abort_class(
        whole(a["httpStatus"], at(r.file, key + ".httpStatus", a["httpStatus"]), 200, 599), note);
  else if (a["grpcStatus"])
    answer = envoy::grpc_abort_class(
        text(a["grpcStatus"], at(r.file, key + ".grpcStatus", a["grpcStatus"])), note);
  else if (a["http2Error"])
    answer = FailureClass::reset, note = "an HTTP/2 error: read as a reset";
  else
    note = "no httpStatus, grpcStatus or http2Error";
  if (!answer) {
    r.warn(at(r.file, key, a), note + "; the abort is left out");
    return;
  }
  f.abort_status = *answer;
  f.abort_share = istio_share(a, key, r);
  f.from["incident.abort_status"] = at(r.file, key, a).text() + ": " + note;
  f.from["incident.abort_share"] =
      a["percentage"] ? at(r.file, key + ".percentage", a["percentage"]).text() + ": " +
                            number_text(f.abort_share * 100) + "% of requests"
                      : at(r.file, key, a).text() + ": percentage left out: no request is aborted";
}

// The route's fault: Envoy's fault filter in the caller's sidecar, before
// the router whose retries never see it (docs/graph.md, "A fault on a call").
void read_istio_fault(const YAML::Node& fault, const std::string& key, Reader& r) {
  if (!fault.IsMap()) fail(at(r.file, key, fault), "must be an object");
  r.check_fields(fault, key, {"delay", "abort"});
  RouteFault f;
  if (YAML::Node d = fault["delay"]; d && d.IsMap()) read_istio_delay(d, key + ".delay", f, r);
  if (YAML::Node a = fault["abort"]; a && a.IsMap()) read_istio_abort(a, key + ".abort", f, r);
  if (f.empty()) {
    r.warn(at(r.file, key, fault), "the fault injects nothing (no delay or abort that fires)");
    return;
  }
  envoy::keep_fault(f, key, r);
}

// The faults of the routes not read: said, not imported.
void warn_other_faults(const YAML::Node& http, size_t pick, Reader& r) {
  for (size_t i = 0; i < http.size(); ++i)
    if (i != pick && http[i]["fault"])
      r.warn(at(r.file, "spec.http[" + std::to_string(i) + "].fault", http[i]["fault"]),
             "a fault on a route other than the one read (spec.http[" + std::to_string(pick) +
                 "]); not imported");
}

// The subset the route sends to (its first destination's), for the
// DestinationRule's budget of that subset.
void read_destination(const YAML::Node& route, const std::string& hk, Reader& r) {
  YAML::Node to = route["route"];
  if (!to || !to.IsSequence() || to.size() == 0) return;
  YAML::Node dest = to[0].IsMap() ? to[0]["destination"] : missing();
  if (!dest || !dest.IsMap() || !dest["subset"] || !dest["subset"].IsScalar()) return;
  r.layer.destination = dest["subset"].Scalar();
  if (to.size() > 1)
    r.layer.notes.push_back(hk + ".route: " + std::to_string(to.size()) +
                            " destinations; the budget of the first one's subset (" +
                            r.layer.destination + ") is read");
}

void read_virtual_service(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  r.check_fields(d, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  YAML::Node spec = d["spec"];
  if (!spec || !spec.IsMap()) fail(at(r.file, "spec", d), "a VirtualService needs a spec");
  r.check_fields(spec, "spec", {"hosts", "gateways", "http", "tls", "tcp", "exportTo"});
  YAML::Node http = spec["http"];
  if (!http || !http.IsSequence() || http.size() == 0)
    fail(at(r.file, "spec.http", http ? http : spec), "a list of HTTP routes is needed");
  if (YAML::Node hosts = spec["hosts"];
      hosts && hosts.IsSequence() && hosts.size() > 0 && hosts[0].IsScalar())
    l.host = hosts[0].Scalar();
  if (!reaches_sidecars(spec["gateways"])) {
    l.gateway_only = true;
    r.warn(at(r.file, "spec.gateways", spec["gateways"]),
           "the rules apply only at the gateways named (no mesh): the policy of a call that "
           "enters through them, not of calls between sidecars");
  }
  size_t pick = pick_route(http, r);
  // No route every caller takes: the others match none of them (Istio
  // answers 404 NR), and none retries; the first route's timeout is read.
  const bool none_for_all = pick == http.size();
  if (none_for_all) pick = 0;
  std::string hk = "spec.http[" + std::to_string(pick) + "]";
  YAML::Node route = http[pick];
  l.has_retry_policy = true;
  l.counting = "retries";
  l.count_field = "retries.attempts";
  read_route_timeout(route, hk, r);
  read_destination(route, hk, r);
  RetriesAt retries{route, route["retries"], hk, hk + ".retries"};
  std::string retry_on = read_retries(retries, r);
  read_retried_answers(retries, retry_on, r);
  read_per_try_timeout(retries, retry_on, r);
  read_backoff(retries, r);
  if (route["fault"]) read_istio_fault(route["fault"], hk + ".fault", r);
  warn_other_faults(http, pick, r);
  if (none_for_all) {
    l.retries = 0;
    l.from["client.retries"] = at(r.file, "spec.http", http).text() +
                               ": every route names some callers only; the others' requests "
                               "match none (Istio answers 404 NR) and are not retried";
  }
  if (!l.has_budget_part) {
    l.budget.kind = BudgetKind::none;
    l.from["client.budget.kind"] = r.file +
                                   ": no DestinationRule retryBudget; Istio lifts Envoy's "
                                   "retry circuit breaker, so nothing limits retries";
    l.budget_from = l.from["client.budget.kind"];
  }
}

// trafficPolicy.retryBudget: Envoy's retry budget (a share of the requests in
// flight, with a floor).
void read_retry_budget(YAML::Node rb, Reader& r, const std::string& policy_key) {
  LayerPolicy& l = r.layer;
  std::string k = policy_key + ".retryBudget";
  if (!rb.IsMap()) fail(at(r.file, k, rb), "must be an object");
  r.check_fields(rb, k, {"percent", "minRetryConcurrency", "budgetInterval"});
  if (rb["budgetInterval"])
    l.notes.push_back(k +
                      ".budgetInterval (Istio 1.31+) is not modelled: the budget's base is "
                      "read as the requests in flight, not the requests started in the "
                      "interval");
  double percent = 20, minc = 3;
  if (rb["percent"]) {
    Where w = at(r.file, k + ".percent", rb["percent"]);
    percent = wrapped_number(rb["percent"], w);
    if (percent < 0 || percent > 100) fail(w, "out of range; allowed 0 to 100");
    l.from["client.budget.ratio"] = w.text() + ": " + number_text(percent) + "%";
  } else {
    l.from["client.budget.ratio"] = at(r.file, k, rb).text() + ": percent left out (20%)";
  }
  if (rb["minRetryConcurrency"]) {
    // 0 counts as left out (applyRetryBudget: "MinRetryConcurrency > 0").
    Where w = at(r.file, k + ".minRetryConcurrency", rb["minRetryConcurrency"]);
    minc = static_cast<double>(whole(rb["minRetryConcurrency"], w, 0, kUint32Max));
    bool zero = minc == 0;
    if (zero) minc = 3;
    l.from["client.budget.min_concurrency"] =
        w.text() + (zero ? ": 0 is read by Istio as left out (3)" : std::string());
  } else {
    l.from["client.budget.min_concurrency"] =
        at(r.file, k, rb).text() + ": minRetryConcurrency left out (3)";
  }
  l.budget.kind = BudgetKind::envoy_concurrency;
  l.set_budget("ratio", percent / 100);
  l.set_budget("min_concurrency", minc);
  l.from["client.budget.kind"] = at(r.file, k, rb).text() + ": Envoy retry budget via Istio";
}

// connectionPool.http.maxRetries without a retryBudget: a fixed cap on
// concurrent retries.
void read_max_retries(YAML::Node mr, Reader& r, const std::string& policy_key) {
  LayerPolicy& l = r.layer;
  // Istio writes Envoy's max_retries only when maxRetries > 0; otherwise
  // it keeps 4294967295 (applyConnectionPool, getDefaultCircuitBreakerThresholds
  // in pilot/pkg/networking/core/cluster_traffic_policy.go).
  Where w = at(r.file, policy_key + ".connectionPool.http.maxRetries", mr);
  double n = static_cast<double>(whole(mr, w, 0, kUint32Max));
  if (n == 0 || n > key_or_throw("client.budget.min_concurrency").max) {
    l.from["client.budget.kind"] =
        w.text() + ": " + number_text(n) +
        (n == 0 ? " is read by Istio as left out" : " concurrent retries is no limit") +
        "; Istio lifts Envoy's retry limit, so nothing limits retries";
    return;
  }
  l.budget.kind = BudgetKind::envoy_concurrency;
  l.set_budget("ratio", 0);
  l.set_budget("min_concurrency", n);
  l.from["client.budget.kind"] =
      w.text() + ": a fixed cap of " + number_text(n) + " concurrent retries, no retryBudget";
  l.from["client.budget.ratio"] = w.text() + ": maxRetries has no share of traffic";
  l.from["client.budget.min_concurrency"] = w.text();
}

// connectionPool.http.maxRetries of a trafficPolicy, or a missing node.
YAML::Node max_retries_of(const YAML::Node& tp) {
  return tp["connectionPool"] && tp["connectionPool"].IsMap() && tp["connectionPool"]["http"] &&
                 tp["connectionPool"]["http"].IsMap()
             ? tp["connectionPool"]["http"]["maxRetries"]
             : missing();
}

// A trafficPolicy's outlierDetection as Istio writes it for Envoy
// (applyOutlierDetection, pilot/pkg/networking/core/cluster_traffic_policy.go):
// consecutive5xxErrors left out keeps Envoy's 5; maxEjectionPercent 0 or left
// out keeps Envoy's 10; minHealthPercent becomes healthy_panic_threshold even
// when 0 (so by default a client never panics); success rate is turned off.
void read_outlier_detection(const YAML::Node& od, const std::string& key, Reader& r) {
  LayerPolicy& l = r.layer;
  if (!od.IsMap()) fail(at(r.file, key, od), "must be an object");
  r.check_fields(od, key,
                 {"consecutive5xxErrors", "consecutiveGatewayErrors", "consecutiveErrors",
                  "interval", "baseEjectionTime", "maxEjectionPercent", "minHealthPercent",
                  "splitExternalLocalOriginErrors", "consecutiveLocalOriginFailures"});
  auto whole_at = [&](const char* field, double fallback, long long hi, const char* shown) {
    const std::string k = key + "." + field;
    YAML::Node n = od[field];
    double v = n ? static_cast<double>(whole(n, at(r.file, k, n), 0, hi)) : fallback;
    std::string from = n ? at(r.file, k, n).text() + ": " + shown
                         : at(r.file, key, od).text() + ": " + field + " left out";
    return std::pair{v, from};
  };
  auto [fives, fives_from] = whole_at("consecutive5xxErrors", 5, kUint32Max, "5xx in a row eject");
  l.extra["client.outlier_5xx"] = fives;
  l.from["client.outlier_5xx"] = fives_from + (od["consecutive5xxErrors"] ? "" : " (Envoy's 5)");
  auto [most, most_from] = whole_at("maxEjectionPercent", 10, 100, "the most hosts ejected, %");
  l.extra["client.outlier_max_percent"] = most > 0 ? most : 10.0;
  l.from["client.outlier_max_percent"] = most_from + (most > 0 ? "" : " (Envoy's 10)");
  auto [panic, panic_from] =
      whole_at("minHealthPercent", 0, 100, "below it every host takes traffic");
  l.extra["client.outlier_panic_percent"] = panic;
  l.from["client.outlier_panic_percent"] =
      panic_from + (od["minHealthPercent"] ? "" : " (0: never)");
  for (auto [field, path] : {std::pair{"interval", "client.outlier_interval_s"},
                             std::pair{"baseEjectionTime", "client.outlier_ejection_s"}}) {
    if (YAML::Node n = od[field]) {
      Where w = at(r.file, key + "." + field, n);
      l.extra[path] = istio_duration(n, w, r);
      l.from[path] = w.text();
    }
  }
  if (od["consecutiveGatewayErrors"] || od["consecutiveErrors"])
    l.notes.push_back(key + ": gateway-error ejection is not modelled; 5xx ejection is");
}

// The budget of one trafficPolicy (the top level's or a subset's) into the
// layer: retryBudget, else a maxRetries cap; `key` names it in messages.
void read_traffic_policy(const YAML::Node& tp, const std::string& key, Reader& r) {
  if (!tp.IsMap()) fail(at(r.file, key, tp), "must be an object");
  r.check_fields(tp, key,
                 {"loadBalancer", "connectionPool", "outlierDetection", "tls", "portLevelSettings",
                  "tunnel", "proxyProtocol", "retryBudget"});
  if (YAML::Node rb = tp["retryBudget"])
    read_retry_budget(rb, r, key);
  else if (YAML::Node mr = max_retries_of(tp))
    read_max_retries(mr, r, key);
}

// Subsets with a budget of their own: the top-level trafficPolicy with the
// subset's merged over it (MergeTrafficPolicy, pilot/pkg/model/
// destination_rule.go: a field the subset sets replaces the top level's),
// kept by subset name for the route that sends to it.
void read_subset_budgets(const YAML::Node& spec, const LayerPolicy& top, Reader& r) {
  YAML::Node subsets = spec["subsets"];
  if (!subsets || !subsets.IsSequence()) return;
  for (size_t i = 0; i < subsets.size(); ++i) {
    const YAML::Node& sub = subsets[i];
    std::string key = "spec.subsets[" + std::to_string(i) + "]";
    if (!sub.IsMap() || !sub["name"] || !sub["name"].IsScalar()) continue;
    YAML::Node tp = sub["trafficPolicy"];
    if (!tp || !tp.IsMap() || (!tp["retryBudget"] && !max_retries_of(tp))) continue;
    LayerPolicy merged = top;  // the top level's budget, unless the subset's replaces it
    Reader sr{r.file, r.warnings, merged};
    // A subset's maxRetries does not replace a top-level retryBudget, which wins in Envoy.
    bool top_budget = top.budget.kind == BudgetKind::envoy_concurrency && top.budget.ratio > 0;
    if (tp["retryBudget"] || !top_budget) {
      merged.clear_budget();
      read_traffic_policy(tp, key + ".trafficPolicy", sr);
    }
    r.layer.destination_budgets[sub["name"].Scalar()] = merged.budget_part();
  }
}

void read_destination_rule(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  r.check_fields(d, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  YAML::Node spec = d["spec"];
  if (!spec || !spec.IsMap()) fail(at(r.file, "spec", d), "a DestinationRule needs a spec");
  r.check_fields(spec, "spec",
                 {"host", "trafficPolicy", "subsets", "exportTo", "workloadSelector"});
  YAML::Node tp = spec["trafficPolicy"];
  if (spec["host"] && spec["host"].IsScalar() && l.host.empty()) l.host = spec["host"].Scalar();
  l.has_budget_part = true;
  l.budget.kind = BudgetKind::none;
  l.clear_budget();
  l.from["client.budget.kind"] =
      at(r.file, "spec", spec).text() +
      ": no retryBudget or maxRetries; Istio lifts Envoy's retry limit, so nothing limits retries";
  if (tp) read_traffic_policy(tp, "spec.trafficPolicy", r);
  if (tp && tp.IsMap() && tp["outlierDetection"])
    read_outlier_detection(tp["outlierDetection"], "spec.trafficPolicy.outlierDetection", r);
  l.budget_from = l.from["client.budget.kind"];
  read_subset_budgets(spec, l, r);
}

}  // namespace

void read_istio(const std::vector<YAML::Node>& docs, Reader& r) {
  LayerPolicy& l = r.layer;
  int vs = 0, dr = 0;
  // DestinationRules first, so a VirtualService in the same file keeps their budget.
  for (const auto& d : docs)
    if (d["kind"].Scalar() == "DestinationRule" && ++dr == 1) read_destination_rule(d, r);
  for (const auto& d : docs)
    if (d["kind"].Scalar() == "VirtualService" && ++vs == 1) read_virtual_service(d, r);
  if (vs > 1 || dr > 1)
    r.warn({r.file, "", 0}, "several resources of one kind; the first of each is read");
  if (vs && dr) l.take_budget(l);  // the route's subset picks its budget
  l.format = vs && dr ? "Istio VirtualService + DestinationRule"
             : vs     ? "Istio VirtualService"
                      : "Istio DestinationRule";
}

}  // namespace retrystorm::configs
