#include "systems/prometheus/call_graph.hpp"

#include <map>
#include <vector>

#include "model/keys.hpp"
#include "systems/prometheus/series.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// The caller and callee labels each mesh puts on its request counters, each
// side a list read in order (the first label a series has names it).
struct PairLabels {
  const char* mesh;
  std::vector<const char*> from;
  std::vector<const char*> to;
  const char* counter;   // the request counter that carries them
  const char* matchers;  // the series of it that count each call once
};

// Istio: istio_requests_total's standard labels (Istio's "Standard Metrics"
// reference): the canonical service (the pods' app label: reviews-v1, -v2 and
// -v3 are one service, "reviews", as the calls file names it), else the
// workload; a caller outside the mesh is "unknown". Linkerd: the proxy's
// outbound request_total, whose owner labels (`deployment`, `statefulset`,
// `daemonset`) come from the pod's owner in Linkerd's scrape configuration and
// `dst_*` from the destination's endpoints, `dst_service` from its Service.
// Istio's destination sidecar reports every caller, the ones outside the mesh
// too; Linkerd's outbound side is the caller's own count.
const std::vector<PairLabels>& pairs() {
  static const std::vector<PairLabels> all = {
      // `!=""`: without the label, a sum by it is one series with none.
      {"Istio",
       {"source_canonical_service"},
       {"destination_canonical_service"},
       "istio_requests_total",
       "reporter=\"destination\",destination_canonical_service!=\"\""},
      {"Istio",
       {"source_workload"},
       {"destination_workload"},
       "istio_requests_total",
       "reporter=\"destination\""},
      {"Linkerd",
       {"deployment", "statefulset", "daemonset"},
       {"dst_deployment", "dst_statefulset", "dst_daemonset", "dst_service"},
       "request_total",
       "direction=\"outbound\""},
  };
  return all;
}

// The value of the first of `names` the series has ("" without any).
std::string first_label(const PromSeries& s, const std::vector<const char*>& names) {
  for (const char* n : names)
    if (auto it = s.labels.find(n); it != s.labels.end()) return it->second;
  return "";
}

const PairLabels* labels_of(const PromSeries& s) {
  for (const PairLabels& p : pairs())
    for (const char* to : p.to)
      if (s.labels.count(to)) return &p;
  return nullptr;
}

double mean_rate(const PromSeries& s) {
  double sum = 0;
  for (const auto& [t, v] : s.points) sum += v;
  return s.points.empty() ? 0 : sum / static_cast<double>(s.points.size());
}

}  // namespace

ObservedCalls read_observed_calls(const std::string& body, const std::string& what) {
  std::vector<PromSeries> series = parse_instant_or_range_answer(body, what);
  ObservedCalls out;
  std::map<std::pair<std::string, std::string>, double> rates;
  const PairLabels* mesh = nullptr;
  for (const PromSeries& s : series) {
    const PairLabels* p = labels_of(s);
    if (!p)
      throw InputError(what +
                       ": a series without a callee label (destination_canonical_service or "
                       "destination_workload for Istio, dst_deployment for Linkerd); sum the "
                       "rate by caller and callee (docs/graph.md, \"The call graph from "
                       "Prometheus\")");
    if (mesh && mesh != p)
      throw InputError(what + ": series of two kinds of labels (" + mesh->mesh + "'s " +
                       mesh->to.front() + ", " + p->mesh + "'s " + p->to.front() +
                       "); sum by one pair");
    mesh = p;
    double rate = mean_rate(s);
    if (rate < 0) throw InputError(what + ": a negative rate (" + number_text(rate) + ")");
    std::string caller = first_label(s, p->from), callee = first_label(s, p->to);
    rates[{caller == "unknown" ? "" : caller, callee == "unknown" ? "" : callee}] += rate;
  }
  if (!mesh) throw InputError(what + ": the answer has no series");
  out.labels = std::string(mesh->mesh) + "'s " + mesh->from.front() + " and " + mesh->to.front();
  for (const auto& [pair, rate] : rates) out.calls.push_back({pair.first, pair.second, rate});
  return out;
}

std::vector<CallRatesQuery> call_rate_queries(double window_s) {
  std::string window = number_text(window_s) + "s";
  std::vector<CallRatesQuery> out;
  for (const PairLabels& p : pairs()) {
    std::string by;
    for (const auto* side : {&p.from, &p.to})
      for (const char* label : *side) by += (by.empty() ? "" : ", ") + std::string(label);
    out.push_back({p.mesh, "sum by (" + by + ") (rate(" + p.counter + "{" + p.matchers + "}[" +
                               window + "]))"});
  }
  return out;
}

}  // namespace retrystorm
