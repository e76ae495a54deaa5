// Linkerd: ServiceProfile (routes[].isRetryable/timeout, retryBudget) or the
// annotations of Linkerd 2.16+ (retry.linkerd.io/*, timeout.linkerd.io/*).
#include "io/configs/readers.hpp"

namespace retrystorm::configs {

namespace {

const DurationRules kGo{false, false, true};
// Linkerd sets no retry count for ServiceProfile routes: the budget limits
// retries. The model needs a number; this one lets the budget bind first.
constexpr int kProfileRetries = 10;

// Linkerd retries at once in both forms: no backoff to read.
void retry_at_once(LayerPolicy& l) {
  l.base_s = 0;
  l.cap_s = 0;
  l.multiplier = 2;
  l.jitter = "none";
  l.from["client.backoff.base_s"] = "Linkerd retries at once, without backoff";
  l.from["client.backoff.cap_s"] = l.from["client.backoff.multiplier"] =
      l.from["client.backoff.jitter"] = "Linkerd has no retry backoff";
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

  double timeout = 10;
  if (route && route["timeout"]) {
    Where w = at(r.file, rk + ".timeout", route["timeout"]);
    timeout = duration(route["timeout"], w, kGo);
    l.from["client.deadline_s"] = w.text() + ": the route timeout, retries included";
  } else {
    l.from["client.deadline_s"] = (route ? at(r.file, rk, route).text() : r.file) +
                                  ": timeout left out (Linkerd default 10 s)";
  }
  l.deadline_s = timeout;
  if (timeout > 0) {
    l.per_try_timeout_s = timeout;
    l.from["client.timeout_s"] =
        "ServiceProfile has no per-attempt timeout: an attempt can "
        "take the route timeout " +
        human_duration(timeout);
  }
  l.retry_on_timeout = false;
  l.from["client.retry_on_timeout"] =
      "ServiceProfile: the route timeout ends the request; a timeout is not retried";
  retry_at_once(l);

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
    if (ratio < 0) fail(rw, "must be 0 or more");
    Where mw = at(r.file, bk + ".minRetriesPerSecond", rb["minRetriesPerSecond"]);
    min_per_s = static_cast<double>(whole(rb["minRetriesPerSecond"], mw, 0, 1LL << 32));
    Where tw = at(r.file, bk + ".ttl", rb["ttl"]);
    ttl = duration(rb["ttl"], tw, kGo);
    if (ttl <= 0) fail(tw, "must be above 0");
    l.from["client.budget.kind"] = at(r.file, bk, rb).text() + ": Linkerd retry budget";
    l.from["client.budget.ratio"] = rw.text();
    l.from["client.budget.min_retries_per_s"] = mw.text();
    l.from["client.budget.ttl_s"] = tw.text() + ": " + human_duration(ttl);
  } else {
    l.from["client.budget.kind"] =
        r.file + ": no retryBudget: Linkerd's default budget (20%, 10 per second, ttl 10 s)";
    l.from["client.budget.ratio"] = l.from["client.budget.min_retries_per_s"] =
        l.from["client.budget.ttl_s"] = "Linkerd default budget";
  }
  l.budget_kind = "ratio_ttl";
  l.budget["ratio"] = ratio;
  l.budget["min_retries_per_s"] = min_per_s;
  l.budget["ttl_s"] = ttl;
  l.budget_from = l.from["client.budget.kind"];
}

void read_annotations(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  std::string kind = d["kind"] ? d["kind"].Scalar() : "resource";
  l.format = "Linkerd annotations on a " + kind;
  l.has_retry_policy = true;
  l.counting = "retries";
  l.count_field = "retry.linkerd.io/limit";
  const YAML::Node ann = d["metadata"]["annotations"];
  std::string ak = "metadata.annotations";
  auto key = [&](const std::string& name) { return ak + "." + name; };
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
      r.warn(at(r.file, key(k), kv.first),
             "unknown Linkerd annotation, ignored (known: retry.linkerd.io/http, /grpc, /limit, "
             "/timeout; timeout.linkerd.io/request, /response, /idle)");
  }
  long long n = 1;
  if (limit) {
    Where w = at(r.file, key("retry.linkerd.io/limit"), limit);
    n = whole(limit, w, 0, 1LL << 31);
    l.from["client.retries"] =
        w.text() + ": " + std::to_string(n) + " (retries; " + std::to_string(n + 1) + " attempts)";
  } else {
    l.from["client.retries"] = r.file + ": retry.linkerd.io/limit left out (Linkerd default 1)";
  }
  if (!http && !grpc) {
    r.warn(at(r.file, ak, ann),
           "no retry.linkerd.io/http or retry.linkerd.io/grpc: Linkerd retries nothing; read as "
           "0 retries");
    n = 0;
    l.from["client.retries"] = r.file + ": no retry condition annotation, so no retries";
  }
  l.as_written = n;
  if (n > 100) n = 100;
  l.retries = static_cast<int>(n);

  if (request) {
    Where w = at(r.file, key("timeout.linkerd.io/request"), request);
    l.deadline_s = duration(request, w, kGo);
    l.from["client.deadline_s"] = w.text() + ": the whole request, retries included";
  } else {
    l.deadline_s = 0;
    l.from["client.deadline_s"] = r.file + ": no timeout.linkerd.io/request, so no deadline";
  }
  if (per_try) {
    Where w = at(r.file, key("retry.linkerd.io/timeout"), per_try);
    double t = duration(per_try, w, kGo);
    if (t <= 0) fail(w, "must be above 0");
    l.per_try_timeout_s = t;
    l.retry_on_timeout = true;
    l.from["client.timeout_s"] = w.text() + ": " + human_duration(t) + " per attempt";
    l.from["client.retry_on_timeout"] = w.text() + ": an attempt that times out is retried";
  } else {
    l.per_try_timeout_unset = true;
    l.retry_on_timeout = false;
    l.from["client.retry_on_timeout"] =
        r.file + ": no retry.linkerd.io/timeout: a slow attempt is not retried";
    if (l.deadline_s && *l.deadline_s > 0) {
      l.per_try_timeout_s = *l.deadline_s;
      l.from["client.timeout_s"] =
          "no per-attempt timeout: an attempt can take the request timeout";
    }
  }
  retry_at_once(l);
  l.budget_kind = "none";
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
    } else if (!annotated && d["metadata"] && d["metadata"].IsMap() &&
               d["metadata"]["annotations"] && d["metadata"]["annotations"].IsMap()) {
      annotated = &d;
    }
  }
  if (profile) {
    if (annotated)
      r.warn({r.file, "metadata.annotations", line_of(*annotated)},
             "a ServiceProfile exists: Linkerd ignores retry annotations; the profile is read");
    read_profile(*profile, r);
  } else if (annotated) {
    read_annotations(*annotated, r);
  } else {
    fail({r.file, "", docs.empty() ? 0 : line_of(docs[0])},
         "no ServiceProfile and no retry.linkerd.io annotations");
  }
}

}  // namespace retrystorm::configs
