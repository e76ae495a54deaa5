// Linkerd: ServiceProfile (routes[].isRetryable/timeout, retryBudget) or the
// annotations of Linkerd 2.16+ (retry.linkerd.io/*, timeout.linkerd.io/*).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "systems/readers.hpp"
#include "text/ascii.hpp"
#include "text/list.hpp"

namespace retrystorm::configs {

namespace {

const DurationRules kGo{false, false, true};
// Linkerd sets no retry count for ServiceProfile routes: the budget limits
// retries. The model needs a number; this one lets the budget bind first.
constexpr int kProfileRetries = 10;

// A ServiceProfile retries at once: the retry is ready as soon as the
// failure is seen (RetryPolicy::retry, linkerd2-proxy
// linkerd/app/outbound/src/http/retry.rs: future::ready(())).
void retry_at_once(LayerPolicy& l) {
  l.backoff.base_s = 0;
  l.backoff.cap_s = 0;
  l.backoff.multiplier = 2;
  l.backoff.jitter = Jitter::none;
  l.from["client.backoff.base_s"] = "a ServiceProfile retries at once, without backoff";
  l.from["client.backoff.cap_s"] = l.from["client.backoff.multiplier"] =
      l.from["client.backoff.jitter"] = "a ServiceProfile has no retry backoff";
}

// Annotation retries back off 25 ms doubling to 250 ms, jitter ratio 1
// (convert_retry, linkerd2 policy-controller/grpc/src/outbound/http.rs); the
// proxy waits base + min(U x base, 250 ms - base) with base = min(25 ms x
// 2^(n-1), 250 ms) (ExponentialBackoff, linkerd2-proxy
// linkerd/exp-backoff/src/lib.rs): retry n in [w, 2w) for w = 25, 50, 100 ms,
// then 200-250 ms, then 250 ms. No jitter kind has that shape: `equal` on a
// window of 50 ms doubling to 250 ms ([w/2, w)) is exact for retries 1 to 3
// and keeps the worst case at 250 ms; from retry 4 its delays are shorter
// ([125, 250) ms against 200 to 250 ms). docs/policies.md says so.
constexpr double kLinkerdBackoffWindow = 0.05, kLinkerdBackoffCap = 0.25;

void annotation_backoff(LayerPolicy& l) {
  l.backoff.base_s = kLinkerdBackoffWindow;
  l.backoff.cap_s = kLinkerdBackoffCap;
  l.backoff.multiplier = 2;
  l.backoff.jitter = Jitter::equal;
  l.from["client.backoff.base_s"] =
      "Linkerd backs off 25 ms doubling to 250 ms: retry n waits [w, 2w), w = 25 ms x 2^(n-1); "
      "read as windows of 50 ms";
  l.from["client.backoff.multiplier"] = "Linkerd doubles the backoff each retry";
  l.from["client.backoff.cap_s"] = "Linkerd's backoff stops at 250 ms";
  l.from["client.backoff.jitter"] =
      "equal: [w/2, w), Linkerd's [25 ms x 2^(n-1), 2x that) for retries 1 to 3";
  if (l.retries >= 4)
    l.notes.push_back(
        "Linkerd's backoff from the 4th retry is 200 to 250 ms, then exactly 250 ms; read as "
        "equal jitter, 125 to 250 ms (the same worst case, shorter on average)");
}

// What the proxy does with a ServiceProfile retryBudget (docs/policies.md):
// convert_retry_budget (linkerd2-proxy linkerd/service-profiles/src/proto.rs)
// drops a budget with retryRatio outside [0, 1000] or a ttl outside [1 s,
// 60 s], and the route then never retries; a ttl of 0 reaches the proxy as
// missing (toDuration, profile_translator.go), with the same result. Returns
// why the budget disables retries ("" when it does not).
std::string budget_refused(double ratio, double ttl) {
  if (ratio < 0 || ratio > 1000)
    return "retryRatio " + number_text(ratio) + " is outside 0 to 1000";
  if (ttl < 1 || ttl > 60) return "ttl " + human_duration(ttl) + " is outside 1 s to 60 s";
  return "";
}

// How the proxy's TpsBudget (tower tower/src/retry/budget/tps_budget.rs,
// TpsBudget::new) reads the numbers, when that differs from what is written.
void budget_notes(LayerPolicy& l, double ratio, double min_per_s, double ttl) {
  double withdraw = ratio <= 1 ? std::floor(1 / ratio) : std::floor(1000 / ratio);
  double effective = ratio <= 1 ? 1 / withdraw : 1000 / withdraw;
  if (ratio > 0 && effective != ratio)
    l.notes.push_back("retryRatio " + number_text(ratio) + " acts as " + number_text(effective) +
                      " in the proxy (a retry withdraws " + number_text(withdraw) +
                      (ratio <= 1 ? " deposits" : " thousandths of deposits") + ")");
  if (min_per_s > 0 && ttl != std::floor(ttl))
    l.notes.push_back("the proxy's reserve counts whole seconds of ttl: " + number_text(min_per_s) +
                      " x " + number_text(std::floor(ttl)) + " retries, not x " + number_text(ttl));
}

// A retryable route retries responses classified as failures: 5xx unless
// responseClasses says otherwise; a 429 is a success by default, and the
// proxy's own errors (refused, reset) are answered, not retried.
void read_profile_answers(const YAML::Node& route, const std::string& rk, Reader& r) {
  LayerPolicy& l = r.layer;
  l.retried_answers = answer_bit(FailureClass::http_503);
  l.from["client.retry_on"] =
      "ServiceProfile: a response of class failure (5xx by default) is retried: 503; a 429, a "
      "refused connection or a reset is not";
  if (route && route["responseClasses"])
    l.notes.push_back(at(r.file, rk + ".responseClasses", route["responseClasses"]).text() +
                      ": read as the default (5xx is a failure)");
}

void read_profile_budget(const YAML::Node& spec, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node rb = spec["retryBudget"];
  double ratio = 0.2, min_per_s = 10, ttl = 10;
  std::string bk = "spec.retryBudget";
  if (rb) {
    if (!rb.IsMap()) fail(at(r.file, bk, rb), "must be an object");
    r.check_fields(rb, bk, {"retryRatio", "minRetriesPerSecond", "ttl"});
    for (const char* req : {"retryRatio", "minRetriesPerSecond", "ttl"})
      if (!rb[req]) fail(at(r.file, bk, rb), std::string(req) + " is required in a retryBudget");
    Where rw = at(r.file, bk + ".retryRatio", rb["retryRatio"]);
    ratio = number(rb["retryRatio"], rw);
    Where mw = at(r.file, bk + ".minRetriesPerSecond", rb["minRetriesPerSecond"]);
    min_per_s = static_cast<double>(whole(rb["minRetriesPerSecond"], mw, 0, 1LL << 32));
    Where tw = at(r.file, bk + ".ttl", rb["ttl"]);
    ttl = duration(rb["ttl"], tw, kGo);
    l.from["client.budget.kind"] = at(r.file, bk, rb).text() + ": Linkerd retry budget";
    l.from["client.budget.ratio"] = rw.text();
    l.from["client.budget.min_retries_per_s"] = mw.text();
    l.from["client.budget.ttl_s"] = tw.text() + ": " + human_duration(ttl);
    std::string refused = budget_refused(ratio, ttl);
    if (!refused.empty()) {
      r.warn(at(r.file, bk, rb), refused +
                                     ": the Linkerd proxy drops this retryBudget and the route "
                                     "never retries; read as 0 retries");
      l.retries = 0;
      l.from["client.retries"] =
          at(r.file, bk, rb).text() + ": " + refused + ", so the proxy does not retry";
      ratio = std::clamp(ratio, 0.0, key_or_throw("client.budget.ratio").max);
    } else {
      budget_notes(l, ratio, min_per_s, ttl);
    }
  } else {
    l.from["client.budget.kind"] =
        r.file + ": no retryBudget: Linkerd's default budget (20%, 10 per second, ttl 10 s)";
    l.from["client.budget.ratio"] = l.from["client.budget.min_retries_per_s"] =
        l.from["client.budget.ttl_s"] = "Linkerd default budget";
  }
  l.budget.kind = BudgetKind::ratio_ttl;
  l.set_budget("ratio", ratio);
  l.set_budget("min_retries_per_s", min_per_s);
  l.set_budget("ttl_s", ttl);
  l.budget_from = l.from["client.budget.kind"];
}

// The service a resource's retries are for: a Gateway API route's first
// parent (a Service), else the resource's own name (a ServiceProfile is named
// after its service's FQDN, annotations sit on the Service).
std::string destination_of(const YAML::Node& d) {
  const YAML::Node spec = d["spec"];
  if (spec && spec.IsMap() && spec["parentRefs"] && spec["parentRefs"].IsSequence() &&
      spec["parentRefs"].size() > 0 && spec["parentRefs"][0].IsMap() &&
      spec["parentRefs"][0]["name"] && spec["parentRefs"][0]["name"].IsScalar())
    return spec["parentRefs"][0]["name"].Scalar();
  const YAML::Node meta = d["metadata"];
  if (meta && meta.IsMap() && meta["name"] && meta["name"].IsScalar()) return meta["name"].Scalar();
  return "";
}

void read_profile(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  r.check_fields(d, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  YAML::Node spec = d["spec"];
  if (!spec || !spec.IsMap()) fail(at(r.file, "spec", d), "a ServiceProfile needs a spec");
  r.check_fields(spec, "spec", {"routes", "retryBudget", "opaquePorts", "dstOverrides"});
  l.format = "Linkerd ServiceProfile";
  l.has_retry_policy = true;
  l.counting = "retries";
  l.count_field = "isRetryable";
  l.has_budget_part = true;

  YAML::Node routes = spec["routes"];
  YAML::Node route = missing();
  std::string rk;
  if (routes) {
    if (!routes.IsSequence()) fail(at(r.file, "spec.routes", routes), "must be a list");
    for (size_t i = 0; i < routes.size(); ++i) {
      std::string k = "spec.routes[" + std::to_string(i) + "]";
      if (!routes[i].IsMap()) fail(at(r.file, k, routes[i]), "must be an object");
      r.check_fields(routes[i], k,
                     {"name", "condition", "responseClasses", "isRetryable", "timeout"});
      if (!routes[i]["name"]) fail(at(r.file, k, routes[i]), "name is required");
      if (!routes[i]["condition"]) fail(at(r.file, k, routes[i]), "condition is required");
      bool retryable = routes[i]["isRetryable"] &&
                       boolean(routes[i]["isRetryable"],
                               at(r.file, k + ".isRetryable", routes[i]["isRetryable"]));
      if (retryable && !route) {
        route = routes[i];
        rk = k;
      }
    }
    if (!route && routes.size() > 0) {
      route = routes[0];
      rk = "spec.routes[0]";
    }
  }
  bool retryable =
      route && route["isRetryable"] &&
      boolean(route["isRetryable"], at(r.file, rk + ".isRetryable", route["isRetryable"]));
  l.retries = retryable ? kProfileRetries : 0;
  l.as_written = retryable ? 1 : 0;
  l.from["client.retries"] = retryable
                                 ? at(r.file, rk + ".isRetryable", route["isRetryable"]).text() +
                                       ": retried as long as the budget allows (no count; " +
                                       std::to_string(kProfileRetries) + " stands for unbounded)"
                                 : r.file + ": no route is retryable, so no retries";

  // No default route timeout since Linkerd 2.9 (toRoute, linkerd2
  // controller/api/destination/profile_translator.go: "No default timeout").
  double timeout = 0;
  if (route && route["timeout"]) {
    Where w = at(r.file, rk + ".timeout", route["timeout"]);
    timeout = duration(route["timeout"], w, kGo);
    l.from["client.deadline_s"] = w.text() + ": the route timeout, retries included";
  } else {
    l.from["client.deadline_s"] = (route ? at(r.file, rk, route).text() : r.file) +
                                  ": timeout left out: no deadline (Linkerd 2.9+ has no "
                                  "default route timeout)";
  }
  l.deadline_s = timeout;
  if (timeout > 0) {
    l.per_try_timeout_s = timeout;
    l.from["client.timeout_s"] =
        "ServiceProfile has no per-attempt timeout: an attempt can "
        "take the route timeout " +
        human_duration(timeout);
  } else {
    l.notes.push_back(
        "no route timeout: attempts never time out; client.timeout_s is not imported");
  }
  l.retry_on_timeout = false;
  l.from["client.retry_on_timeout"] =
      "ServiceProfile: the route timeout ends the request; a timeout is not retried";
  read_profile_answers(route, rk, r);
  retry_at_once(l);

  read_profile_budget(spec, r);
}

// A retry.linkerd.io or timeout.linkerd.io duration as Linkerd's policy
// controller reads it (parse_duration, linkerd2
// policy-controller/k8s/index/src/outbound/index.rs): one whole number and one
// unit of ms, s, m, h, d ("0" alone too). A fraction or a compound value
// ("1.5s", "1m30s") fails there, and the route with it is not converted.
double annotation_duration(const YAML::Node& n, const Where& w) {
  const std::string raw = text(n, w);
  std::string t = raw;
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  const size_t last_digit = t.find_last_of("0123456789");
  const std::string magnitude = last_digit == std::string::npos ? "" : t.substr(0, last_digit + 1);
  const std::string unit = last_digit == std::string::npos ? t : t.substr(last_digit + 1);
  static const std::map<std::string, double> kUnits = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  const bool whole = !magnitude.empty() && magnitude.size() <= 15 &&
                     magnitude.find_first_not_of("0123456789") == std::string::npos;
  const auto u = kUnits.find(unit);
  if (whole && unit.empty() && std::stod(magnitude) == 0) return 0;
  if (!whole || u == kUnits.end())
    fail(w, "'" + raw + "': Linkerd reads one whole number and one unit of ms, s, m, h, d " +
                "(e.g. 1500ms, 2s); it refuses this value and drops the route's policy");
  return std::stod(magnitude) * u->second;
}

// The request timeout: the annotation, else the HTTPRoute rule's
// timeouts.request; 0 means none (convert_linkerd_rule / convert_gateway_rule,
// linkerd2 policy-controller/k8s/index/src/outbound/index/http.rs, GEP-1742).
void read_request_timeout(const YAML::Node& d, const YAML::Node& request, const std::string& ak,
                          Reader& r) {
  LayerPolicy& l = r.layer;
  l.deadline_s = 0;
  l.from["client.deadline_s"] =
      r.file + ": no timeout.linkerd.io/request or rules[].timeouts.request, so no deadline";
  if (request) {
    Where w = at(r.file, ak + ".timeout.linkerd.io/request", request);
    l.deadline_s = annotation_duration(request, w);
    l.from["client.deadline_s"] = w.text() + ": the whole request, retries included";
    return;
  }
  const YAML::Node rules = d["spec"] && d["spec"].IsMap() ? d["spec"]["rules"] : missing();
  if (!rules || !rules.IsSequence()) return;
  for (size_t i = 0; i < rules.size(); ++i) {
    const YAML::Node t = rules[i].IsMap() && rules[i]["timeouts"] && rules[i]["timeouts"].IsMap()
                             ? rules[i]["timeouts"]["request"]
                             : missing();
    if (!t) continue;
    Where w = at(r.file, "spec.rules[" + std::to_string(i) + "].timeouts.request", t);
    l.deadline_s = duration(t, w, kGo);
    l.from["client.deadline_s"] =
        w.text() + (*l.deadline_s > 0 ? ": the whole request, retries included"
                                      : ": 0 means no timeout (GEP-1742)");
    return;
  }
}

// An annotation's list as Linkerd's policy controller splits it: at every
// comma, nothing trimmed ("5xx, 429" has the item " 429").
std::vector<std::string> annotation_items(const std::string& list) {
  std::vector<std::string> items(1);
  for (char c : list)
    if (c == ',')
      items.emplace_back();
    else
      items.back().push_back(c);
  return items;
}

[[noreturn]] void refused_item(const Where& w, const std::string& list, const std::string& item,
                               const std::string& known) {
  fail(w, "'" + list + "': Linkerd refuses the item '" + item + "' (" + known +
              ", separated by commas without spaces) and with it the retry policy");
}

struct StatusRange {
  int min, max;
};

// retry.linkerd.io/http (parse_http_retry, linkerd2 policy-controller/k8s/
// index/src/outbound/index/http.rs): 5xx and gateway-error (502-504) in any
// case, a status code from 100 to 599, or a range of two of them.
std::vector<StatusRange> http_retry_conditions(const std::string& list, const Where& w) {
  auto code_of = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos &&
                   std::stoi(s) >= 100 && std::stoi(s) <= 599
               ? std::stoi(s)
               : -1;
  };
  std::vector<StatusRange> ranges;
  for (const std::string& item : annotation_items(list)) {
    const std::string lower = text::lower_ascii(item);
    const size_t dash = item.find('-');
    const int lo = code_of(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : code_of(item.substr(dash + 1));
    if (lower == "5xx")
      ranges.push_back({500, 599});
    else if (lower == "gateway-error")
      ranges.push_back({502, 504});
    else if (lo > 0 && hi > 0 && lo <= hi)
      ranges.push_back({lo, hi});
    else
      refused_item(w, list, item, "known: 5xx, gateway-error, a status code or a range as 500-504");
  }
  return ranges;
}

bool in_ranges(const std::vector<StatusRange>& ranges, int code) {
  for (const StatusRange& r : ranges)
    if (code >= r.min && code <= r.max) return true;
  return false;
}

// retry.linkerd.io/grpc (parse_grpc_retry, linkerd2 policy-controller/k8s/
// index/src/outbound/index/grpc.rs): five codes in any case, as lower case.
std::vector<std::string> grpc_retry_conditions(const std::string& list, const Where& w) {
  static const std::set<std::string> kCodes = {"cancelled", "deadline-exceeded", "internal",
                                               "resource-exhausted", "unavailable"};
  std::vector<std::string> codes;
  for (const std::string& item : annotation_items(list)) {
    codes.push_back(text::lower_ascii(item));
    if (!kCodes.count(codes.back()))
      refused_item(w, list, item,
                   "known: cancelled, deadline-exceeded, internal, resource-exhausted, "
                   "unavailable");
  }
  return codes;
}

// Which error answers the annotations retry: refused streams and fail-fast
// errors always (a refused connection), /http's status ranges ("5xx",
// "429", "500-504") and /grpc's codes (unavailable is how a 503, a refused
// connection and a reset reach a gRPC caller).
void read_annotation_answers(const YAML::Node& http, const YAML::Node& grpc,
                             const std::function<std::string(const std::string&)>& key, Reader& r) {
  LayerPolicy& l = r.layer;
  l.retried_answers = answer_bit(FailureClass::refused);
  std::string from = r.file + ": refused streams and fail-fast errors";
  if (http) {
    Where w = at(r.file, key("retry.linkerd.io/http"), http);
    std::string ranges = text(http, w);
    std::vector<StatusRange> items = http_retry_conditions(ranges, w);
    if (in_ranges(items, 503)) l.retried_answers |= answer_bit(FailureClass::http_503);
    if (in_ranges(items, 429)) l.retried_answers |= answer_bit(FailureClass::http_429);
    from = w.text() + ": '" + ranges + "', with refused streams and fail-fast errors";
  }
  if (grpc) {
    Where w = at(r.file, key("retry.linkerd.io/grpc"), grpc);
    std::string codes = text(grpc, w);
    for (const std::string& item : grpc_retry_conditions(codes, w)) {
      if (item == "unavailable") l.retried_answers = kAllAnswers;
      if (item == "resource-exhausted") l.retried_answers |= answer_bit(FailureClass::http_429);
    }
    from += "; " + w.text() + ": '" + codes + "'";
  }
  l.from["client.retry_on"] = from + ": retries " + answer_set_text(l.retried_answers);
}

// The retry policy the annotations make (parse_http_retry, linkerd2
// policy-controller/k8s/index/src/outbound/index/http.rs): a limit or a
// per-try timeout of 0 counts as left out; any of /http, /grpc, /limit,
// /timeout makes a policy, limit 1 by default.
void read_retry_annotations(const YAML::Node& http, const YAML::Node& grpc, const YAML::Node& limit,
                            const YAML::Node& per_try, const std::string& ak, const YAML::Node& ann,
                            Reader& r) {
  LayerPolicy& l = r.layer;
  auto key = [&](const std::string& name) { return ak + "." + name; };
  long long n = 0;
  std::string limit_from;
  const Where w = at(r.file, key("retry.linkerd.io/limit"), limit);
  if (limit) {
    n = whole(limit, w, 0, 65535);  // parsed as a u16 (parse_http_retry)
    limit_from = w.text() + ": " + std::to_string(n) +
                 (n == 0 ? " counts as left out (Linkerd default 1)"
                         : " (retries; " + std::to_string(n + 1) + " attempts)");
  }
  double t = 0;
  Where tw;
  if (per_try) {
    tw = at(r.file, key("retry.linkerd.io/timeout"), per_try);
    t = annotation_duration(per_try, tw);
    if (t == 0) l.notes.push_back(tw.text() + ": 0 counts as left out");
  }
  if (!http && !grpc && n == 0 && t == 0) {
    r.warn(at(r.file, ak, ann),
           "no retry.linkerd.io/http, /grpc, /timeout and no /limit above 0: Linkerd makes no "
           "retry policy; read as 0 retries");
    l.retries = 0;
    l.as_written = 0;
    l.from["client.retries"] = r.file + ": no retry annotation that makes a policy, so no retries";
  } else {
    if (n == 0) n = 1;
    l.as_written = n;
    l.from["client.retries"] =
        limit ? limit_from : r.file + ": retry.linkerd.io/limit left out (Linkerd default 1)";
    l.retries = model_retries(n, w, r);
    annotation_backoff(l);
    read_annotation_answers(http, grpc, key, r);
    if (!http && !grpc)
      l.notes.push_back(
          "no retry.linkerd.io/http or /grpc: no response status is retried, only refused "
          "streams, fail-fast errors and (with /timeout) timed-out attempts");
  }
  if (t > 0) {
    // The per-try timeout is removed on the last attempt
    // (RetryPolicy::set_extensions, linkerd2-proxy
    // linkerd/app/outbound/src/http/logical/policy/route/retry.rs).
    l.per_try_timeout_s = t;
    l.retry_on_timeout = true;
    l.from["client.timeout_s"] = tw.text() + ": " + human_duration(t) + " per attempt";
    l.from["client.retry_on_timeout"] = tw.text() + ": an attempt that times out is retried";
    l.notes.push_back(
        "Linkerd lifts retry.linkerd.io/timeout on the last attempt, which runs until the "
        "request timeout; the model gives every attempt the per-try timeout");
    return;
  }
  l.per_try_timeout_unset = true;
  l.retry_on_timeout = false;
  l.from["client.retry_on_timeout"] =
      r.file + ": no retry.linkerd.io/timeout: a slow attempt is not retried";
  if (l.deadline_s && *l.deadline_s > 0) {
    l.per_try_timeout_s = *l.deadline_s;
    l.from["client.timeout_s"] = "no per-attempt timeout: an attempt can take the request timeout";
  }
}

void read_annotations(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  std::string kind = d["kind"] ? d["kind"].Scalar() : "resource";
  l.format = "Linkerd annotations on a " + kind;
  l.has_retry_policy = true;
  l.counting = "retries";
  l.count_field = "retry.linkerd.io/limit";
  const YAML::Node meta = d["metadata"];
  const YAML::Node ann = meta && meta.IsMap() && meta["annotations"] && meta["annotations"].IsMap()
                             ? meta["annotations"]
                             : YAML::Node(YAML::NodeType::Map);
  std::string ak = "metadata.annotations";
  YAML::Node http = missing(), grpc = missing(), limit = missing(), per_try = missing(),
             request = missing();
  for (const auto& kv : ann) {
    std::string k = key_of(kv.first);
    if (k.rfind("retry.linkerd.io/", 0) != 0 && k.rfind("timeout.linkerd.io/", 0) != 0) continue;
    if (k == "retry.linkerd.io/http")
      http = kv.second;
    else if (k == "retry.linkerd.io/grpc")
      grpc = kv.second;
    else if (k == "retry.linkerd.io/limit")
      limit = kv.second;
    else if (k == "retry.linkerd.io/timeout")
      per_try = kv.second;
    else if (k == "timeout.linkerd.io/request")
      request = kv.second;
    else if (k == "timeout.linkerd.io/response" || k == "timeout.linkerd.io/idle")
      l.notes.push_back(k + " is not modelled");
    else
      r.warn(at(r.file, ak + "." + k, kv.first),
             "unknown Linkerd annotation, ignored (known: retry.linkerd.io/http, /grpc, /limit, "
             "/timeout; timeout.linkerd.io/request, /response, /idle)");
  }
  // An HTTPRoute reads only /http, a GRPCRoute only /grpc (convert_route in
  // linkerd2 policy-controller/k8s/index/src/outbound/index/http.rs and grpc.rs).
  auto ignored = [&](YAML::Node& n, const char* name) {
    if (!n) return;
    r.warn(at(r.file, ak + "." + name, n),
           std::string(name) + " on a " + kind + ": Linkerd ignores it there; not read");
    n.reset(missing());  // rebinds: assigning would overwrite the annotation's node
  };
  if (kind == "HTTPRoute") ignored(grpc, "retry.linkerd.io/grpc");
  if (kind == "GRPCRoute") ignored(http, "retry.linkerd.io/http");
  read_request_timeout(d, request, ak, r);
  read_retry_annotations(http, grpc, limit, per_try, ak, ann, r);
  // The fields read_retry_annotations leaves when there are no retries.
  if (l.retries == 0) annotation_backoff(l);
  l.budget.kind = BudgetKind::none;
  l.from["client.budget.kind"] = r.file + ": retry annotations have no retry budget";
  l.budget_from = l.from["client.budget.kind"];
  l.has_budget_part = true;
}

}  // namespace

void read_linkerd(const std::vector<YAML::Node>& docs, Reader& r) {
  const YAML::Node* profile = nullptr;
  const YAML::Node* annotated = nullptr;
  for (const auto& d : docs) {
    if (!d.IsMap()) fail(at(r.file, "", d), "expected a Kubernetes resource");
    std::string kind = d["kind"] && d["kind"].IsScalar() ? d["kind"].Scalar() : "";
    if (kind == "ServiceProfile") {
      if (!profile) profile = &d;
    } else if (!annotated &&
               ((d["metadata"] && d["metadata"].IsMap() && d["metadata"]["annotations"] &&
                 d["metadata"]["annotations"].IsMap()) ||
                kind == "HTTPRoute" || kind == "GRPCRoute")) {
      annotated = &d;  // a Gateway API route is read even without annotations
    }
  }
  if (profile) {
    if (annotated)
      r.warn({r.file, "metadata.annotations", line_of(*annotated)},
             "a ServiceProfile exists: Linkerd ignores retry annotations; the profile is read");
    read_profile(*profile, r);
    r.layer.host = destination_of(*profile);
  } else if (annotated) {
    read_annotations(*annotated, r);
    std::string kind = (*annotated)["kind"] ? (*annotated)["kind"].Scalar() : "";
    // On a workload the annotations are its own outbound calls, for any callee.
    if (kind == "Service" || kind == "HTTPRoute" || kind == "GRPCRoute")
      r.layer.host = destination_of(*annotated);
  } else {
    fail({r.file, "", docs.empty() ? 0 : line_of(docs[0])},
         "no ServiceProfile and no retry.linkerd.io annotations");
  }
}

}  // namespace retrystorm::configs
