// Envoy: route (timeout, retry_policy) and cluster (circuit_breakers) fragments,
// in YAML or JSON, snake_case or lowerCamelCase (proto3 JSON allows both).
#include <algorithm>
#include <span>
#include <sstream>

#include "systems/envoy/fault.hpp"
#include "systems/envoy/retry_on.hpp"
#include "systems/readers.hpp"
#include "text/list.hpp"

namespace retrystorm::configs {

namespace {

constexpr double kEnvoyRouteTimeout = 15;
constexpr double kEnvoyBaseInterval = 0.025;

struct Found {
  YAML::Node map;
  std::string path;
};

YAML::Node get(const YAML::Node& map, const std::string& snake) {
  return proto_field(map, snake);
}

// Collects maps holding `key` (retry_policy, circuit_breakers), bounded.
void collect(const YAML::Node& n, const std::string& key, const std::string& path,
             std::vector<Found>& out, int depth, int& budget) {
  if (depth > 40 || --budget < 0) return;
  if (n.IsMap()) {
    if (get(n, key)) out.push_back({n, path});
    for (const auto& kv : n) {
      std::string k = key_of(kv.first);
      if (snake_case(k) == key) continue;
      collect(kv.second, key, path.empty() ? k : path + "." + k, out, depth + 1, budget);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i)
      collect(n[i], key, path + "[" + std::to_string(i) + "]", out, depth + 1, budget);
  }
}

std::string join(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

// A duration as written, in seconds.
double envoy_seconds(const Reader& r, const YAML::Node& n, const std::string& key) {
  Where w = at(r.file, key, n);
  if (n.IsScalar()) {
    std::string t = n.Scalar();
    bool proto_form =
        !t.empty() && t.back() == 's' && t.find_first_not_of("0123456789.") == t.size() - 1;
    if (!proto_form && t != "0") {
      double v = parse_duration_text(t, w, {false, false, true, true});
      r.warn(w, "'" + t + "': Envoy reads durations as seconds with an s suffix (\"" +
                    proto_duration(v) + "\"); Envoy rejects this form, read as " +
                    human_duration(v));
      return v;
    }
  }
  return duration(n, w, {true, false, false});
}

// A duration as Envoy keeps it: whole milliseconds, the rest cut off
// (PROTOBUF_GET_MS_OR_DEFAULT, PROTOBUF_GET_MS_REQUIRED): 0.4 ms is 0.
double envoy_duration(const Reader& r, const YAML::Node& n, const std::string& key) {
  return std::floor(envoy_seconds(r, n, key) * 1000 + 1e-6) / 1000;
}

// Envoy's own limit when no retry_budget is in force: max_retries concurrent
// retries per cluster and priority, per Envoy instance, 3 unless a DEFAULT
// threshold sets it (ClusterInfoImpl::ResourceManagers::load in
// source/common/upstream/upstream_impl.cc). It is the envoy_concurrency
// budget with no share of traffic: ratio 0, min_concurrency = the cap
// (docs/policies.md). Above the key's range the cap never binds: `none`
// (Istio writes 4294967295 on every cluster it builds).
constexpr double kEnvoyDefaultMaxRetries = 3;

void set_retry_cap(LayerPolicy& l, double cap, const std::string& from) {
  l.clear_budget();
  if (cap > key_or_throw("client.budget.min_concurrency").max) {
    l.budget.kind = BudgetKind::none;
    l.from["client.budget.kind"] =
        from + "; " + number_text(cap) +
        " concurrent retries is no limit in practice, so nothing limits retries";
    return;
  }
  l.budget.kind = BudgetKind::envoy_concurrency;
  l.set_budget("ratio", 0);
  l.set_budget("min_concurrency", cap);
  l.from["client.budget.kind"] = from + "; a fixed cap of " + number_text(cap) +
                                 " concurrent retries per Envoy instance (backoff included), no "
                                 "retry_budget";
  l.from["client.budget.ratio"] = from + "; max_retries has no share of traffic";
  l.from["client.budget.min_concurrency"] = from;
}

void read_retry_budget(const YAML::Node& rb, const std::string& rk, bool has_max_retries,
                       Reader& r) {
  LayerPolicy& l = r.layer;
  if (!rb.IsMap() && !rb.IsNull()) fail(at(r.file, rk, rb), "must be an object");
  r.check_fields(rb, rk, {"budget_percent", "min_retry_concurrency", "budget_interval"}, true);
  YAML::Node bp = get(rb, "budget_percent");
  YAML::Node mc = get(rb, "min_retry_concurrency");
  if (get(rb, "budget_interval"))
    l.notes.push_back(rk +
                      ".budget_interval is not modelled: the budget's base is read as the "
                      "requests in flight, not the requests started in the interval");
  if (!bp && !mc) {
    // Envoy uses the budget only when one of its fields is set
    // (RetryBudgetImpl::useRetryBudget, source/common/upstream/resource_manager_impl.h).
    l.notes.push_back(rk +
                      " sets neither budget_percent nor min_retry_concurrency: Envoy then "
                      "ignores it and keeps max_retries");
    return;
  }
  double percent = 20, minc = 3;
  if (bp) {
    percent = wrapped_number(bp, at(r.file, rk + ".budget_percent", bp));
    if (percent < 0 || percent > 100)
      fail(at(r.file, rk + ".budget_percent", bp),
           number_text(percent) + " is out of range; allowed 0 to 100");
  }
  if (mc) {
    Where w = at(r.file, rk + ".min_retry_concurrency", mc);
    minc = static_cast<double>(wrapped_whole(mc, w, 0, 1 << 30));
  }
  l.clear_budget();
  l.budget.kind = BudgetKind::envoy_concurrency;
  l.set_budget("ratio", percent / 100);
  l.set_budget("min_concurrency", minc);
  l.from["client.budget.kind"] = at(r.file, rk, rb).text() + ": Envoy retry budget";
  l.from["client.budget.ratio"] =
      bp ? at(r.file, rk + ".budget_percent", bp).text() + ": " + number_text(percent) + "%"
         : at(r.file, rk, rb).text() + ": budget_percent left out (Envoy default 20%)";
  l.from["client.budget.min_concurrency"] =
      mc ? at(r.file, rk + ".min_retry_concurrency", mc).text()
         : at(r.file, rk, rb).text() + ": min_retry_concurrency left out (Envoy default 3)";
  if (has_max_retries)
    l.notes.push_back(rk + ": retry_budget replaces max_retries; max_retries is ignored");
}

// Whether a cluster may speak HTTP/2 upstream (http2_protocol_options, or
// HttpProtocolOptions' explicit http2 or auto_config), where one connection
// carries many attempts and the HTTP/1 pool's rule does not hold.
bool may_use_http2(const YAML::Node& node, int depth = 0) {
  if (depth > 8 || !node.IsMap()) return false;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string& k = kv.first.Scalar();
    if (k == "http2_protocol_options" || k == "auto_config") return true;
    if (may_use_http2(kv.second, depth + 1)) return true;
  }
  return false;
}

// One whole-number threshold as a scenario key, naming its line.
void read_limit(const YAML::Node& t, const std::string& tk, const char* field,
                const std::string& key, long long lo, const std::string& meaning, Reader& r) {
  YAML::Node v = get(t, field);
  if (!v) return;
  Where w = at(r.file, tk + "." + field, v);
  const long long n = wrapped_whole(v, w, lo, 1000000000);
  r.layer.extra[key] = static_cast<double>(n);
  r.layer.from[key] = w.text() + ": " + std::to_string(n) + " " + meaning;
}

// max_connections and max_pending_requests as the client's HTTP/1
// connection pool per Envoy instance (client.max_connections,
// client.max_pending_requests); Envoy's 1,024 each where one is left out.
void read_pool(const YAML::Node& t, const std::string& tk, bool http2, Reader& r) {
  LayerPolicy& l = r.layer;
  if (!get(t, "max_connections") && !get(t, "max_pending_requests")) return;
  if (http2) {
    l.notes.push_back(tk + ": max_connections and max_pending_requests are not modelled for a " +
                      "cluster that may speak HTTP/2 (many attempts share one connection)");
    return;
  }
  if (!get(t, "max_connections")) {
    l.extra["client.max_connections"] = 1024.0;
    l.from["client.max_connections"] =
        at(r.file, tk, t).text() + ": max_connections left out (Envoy default 1024)";
  }
  read_limit(t, tk, "max_connections", "client.max_connections", 1,
             "HTTP/1 connections per Envoy instance; attempts beyond them wait for one", r);
  read_limit(t, tk, "max_pending_requests", "client.max_pending_requests", 0,
             "attempts may wait for a connection; beyond them answered 503 at once", r);
}

// The DEFAULT priority's threshold (Envoy reads the first one of a priority).
void read_threshold(const YAML::Node& t, const std::string& tk, bool http2, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node rb = get(t, "retry_budget");
  YAML::Node mr = get(t, "max_retries");
  if (mr) {
    Where w = at(r.file, tk + ".max_retries", mr);
    set_retry_cap(l, static_cast<double>(wrapped_whole(mr, w, 0, kUint32Max)), w.text());
  } else {
    set_retry_cap(l, kEnvoyDefaultMaxRetries,
                  at(r.file, tk, t).text() + ": max_retries left out (Envoy default 3)");
  }
  if (rb) read_retry_budget(rb, tk + ".retry_budget", static_cast<bool>(mr), r);
  // max_requests as a bulkhead per Envoy instance (client.max_requests); left
  // out, Envoy's 1,024 is not set: it rarely binds one client.
  read_limit(t, tk, "max_requests", "client.max_requests", 1,
             "attempts in flight per Envoy instance; beyond them answered 503 at once", r);
  read_pool(t, tk, http2, r);
}

void read_budget(const std::vector<Found>& breakers, Reader& r) {
  LayerPolicy& l = r.layer;
  if (breakers.empty()) return;
  l.has_budget_part = true;
  const Found& f = breakers.front();
  if (breakers.size() > 1)
    r.warn(at(r.file, join(f.path, "circuit_breakers"), get(f.map, "circuit_breakers")),
           std::to_string(breakers.size()) + " clusters with circuit breakers; the first is read");
  if (YAML::Node name = get(f.map, "name"); name && name.IsScalar()) l.host = name.Scalar();
  std::string cb_key = join(f.path, "circuit_breakers");
  YAML::Node cb = get(f.map, "circuit_breakers");
  if (!cb.IsMap()) fail(at(r.file, cb_key, cb), "must be an object with thresholds");
  r.check_fields(cb, cb_key, {"thresholds", "per_host_thresholds"}, true);
  YAML::Node th = get(cb, "thresholds");
  set_retry_cap(l, kEnvoyDefaultMaxRetries,
                at(r.file, cb_key, cb).text() +
                    ": no DEFAULT threshold, so max_retries keeps Envoy's default 3");
  if (th && !th.IsSequence()) fail(at(r.file, cb_key + ".thresholds", th), "must be a list");
  bool seen_default = false;
  for (size_t i = 0; th && i < th.size(); ++i) {
    std::string tk = cb_key + ".thresholds[" + std::to_string(i) + "]";
    const YAML::Node t = th[i];
    if (!t.IsMap()) fail(at(r.file, tk, t), "must be an object");
    r.check_fields(t, tk,
                   {"priority", "max_connections", "max_pending_requests", "max_requests",
                    "max_retries", "retry_budget", "track_remaining", "max_connection_pools"},
                   true);
    YAML::Node pr = get(t, "priority");
    std::string priority = pr ? text(pr, at(r.file, tk + ".priority", pr)) : "DEFAULT";
    if (priority != "DEFAULT") {
      if (priority != "HIGH")
        fail(at(r.file, tk + ".priority", pr), "'" + priority + "': choose DEFAULT or HIGH");
      l.notes.push_back(tk + ": priority HIGH thresholds are not modelled");
      continue;
    }
    if (seen_default) {
      l.notes.push_back(tk + ": a second DEFAULT threshold; Envoy reads the first");
      continue;
    }
    seen_default = true;
    read_threshold(t, tk, may_use_http2(f.map), r);
  }
  l.budget_from = l.from["client.budget.kind"];
}

// The fields of an Envoy route (config.route.v3.Route and RouteAction) other
// than retry_policy's, so that a field of neither is reported.
void check_route_fields(const Reader& r, const YAML::Node& route, const std::string& route_key) {
  r.check_fields(route, route_key,
                 {"cluster",
                  "cluster_header",
                  "weighted_clusters",
                  "cluster_specifier_plugin",
                  "inline_cluster_specifier_plugin",
                  "cluster_not_found_response_code",
                  "metadata_match",
                  "prefix_rewrite",
                  "path_rewrite_policy",
                  "regex_rewrite",
                  "host_rewrite_literal",
                  "auto_host_rewrite",
                  "host_rewrite_header",
                  "host_rewrite_path_regex",
                  "append_x_forwarded_host",
                  "timeout",
                  "idle_timeout",
                  "early_data_policy",
                  "retry_policy",
                  "retry_policy_typed_config",
                  "request_mirror_policies",
                  "priority",
                  "rate_limits",
                  "include_vh_rate_limits",
                  "hash_policy",
                  "cors",
                  "max_grpc_timeout",
                  "grpc_timeout_offset",
                  "upgrade_configs",
                  "internal_redirect_policy",
                  "internal_redirect_action",
                  "max_internal_redirects",
                  "hedge_policy",
                  "max_stream_duration",
                  "circuit_breakers",
                  "name",
                  "match",
                  "route"},
                 true);
}

// The documents' route retry policies, cluster circuit breakers and bare retry
// policies (num_retries, retry_on ... at the top).
struct EnvoyParts {
  std::vector<Found> routes, breakers, bare;
  std::vector<Found> vhosts;  // maps holding routes: virtual hosts, for a route's defaults
};

EnvoyParts collect_parts(const std::vector<YAML::Node>& docs, const Reader& r) {
  EnvoyParts parts;
  for (const auto& d : docs) {
    int budget = 50000;
    collect(d, "retry_policy", "", parts.routes, 0, budget);
    budget = 50000;
    collect(d, "circuit_breakers", "", parts.breakers, 0, budget);
    budget = 50000;
    collect(d, "routes", "", parts.vhosts, 0, budget);
    if (d.IsMap() && !get(d, "retry_policy") &&
        (get(d, "num_retries") || get(d, "retry_on") || get(d, "per_try_timeout") ||
         get(d, "retry_back_off")))
      parts.bare.push_back({d, ""});
    if (d.IsMap() && !get(d, "circuit_breakers") &&
        (get(d, "thresholds") || get(d, "retry_budget")))
      fail(at(r.file, "", d),
           "thresholds/retry_budget must sit under circuit_breakers (cluster.circuit_breakers)");
  }
  return parts;
}

// The retry policy read and the route (or virtual host) it sits in; a bare
// policy is its own route.
struct RetryPolicyAt {
  YAML::Node route = missing(), rp = missing();
  std::string route_key, rp_key;
  YAML::Node vhost = missing();  // the virtual host around the route, when read from one
  std::string vhost_key;
};

// A virtual host's policy is its routes' default: Envoy takes a route's own
// retry_policy and hedge_policy first, else the virtual host's
// (RouteEntryImplBase::buildRetryPolicy, buildHedgePolicy in
// source/common/router/config_impl.cc), and the timeout is the route's
// (RouteAction; a virtual host has none). The first route is read.
// Nodes are rebound with reset(): assigning a YAML::Node that refers to a
// node of the document rewrites that node (the virtual host became its
// route's action, and lost its hedge_policy).
void resolve_virtual_host(RetryPolicyAt& p) {
  YAML::Node routes = get(p.route, "routes");
  if (!routes || !routes.IsSequence()) return;
  for (size_t i = 0; i < routes.size(); ++i) {  // the first route that forwards
    YAML::Node action = get(routes[i], "route");
    if (!action || !action.IsMap()) continue;  // a redirect, a direct response
    p.vhost.reset(p.route);
    p.vhost_key = p.route_key;
    p.route.reset(action);
    p.route_key = join(p.vhost_key, "routes[" + std::to_string(i) + "].route");
    if (YAML::Node own = get(action, "retry_policy")) {
      p.rp.reset(own);
      p.rp_key = join(p.route_key, "retry_policy");
    }
    return;
  }
}

RetryPolicyAt find_retry_policy(const EnvoyParts& parts, const Reader& r) {
  RetryPolicyAt p;
  if (parts.routes.empty()) {
    p.rp.reset(parts.bare.front().map);
    p.route.reset(p.rp);
    return p;
  }
  p.route.reset(parts.routes.front().map);
  p.route_key = parts.routes.front().path;
  p.rp.reset(get(p.route, "retry_policy"));
  p.rp_key = join(p.route_key, "retry_policy");
  // A virtual host's retry_policy applies to its routes; a route's is its own.
  bool vhost = get(p.route, "routes") || get(p.route, "domains");
  if (vhost) resolve_virtual_host(p);
  for (const Found& v : parts.vhosts)  // a route's virtual host: its hedge_policy is the default
    if (!vhost && p.route_key.rfind(join(v.path, "routes["), 0) == 0) {
      p.vhost.reset(v.map);
      p.vhost_key = v.path;
    }
  if (parts.routes.size() > 1)
    r.warn(at(r.file, p.rp_key, p.rp),
           std::to_string(parts.routes.size()) + " retry policies in this file; " +
               (vhost ? "the first route's is read (its own, else its virtual host's)"
                      : "the first is read"));
  if (!vhost || p.vhost) check_route_fields(r, p.route, p.route_key);
  return p;
}

// Route timeout: the whole request, all retries included. Returns it (0: none).
double read_route_timeout(const RetryPolicyAt& p, Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node& route = p.route;
  const std::string& route_key = p.route_key;
  YAML::Node to = get(route, "timeout");
  double deadline = kEnvoyRouteTimeout;
  std::string deadline_from;
  if (to) {
    deadline = envoy_duration(r, to, join(route_key, "timeout"));
    deadline_from = at(r.file, join(route_key, "timeout"), to).text() + ": route timeout " +
                    (deadline == 0 ? "0s (disabled)" : human_duration(deadline)) +
                    ", all attempts included";
  } else {
    deadline_from = at(r.file, route_key, route).text() +
                    ": route timeout left out (Envoy default 15 s, all attempts included)";
  }
  l.deadline_s = deadline;
  l.from["client.deadline_s"] = deadline_from;

  return deadline;
}

// Retries: num_retries, none without retry_on. Returns retry_on.
std::string read_retries(const RetryPolicyAt& p, Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node& rp = p.rp;
  const std::string& rp_key = p.rp_key;
  YAML::Node nr = get(rp, "num_retries");
  long long n = 1;
  if (nr) {
    Where w = at(r.file, join(rp_key, "num_retries"), nr);
    n = wrapped_whole(nr, w, 0, kUint32Max);
    if (n < 0) fail(w, "must be 0 or more");
    l.from["client.retries"] =
        w.text() + ": " + std::to_string(n) + " (retries; " + std::to_string(n + 1) + " attempts)";
  } else {
    l.from["client.retries"] =
        at(r.file, rp_key, rp).text() + ": num_retries left out (Envoy default 1 retry)";
  }
  l.as_written = n;
  l.count_field = "retry_policy.num_retries";
  YAML::Node ro = get(rp, "retry_on");
  std::string retry_on = ro ? text(ro, at(r.file, join(rp_key, "retry_on"), ro)) : "";
  if (retry_on.empty()) {
    r.warn(at(r.file, rp_key, rp), "retry_on is empty: Envoy retries nothing; read as 0 retries");
    n = 0;
    l.from["client.retries"] = at(r.file, rp_key, rp).text() + ": no retry_on, so no retries";
  }
  // Envoy runs any UInt32Value count (RetryStateImpl's retries_remaining_).
  l.retries = model_retries(n, at(r.file, join(rp_key, "num_retries"), nr), r);

  return retry_on;
}

// Which error answers retry_on (and retriable_status_codes) retries.
void read_retried_answers(const RetryPolicyAt& p, const std::string& retry_on, Reader& r) {
  LayerPolicy& l = r.layer;
  std::vector<long long> codes;
  YAML::Node sc = get(p.rp, "retriable_status_codes");
  std::string sc_key = join(p.rp_key, "retriable_status_codes");
  if (sc) {
    if (!sc.IsSequence()) fail(at(r.file, sc_key, sc), "must be a list of HTTP status codes");
    for (size_t i = 0; i < sc.size(); ++i)
      codes.push_back(
          whole(sc[i], at(r.file, sc_key + "[" + std::to_string(i) + "]", sc[i]), 100, 599));
  }
  l.retried_answers = envoy::retried_answers(retry_on, codes);
  YAML::Node ro = get(p.rp, "retry_on");
  l.from["client.retry_on"] =
      (ro ? at(r.file, join(p.rp_key, "retry_on"), ro) : at(r.file, p.rp_key, p.rp)).text() +
      ": '" + retry_on + "'" + (sc ? " with retriable_status_codes" : "") + " retries " +
      envoy::answers_in_words(l.retried_answers) +
      " (RetryStateImpl::wouldRetryFromHeaders, "
      "wouldRetryFromReset)";
}

// Per-try timeout, and whether a timed-out attempt is retried.
void read_per_try_timeout(const RetryPolicyAt& p, const std::string& retry_on, double deadline,
                          Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node& rp = p.rp;
  const std::string& rp_key = p.rp_key;
  YAML::Node ro = get(rp, "retry_on");
  YAML::Node pt = get(rp, "per_try_timeout");
  std::string pt_key = join(rp_key, "per_try_timeout");
  double per_try = pt ? envoy_duration(r, pt, pt_key) : 0;
  // An attempt whose upstream sends nothing for per_try_idle_timeout ends as a
  // per-try timeout does (Filter::onPerTryIdleTimeout calls
  // onPerTryTimeoutCommon): the model's attempts send nothing before their
  // answer, so the shorter of the two bounds an attempt.
  YAML::Node idle = get(rp, "per_try_idle_timeout");
  const double idle_s = idle ? envoy_duration(r, idle, join(rp_key, "per_try_idle_timeout")) : 0;
  if (idle_s > 0 && (!(per_try > 0) || idle_s < per_try)) {
    l.notes.push_back(at(r.file, join(rp_key, "per_try_idle_timeout"), idle).text() + ": " +
                      human_duration(idle_s) +
                      " with no byte from the upstream ends the attempt as a per-try timeout; "
                      "read as the per-try timeout (an attempt sends nothing before its answer)");
    pt.reset(idle);
    pt_key = join(rp_key, "per_try_idle_timeout");
    per_try = idle_s;
  }
  if (pt && per_try > 0) {
    l.per_try_timeout_s = per_try;
    l.retry_on_timeout = envoy::retries_timeouts(retry_on);
    l.from["client.timeout_s"] = at(r.file, pt_key, pt).text() + ": " + human_duration(per_try);
    l.from["client.retry_on_timeout"] =
        l.retry_on_timeout
            ? at(r.file, pt_key, pt).text() + ": set, and retry_on '" + retry_on +
                  "' retries a timed-out attempt"
            : at(r.file, join(rp_key, "retry_on"), ro).text() + ": '" + retry_on +
                  "' has none of 5xx, gateway-error, reset: a timed-out attempt is not retried";
    if (deadline > 0 && per_try > deadline)
      l.notes.push_back("per_try_timeout " + human_duration(per_try) +
                        " is longer than the route timeout " + human_duration(deadline));
  } else {
    l.per_try_timeout_unset = true;
    l.timeouts_retriable = envoy::retries_timeouts(retry_on);
    l.retry_on_timeout = false;
    l.from["client.retry_on_timeout"] =
        at(r.file, rp_key, rp).text() +
        ": per_try_timeout unset, so an attempt runs until the route timeout and a timed-out "
        "attempt is never retried";
    if (deadline > 0) {
      l.per_try_timeout_s = deadline;
      l.from["client.timeout_s"] = at(r.file, rp_key, rp).text() +
                                   ": per_try_timeout unset; an attempt may take the whole route "
                                   "timeout " +
                                   human_duration(deadline);
    } else {
      l.notes.push_back(
          "no per_try_timeout and no route timeout: attempts never time out; "
          "client.timeout_s is not imported");
    }
  }
}

// Where lint's file edits go: num_retries and retry_on as written, and the
// first field of a block-style retry_policy (a new field goes above it).
void record_spots(const RetryPolicyAt& p, LayerPolicy& l) {
  if (!p.rp.IsMap() || p.rp.begin() == p.rp.end()) return;
  auto spot = [](const YAML::Node& n) { return LayerPolicy::Spot{n.Mark().line, n.Mark().column}; };
  if (p.rp.Style() != YAML::EmitterStyle::Flow)
    l.spots["retry_policy.first_key"] = spot(p.rp.begin()->first);
  for (const char* field : {"num_retries", "retry_on", "per_try_timeout"})
    if (YAML::Node n = get(p.rp, field); n && n.IsScalar())
      l.spots[field] = spot(n);
    else if (n)  // written as an object: no edit may add it again
      l.spots[std::string(field) + ".not_scalar"] = spot(n);
}

// hedge_policy (route or virtual host): with hedge_on_per_try_timeout, a
// per-try timeout sends the next attempt after the backoff and keeps the slow
// one running, whatever retry_on says (router.cc Filter::onSoftPerTryTimeout,
// RetryStateImpl::shouldHedgeRetryPerTryTimeout); the first good answer wins
// and the others are reset (Filter::resetOtherUpstreams). initial_requests
// and additional_request_chance are not implemented by Envoy (marked so in
// route_components.proto; the router never reads them).
void read_hedge_policy(const RetryPolicyAt& p, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node hp = get(p.route, "hedge_policy");
  std::string key = join(p.route_key, "hedge_policy");
  if (!hp && p.vhost) {  // the route's own first, else its virtual host's
    hp = get(p.vhost, "hedge_policy");
    key = join(p.vhost_key, "hedge_policy");
  }
  if (!hp) return;
  if (!hp.IsMap()) fail(at(r.file, key, hp), "must be an object");
  r.check_fields(
      hp, key, {"initial_requests", "additional_request_chance", "hedge_on_per_try_timeout"}, true);
  for (const char* unused : {"initial_requests", "additional_request_chance"})
    if (YAML::Node n = get(hp, unused))
      r.warn(at(r.file, join(key, unused), n),
             std::string(unused) +
                 " is not implemented by Envoy (the router never reads it): "
                 "one request is sent first");
  YAML::Node on = get(hp, "hedge_on_per_try_timeout");
  if (!on) return;
  Where where = at(r.file, join(key, "hedge_on_per_try_timeout"), on);
  if (!boolean(on, where)) return;
  std::string at_on = where.text();
  if (l.per_try_timeout_unset || l.retries <= 0) {
    l.notes.push_back(at_on + ": no per_try_timeout or no retries, so nothing is hedged");
    return;
  }
  l.hedging = Hedging::envoy;
  l.retry_on_timeout = true;
  l.from["client.hedging"] =
      at_on +
      ": a per-try timeout sends the next attempt after the backoff and keeps the slow "
      "one; the first good answer wins";
  l.from["client.retry_on_timeout"] =
      at_on + ": a per-try timeout is hedged whatever retry_on says";
  l.notes.push_back(at_on +
                    ": hedging, modelled by the agent engine (client.hedging envoy); the fluid "
                    "engine reads it as retries after the per-try timeout");
}

// Backoff: a window from base_interval doubling to max_interval, delay
// uniform in [0, window): full jitter, multiplier 2.
void read_backoff(const RetryPolicyAt& p, Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node& rp = p.rp;
  const std::string& rp_key = p.rp_key;
  YAML::Node bo = get(rp, "retry_back_off");
  std::string bo_key = join(rp_key, "retry_back_off");
  double base = kEnvoyBaseInterval, cap = 0;
  YAML::Node bi = missing(), mi = missing();
  if (bo) {
    if (!bo.IsMap()) fail(at(r.file, bo_key, bo), "must be an object with base_interval");
    r.check_fields(bo, bo_key, {"base_interval", "max_interval"}, true);
    bi = get(bo, "base_interval");
    mi = get(bo, "max_interval");
    if (!bi) fail(at(r.file, bo_key, bo), "base_interval is required by Envoy");
    if (envoy_seconds(r, bi, bo_key + ".base_interval") <= 0)
      fail(at(r.file, bo_key + ".base_interval", bi), "must be above 0");
    // route_components.proto: "Values less than 1 ms are rounded up to 1 ms."
    base = std::max(0.001, envoy_duration(r, bi, bo_key + ".base_interval"));
  }
  // A window above the key's range never binds in any incident the model runs.
  cap = std::min(10 * base, key_or_throw("client.backoff.cap_s").max);
  if (mi) {
    if (envoy_seconds(r, mi, bo_key + ".max_interval") <= 0)
      fail(at(r.file, bo_key + ".max_interval", mi), "must be above 0");
    // RetryPolicyImpl rounds a max_interval below 1 ms up to 1 ms as well.
    cap = std::max(0.001, envoy_duration(r, mi, bo_key + ".max_interval"));
    if (cap < base)
      fail(at(r.file, bo_key + ".max_interval", mi),
           human_duration(cap) + " is below base_interval " + human_duration(base) +
               "; Envoy rejects it");
  }
  l.backoff.base_s = base;
  l.backoff.multiplier = 2;
  l.backoff.cap_s = cap;
  l.backoff.jitter = Jitter::full;
  l.from["client.backoff.base_s"] =
      bi ? at(r.file, bo_key + ".base_interval", bi).text() + ": " + human_duration(base)
         : at(r.file, rp_key, rp).text() + ": retry_back_off left out (Envoy default 25 ms)";
  l.from["client.backoff.multiplier"] = "Envoy doubles the backoff window each retry";
  l.from["client.backoff.cap_s"] =
      mi ? at(r.file, bo_key + ".max_interval", mi).text() + ": " + human_duration(cap)
         : "max_interval left out: Envoy uses 10 x base_interval = " + human_duration(cap);
  l.from["client.backoff.jitter"] = "Envoy draws each delay uniformly in [0, window)";
}

// rate_limited_retry_back_off: a retried answer carrying one of its
// reset_headers (Retry-After, X-RateLimit-Reset) waits that interval, drawn
// in [interval, 1.5 x interval); an interval above max_interval (default
// 300 s) keeps the regular backoff (RetryStateImpl::parseResetInterval and
// nextRetryTime, source/common/router/retry_state_impl.cc).
void read_rate_limited_back_off(const RetryPolicyAt& p, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node rl = get(p.rp, "rate_limited_retry_back_off");
  if (!rl) return;
  std::string key = join(p.rp_key, "rate_limited_retry_back_off");
  if (!rl.IsMap()) fail(at(r.file, key, rl), "must be an object");
  r.check_fields(rl, key, {"reset_headers", "max_interval"}, true);
  YAML::Node headers = get(rl, "reset_headers");
  if (!headers || !headers.IsSequence() || headers.size() == 0)
    fail(at(r.file, key, rl), "reset_headers: Envoy needs at least one header");
  l.pushback = Pushback::envoy;
  l.from["client.pushback"] = at(r.file, key, rl).text() +
                              ": a retried answer's reset header is waited, in [interval, 1.5 x "
                              "interval)";
  l.pushback_max_s = 300;
  l.from["client.pushback_max_s"] = key + ".max_interval left out (Envoy's default 300 s)";
  if (YAML::Node mi = get(rl, "max_interval")) {
    l.pushback_max_s = envoy_duration(r, mi, join(key, "max_interval"));
    l.from["client.pushback_max_s"] =
        at(r.file, join(key, "max_interval"), mi).text() + ": " + human_duration(l.pushback_max_s);
  }
}

// Maps whose @type ends with `suffix`, bounded as collect is.
void collect_typed(const YAML::Node& n, const std::string& path, const std::string& suffix,
                   std::vector<Found>& out, int depth, int& budget) {
  if (depth > 40 || --budget < 0) return;
  if (n.IsMap()) {
    YAML::Node type = n["@type"];
    if (type && type.IsScalar() && type.Scalar().size() >= suffix.size() &&
        type.Scalar().compare(type.Scalar().size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back({n, path});
    for (const auto& kv : n) {
      std::string k = key_of(kv.first);
      collect_typed(kv.second, path.empty() ? k : path + "." + k, suffix, out, depth + 1, budget);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i)
      collect_typed(n[i], path + "[" + std::to_string(i) + "]", suffix, out, depth + 1, budget);
  }
}

}  // namespace

// Maps that are an HTTPFault (by their @type), bounded as collect is.
void collect_faults(const YAML::Node& n, const std::string& path, std::vector<Found>& out,
                    int depth, int& budget) {
  collect_typed(n, path, "envoy.extensions.filters.http.fault.v3.HTTPFault", out, depth, budget);
}

// The fault filter of the route read: the route's own typed_per_filter_config
// entry, else the first filter configuration of the file.
void read_route_fault(const std::vector<YAML::Node>& docs, const RetryPolicyAt& p, Reader& r) {
  std::vector<Found> faults;
  for (const auto& d : docs) {
    int budget = 50000;
    collect_faults(d, "", faults, 0, budget);
  }
  if (faults.empty()) return;
  const Found* pick = &faults.front();
  for (const Found& f : faults)
    if (!p.route_key.empty() && f.path.rfind(p.route_key + ".", 0) == 0) {
      pick = &f;
      break;
    }
  if (faults.size() > 1)
    r.warn(at(r.file, pick->path, pick->map),
           std::to_string(faults.size()) + " fault filter configurations; this one is read");
  envoy::read_fault(pick->map, pick->path, r);
}

namespace {

// A Percent ({value: 25}) as a share.
double percent_share(const YAML::Node& n, const Where& w) {
  const double v = wrapped_number(n, w);
  if (!(v >= 0 && v <= 100)) fail(w, number_text(v) + " is out of range; allowed 0 to 100");
  return v / 100;
}

// The gradient controller's fields (the v3 GradientControllerConfig proto's)
// and the keys they become.
enum class FieldKind { whole, percent, duration };
struct FieldRule {
  const char* field;
  const char* key;
  FieldKind kind;
  const char* shown;
};
constexpr FieldRule kTopFields[] = {
    {"sample_aggregate_percentile", "server.concurrency_percentile", FieldKind::percent,
     "the latency percentile the limit follows"},
};
constexpr FieldRule kLimitFields[] = {
    {"max_concurrency_limit", "server.max_concurrency", FieldKind::whole, "the highest limit"},
    {"concurrency_update_interval", "server.concurrency_update_s", FieldKind::duration,
     "the limit's update"},
};
constexpr FieldRule kMinRttFields[] = {
    {"interval", "server.min_rtt_interval_s", FieldKind::duration,
     "minRTT measured again every interval"},
    {"request_count", "server.min_rtt_requests", FieldKind::whole,
     "answers per minRTT measurement"},
    {"jitter", "server.min_rtt_jitter", FieldKind::percent, "jitter of the interval"},
    {"min_concurrency", "server.min_concurrency", FieldKind::whole, "the lowest limit"},
    {"buffer", "server.min_rtt_buffer", FieldKind::percent, "latency buffer over minRTT"},
};

// The fields of `table` that `m` sets, each as its key with where it was read.
void read_fields(const YAML::Node& m, const std::string& mk, std::span<const FieldRule> table,
                 Reader& r) {
  for (const FieldRule& f : table) {
    YAML::Node n = get(m, f.field);
    if (!n) continue;
    const std::string key = mk + "." + f.field;
    Where w = at(r.file, key, n);
    const double v = f.kind == FieldKind::whole     ? double(wrapped_whole(n, w, 1, 1000000))
                     : f.kind == FieldKind::percent ? percent_share(n, w)
                                                    : envoy_duration(r, n, key);
    r.layer.extra[f.key] = v;  // the key's own range is checked when the keys apply
    r.layer.from[f.key] = w.text() + ": " + f.shown;
  }
}

// A cluster's outlier_detection (config.cluster.v3.OutlierDetection) and the
// keys it becomes; max_ejection_percent (0 allowed) is read on its own.
constexpr FieldRule kOutlierFields[] = {
    {"consecutive_5xx", "client.outlier_5xx", FieldKind::whole, "5xx in a row eject a host"},
    {"interval", "client.outlier_interval_s", FieldKind::duration,
     "how often ejected hosts are let back"},
    {"base_ejection_time", "client.outlier_ejection_s", FieldKind::duration,
     "a first ejection's length"},
    {"max_ejection_time", "client.outlier_max_ejection_s", FieldKind::duration,
     "the longest ejection"},
};

// The fields of OutlierDetection Envoy knows, modelled or not.
void check_outlier_fields(const YAML::Node& od, const std::string& key, const Reader& r) {
  r.check_fields(od, key,
                 {"consecutive_5xx",
                  "interval",
                  "base_ejection_time",
                  "max_ejection_percent",
                  "enforcing_consecutive_5xx",
                  "enforcing_success_rate",
                  "success_rate_minimum_hosts",
                  "success_rate_request_volume",
                  "success_rate_stdev_factor",
                  "consecutive_gateway_failure",
                  "enforcing_consecutive_gateway_failure",
                  "split_external_local_origin_errors",
                  "consecutive_local_origin_failure",
                  "enforcing_consecutive_local_origin_failure",
                  "enforcing_local_origin_success_rate",
                  "failure_percentage_threshold",
                  "enforcing_failure_percentage",
                  "enforcing_failure_percentage_local_origin",
                  "failure_percentage_minimum_hosts",
                  "failure_percentage_request_volume",
                  "max_ejection_time",
                  "max_ejection_time_jitter",
                  "successful_active_health_check_uneject_host",
                  "monitors",
                  "always_eject_one_host"},
                 true);
}

// The cluster's static endpoints (load_assignment) as server.hosts.
void read_endpoints(const YAML::Node& cluster, const std::string& ck, Reader& r) {
  YAML::Node la = get(cluster, "load_assignment");
  YAML::Node eps = la && la.IsMap() ? get(la, "endpoints") : missing();
  if (!eps || !eps.IsSequence()) return;
  size_t hosts = 0;
  for (size_t i = 0; i < eps.size(); ++i)
    if (YAML::Node lb = eps[i].IsMap() ? get(eps[i], "lb_endpoints") : missing();
        lb && lb.IsSequence())
      hosts += lb.size();
  if (hosts < 2) return;
  const size_t kept = std::min<size_t>(hosts, 100);
  r.layer.extra["server.hosts"] = double(kept);
  r.layer.from["server.hosts"] = at(r.file, ck + ".load_assignment", la).text() + ": " +
                                 std::to_string(hosts) + " endpoints" +
                                 (kept < hosts ? " (the model runs at most 100)" : "");
}

// max_ejection_percent and the load balancer's healthy_panic_threshold.
void read_ejection_limits(const YAML::Node& cluster, const YAML::Node& od, const std::string& ok,
                          const std::string& ck, Reader& r) {
  LayerPolicy& l = r.layer;
  if (YAML::Node m = get(od, "max_ejection_percent")) {
    Where w = at(r.file, ok + ".max_ejection_percent", m);
    l.extra["client.outlier_max_percent"] = double(wrapped_whole(m, w, 0, 100));
    l.from["client.outlier_max_percent"] = w.text() + ": the most hosts ejected at once, percent";
  } else {
    l.extra["client.outlier_max_percent"] = 10.0;
    l.from["client.outlier_max_percent"] =
        at(r.file, ok, od).text() + ": max_ejection_percent left out (Envoy default 10)";
  }
  YAML::Node lb = get(cluster, "common_lb_config");
  if (YAML::Node p = lb && lb.IsMap() ? get(lb, "healthy_panic_threshold") : missing()) {
    Where w = at(r.file, ck + ".common_lb_config.healthy_panic_threshold", p);
    l.extra["client.outlier_panic_percent"] = 100 * percent_share(p, w);
    l.from["client.outlier_panic_percent"] = w.text() + ": below it every host takes traffic";
  }
}

// A cluster's outlier detection: consecutive 5xx ejection (the only kind
// modelled), its timing and limits, and the cluster's endpoints as hosts.
void read_outlier_detection(const std::vector<YAML::Node>& docs, Reader& r) {
  std::vector<Found> found;
  for (const auto& d : docs) {
    int budget = 50000;
    collect(d, "outlier_detection", "", found, 0, budget);
  }
  if (found.empty()) return;
  const Found& f = found.front();
  if (found.size() > 1)
    r.warn(at(r.file, f.path, f.map),
           std::to_string(found.size()) + " clusters with outlier_detection; the first is read");
  const std::string ok = join(f.path, "outlier_detection");
  YAML::Node od = get(f.map, "outlier_detection");
  if (!od.IsMap())
    fail(at(r.file, ok, od), "must be an object (config.cluster.v3.OutlierDetection)");
  check_outlier_fields(od, ok, r);
  LayerPolicy& l = r.layer;
  l.extra["client.outlier_5xx"] = 5.0;
  l.from["client.outlier_5xx"] = at(r.file, ok, od).text() + ": consecutive_5xx (Envoy default 5)";
  read_fields(od, ok, kOutlierFields, r);
  if (YAML::Node e = get(od, "enforcing_consecutive_5xx");
      e && wrapped_whole(e, at(r.file, ok + ".enforcing_consecutive_5xx", e), 0, 100) == 0) {
    l.extra["client.outlier_5xx"] = 0.0;
    l.from["client.outlier_5xx"] =
        at(r.file, ok + ".enforcing_consecutive_5xx", e).text() + ": 0, never ejects on 5xx";
  }
  read_ejection_limits(f.map, od, ok, f.path, r);
  read_endpoints(f.map, f.path, r);
  l.notes.push_back(ok +
                    ": success-rate and failure-percentage ejection are not modelled (Envoy "
                    "enforces success rate from 5 hosts with 100 requests each per interval)");
}

// Envoy's adaptive concurrency filter, when the file configures one (the
// server's own proxy): server.adaptive_concurrency and its gradient's keys.
void read_adaptive_concurrency(const std::vector<YAML::Node>& docs, Reader& r) {
  std::vector<Found> found;
  for (const auto& d : docs) {
    int budget = 50000;
    collect_typed(d, "",
                  "envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency",
                  found, 0, budget);
  }
  if (found.empty()) return;
  const Found& f = found.front();
  if (found.size() > 1)
    r.warn(at(r.file, f.path, f.map),
           std::to_string(found.size()) + " adaptive concurrency filters; the first is read");
  r.check_fields(f.map, f.path, {"@type", "gradient_controller_config", "enabled"}, true);
  if (YAML::Node e = get(f.map, "enabled");
      e && get(e, "default_value") &&
      !boolean(get(e, "default_value"), at(r.file, f.path + ".enabled", e))) {
    r.layer.notes.push_back(f.path + ": the adaptive concurrency filter is disabled");
    return;
  }
  const std::string gk = join(f.path, "gradient_controller_config");
  YAML::Node g = get(f.map, "gradient_controller_config");
  if (!g || !g.IsMap()) fail(at(r.file, gk, g), "must be an object (the gradient controller)");
  r.layer.extra["server.adaptive_concurrency"] = std::string("envoy");
  r.layer.from["server.adaptive_concurrency"] =
      at(r.file, f.path, f.map).text() + ": Envoy's adaptive concurrency filter";
  r.check_fields(g, gk,
                 {"sample_aggregate_percentile", "concurrency_limit_params", "min_rtt_calc_params"},
                 true);
  read_fields(g, gk, kTopFields, r);
  if (YAML::Node c = get(g, "concurrency_limit_params")) {
    const std::string ck = gk + ".concurrency_limit_params";
    r.check_fields(c, ck, {"max_concurrency_limit", "concurrency_update_interval"}, true);
    read_fields(c, ck, kLimitFields, r);
  }
  if (YAML::Node m = get(g, "min_rtt_calc_params")) {
    const std::string mk = gk + ".min_rtt_calc_params";
    r.check_fields(
        m, mk, {"interval", "fixed_value", "request_count", "jitter", "min_concurrency", "buffer"},
        true);
    if (get(m, "fixed_value"))
      r.layer.notes.push_back(mk + ".fixed_value: a fixed minRTT is not modelled; it is measured");
    read_fields(m, mk, kMinRttFields, r);
  }
}

}  // namespace

void read_envoy(const std::vector<YAML::Node>& docs, Reader& r) {
  LayerPolicy& l = r.layer;
  EnvoyParts parts = collect_parts(docs, r);
  bool has_route = !parts.routes.empty() || !parts.bare.empty();
  l.format = has_route && !parts.breakers.empty() ? "Envoy route + cluster"
             : has_route                          ? "Envoy route"
                                                  : "Envoy cluster";
  read_budget(parts.breakers, r);
  read_adaptive_concurrency(docs, r);
  read_outlier_detection(docs, r);
  if (!has_route) {
    if (parts.breakers.empty() && !r.layer.extra.contains("client.outlier_5xx"))
      fail({r.file, "", docs.empty() ? 0 : line_of(docs[0])},
           "no Envoy retry_policy or circuit_breakers found");
    return;
  }
  l.has_retry_policy = true;
  l.counting = "retries";
  if (parts.breakers.empty()) {
    // No cluster given: the cluster the route sends to has Envoy's defaults
    // (a cluster file read with this one replaces them).
    set_retry_cap(l, kEnvoyDefaultMaxRetries,
                  r.file +
                      ": no cluster circuit_breakers given, so max_retries keeps Envoy's "
                      "default 3");
    l.budget_from = l.from["client.budget.kind"];
  }
  RetryPolicyAt p = find_retry_policy(parts, r);
  if (YAML::Node c = get(p.route, "cluster"); c && c.IsScalar()) l.host = c.Scalar();
  const YAML::Node& rp = p.rp;
  if (!rp.IsMap()) fail(at(r.file, p.rp_key, rp), "must be an object");
  // A retry policy alone may carry its route's timeout; RetryPolicy itself
  // has no such field, and Envoy rejects one under a route.
  if (YAML::Node t = get(rp, "timeout"); t && !p.route.is(p.rp))
    fail(at(r.file, join(p.rp_key, "timeout"), t),
         "RetryPolicy has no timeout field, and Envoy rejects the route; the whole request's "
         "limit is the route's own timeout (" +
             join(p.route_key, "timeout") + ")");
  r.check_fields(
      rp, p.rp_key,
      {"retry_on", "num_retries", "per_try_timeout", "per_try_idle_timeout", "retry_priority",
       "retry_host_predicate", "retry_options_predicates", "host_selection_retry_max_attempts",
       "retriable_status_codes", "retry_back_off", "rate_limited_retry_back_off",
       "retriable_headers", "retriable_request_headers", "timeout"},
      true);
  double deadline = read_route_timeout(p, r);
  std::string retry_on = read_retries(p, r);
  read_retried_answers(p, retry_on, r);
  read_per_try_timeout(p, retry_on, deadline, r);
  read_hedge_policy(p, r);
  record_spots(p, l);
  read_backoff(p, r);
  read_rate_limited_back_off(p, r);
  read_route_fault(docs, p, r);
  if (get(rp, "retry_host_predicate"))
    l.notes.push_back("retry_host_predicate: retries go to other hosts; the model has one queue");
}

}  // namespace retrystorm::configs
