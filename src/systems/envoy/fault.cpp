// Envoy's fault filter, read as the incident on a call (docs/graph.md, "A
// fault on a call"). envoyproxy/envoy
// source/extensions/filters/http/fault/fault_filter.cc, FaultFilter::
// decodeHeaders: maybeSetupDelay first, then maybeDoAbort (after the delay,
// from postDelayInjection), each drawn on its own percentage; the filter sits
// before the router, so the router's retries never pass through it.
// source/extensions/filters/common/fault/fault_config.cc: a delay or abort
// without `percentage` has the proto's default, 0 (it never fires).
#include "systems/envoy/fault.hpp"

#include <algorithm>

#include "text/number.hpp"
#include "text/units.hpp"

namespace retrystorm::configs::envoy {

namespace {

// A FractionalPercent: numerator over HUNDRED (the default), TEN_THOUSAND or
// MILLION; above 1 it fires always.
double fraction(const YAML::Node& p, const std::string& key, Reader& r) {
  if (!p) return 0;
  if (!p.IsMap()) fail(at(r.file, key, p), "must be an object {numerator, denominator}");
  r.check_fields(p, key, {"numerator", "denominator"}, true);
  YAML::Node n = proto_field(p, "numerator");
  double numerator =
      n ? static_cast<double>(whole(n, at(r.file, key + ".numerator", n), 0, kUint32Max)) : 0;
  double denominator = 100;
  if (YAML::Node d = proto_field(p, "denominator")) {
    std::string name = text(d, at(r.file, key + ".denominator", d));
    if (name == "HUNDRED" || name == "0")
      denominator = 100;
    else if (name == "TEN_THOUSAND" || name == "1")
      denominator = 10000;
    else if (name == "MILLION" || name == "2")
      denominator = 1e6;
    else
      fail(at(r.file, key + ".denominator", d),
           "'" + name + "' is not a denominator; allowed HUNDRED, TEN_THOUSAND, MILLION");
  }
  if (numerator > denominator)
    r.warn(at(r.file, key, p), "above 100%: Envoy injects it into every request");
  return std::min(1.0, numerator / denominator);
}

std::string share_text(double share) {
  return number_text(share * 100) + "% of requests";
}

void read_delay(const YAML::Node& d, const std::string& key, RouteFault& f, Reader& r) {
  if (!d.IsMap()) fail(at(r.file, key, d), "must be an object");
  r.check_fields(d, key, {"fixed_delay", "header_delay", "percentage", "type"}, true);
  YAML::Node fixed = proto_field(d, "fixed_delay");
  if (!fixed) {
    r.layer.notes.push_back(key +
                            ": a delay the request's header sets (header_delay) is not "
                            "imported; give fixed_delay");
    return;
  }
  f.delay_s = duration(fixed, at(r.file, key + ".fixed_delay", fixed), {true, false, false});
  f.delay_share = fraction(proto_field(d, "percentage"), key + ".percentage", r);
  Where w = at(r.file, key, d);
  f.from["incident.delay_s"] = w.text() + ": fixed_delay " + human_duration(f.delay_s);
  f.from["incident.delay_share"] =
      proto_field(d, "percentage") ? w.text() + ": percentage, " + share_text(f.delay_share)
                                   : w.text() + ": percentage left out: Envoy delays no request";
}

void read_abort(const YAML::Node& a, const std::string& key, RouteFault& f, Reader& r) {
  if (!a.IsMap()) fail(at(r.file, key, a), "must be an object");
  r.check_fields(a, key, {"http_status", "grpc_status", "header_abort", "percentage"}, true);
  Where w = at(r.file, key, a);
  std::string note;
  std::optional<FailureClass> answer;
  if (YAML::Node h = proto_field(a, "http_status"))
    answer = http_abort_class(whole(h, at(r.file, key + ".http_status", h), 200, 599), note);
  else if (YAML::Node g = proto_field(a, "grpc_status"))
    answer = grpc_abort_class(text(g, at(r.file, key + ".grpc_status", g)), note);
  else
    note = "an abort the request's header sets (header_abort) is not imported";
  if (!answer) {
    r.warn(w, note + "; the abort is left out");
    return;
  }
  f.abort_status = *answer;
  f.abort_share = fraction(proto_field(a, "percentage"), key + ".percentage", r);
  f.from["incident.abort_status"] = w.text() + ": " + note;
  f.from["incident.abort_share"] =
      proto_field(a, "percentage") ? w.text() + ": percentage, " + share_text(f.abort_share)
                                   : w.text() + ": percentage left out: Envoy aborts no request";
}

}  // namespace

std::optional<FailureClass> http_abort_class(long long status, std::string& note) {
  std::string code = std::to_string(status);
  if (status == 503 || status == 429) {
    note = "answers " + code;
    return status == 503 ? FailureClass::http_503 : FailureClass::http_429;
  }
  if (status >= 500 && status <= 599) {
    note = "answers " + code +
           ", read as 503, the model's server error (a policy that retries by code, or "
           "gateway-error, which is 502, 503 and 504, may treat " +
           code + " differently)";
    return FailureClass::http_503;
  }
  note = "answers " + code + ", which no retry policy of the model retries or counts as overload";
  return std::nullopt;
}

std::optional<FailureClass> grpc_abort_class(const std::string& status, std::string& note) {
  if (status == "UNAVAILABLE" || status == "14") {
    note = "answers gRPC UNAVAILABLE, read as 503 (the status gRPC policies retry)";
    return FailureClass::http_503;
  }
  if (status == "RESOURCE_EXHAUSTED" || status == "8") {
    note = "answers gRPC RESOURCE_EXHAUSTED, read as 429 (throttling)";
    return FailureClass::http_429;
  }
  note = "answers gRPC " + status + ", a status the model has no class for";
  return std::nullopt;
}

void read_fault(const YAML::Node& fault, const std::string& key, Reader& r) {
  if (!fault.IsMap()) fail(at(r.file, key, fault), "must be an object");
  r.check_fields(
      fault, key,
      {"@type", "delay", "abort", "upstream_cluster", "headers", "downstream_nodes",
       "max_active_faults", "response_rate_limit", "delay_percent_runtime", "abort_percent_runtime",
       "delay_duration_runtime", "abort_http_status_runtime", "max_active_faults_runtime",
       "response_rate_limit_percent_runtime", "abort_grpc_status_runtime",
       "disable_downstream_cluster_stats", "filter_metadata"},
      true);
  RouteFault f;
  if (YAML::Node d = proto_field(fault, "delay")) read_delay(d, key + ".delay", f, r);
  if (YAML::Node a = proto_field(fault, "abort")) read_abort(a, key + ".abort", f, r);
  for (const char* limit : {"headers", "upstream_cluster", "downstream_nodes"})
    if (proto_field(fault, limit))
      r.layer.notes.push_back(key + "." + limit +
                              ": the fault applies only to the requests it matches; the model "
                              "faults every request of the call");
  if (proto_field(fault, "max_active_faults"))
    r.layer.notes.push_back(key +
                            ".max_active_faults: a cap on faults in progress is not modelled");
  if (f.empty()) {
    r.warn(at(r.file, key, fault), "the fault injects nothing (no delay or abort that fires)");
    return;
  }
  keep_fault(f, key, r);
}

void keep_fault(const RouteFault& f, const std::string& key, Reader& r) {
  r.layer.fault = f;
  r.layer.notes.push_back(key +
                          ": a fault injection; `import --mesh` runs it as the incident on its "
                          "call (docs/graph.md, \"A fault on a call\"), a one-dependency "
                          "import leaves it out");
}

}  // namespace retrystorm::configs::envoy
