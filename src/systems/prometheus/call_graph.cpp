#include "systems/prometheus/call_graph.hpp"

#include <map>

#include "model/keys.hpp"
#include "systems/prometheus/series.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// The caller and callee labels each mesh puts on its request counters.
struct PairLabels {
  const char* mesh;
  const char* from;
  const char* to;
  const char* counter;   // the request counter that carries them
  const char* matchers;  // the series of it that count each call once
};

// Istio: istio_requests_total's standard labels (Istio's "Standard Metrics"
// reference); a caller outside the mesh is "unknown". Linkerd: the proxy's
// outbound request_total, whose `deployment` label comes from the pod's owner
// in Linkerd's scrape configuration and `dst_deployment` from the destination
// service's endpoints. Istio's destination sidecar reports every caller, the
// ones outside the mesh too; Linkerd's outbound side is the caller's own count.
constexpr PairLabels kPairs[] = {
    {"Istio", "source_workload", "destination_workload", "istio_requests_total",
     "reporter=\"destination\""},
    {"Linkerd", "deployment", "dst_deployment", "request_total", "direction=\"outbound\""},
};

const PairLabels* labels_of(const PromSeries& s) {
  for (const PairLabels& p : kPairs)
    if (s.labels.count(p.to)) return &p;
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
                       ": a series without a callee label (destination_workload for Istio, "
                       "dst_deployment for Linkerd); sum the rate by caller and callee "
                       "(docs/graph.md, \"The call graph from Prometheus\")");
    if (mesh && mesh != p)
      throw InputError(what + ": series of both Istio's and Linkerd's labels; give one mesh's");
    mesh = p;
    double rate = mean_rate(s);
    if (rate < 0) throw InputError(what + ": a negative rate (" + number_text(rate) + ")");
    auto from = s.labels.find(p->from);
    std::string caller = from == s.labels.end() || from->second == "unknown" ? "" : from->second;
    std::string callee = s.labels.at(p->to) == "unknown" ? "" : s.labels.at(p->to);
    rates[{caller, callee}] += rate;
  }
  if (!mesh) throw InputError(what + ": the answer has no series");
  out.labels = std::string(mesh->mesh) + "'s " + mesh->from + " and " + mesh->to;
  for (const auto& [pair, rate] : rates) out.calls.push_back({pair.first, pair.second, rate});
  return out;
}

std::vector<CallRatesQuery> call_rate_queries(double window_s) {
  std::string window = number_text(window_s) + "s";
  std::vector<CallRatesQuery> out;
  for (const PairLabels& p : kPairs)
    out.push_back({p.mesh, std::string("sum by (") + p.from + ", " + p.to + ") (rate(" + p.counter +
                               "{" + p.matchers + "}[" + window + "]))"});
  return out;
}

}  // namespace retrystorm
