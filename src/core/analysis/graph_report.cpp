#include "analysis/graph_report.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/graph.hpp"

namespace retrystorm {

namespace {

double total(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

ServiceHop service_hop(const ServiceSeries& x, double users, double worst) {
  ServiceHop h;
  h.name = x.name;
  h.serves = x.serves;
  h.first_attempts = total(x.first_attempts);
  h.retries = total(x.retries);
  h.served = total(x.served);
  h.late = total(x.late);
  h.rejected = total(x.rejected);
  h.shed = total(x.shed);
  h.failed = total(x.failed);
  h.peak_queue = x.queue.empty() ? 0 : *std::max_element(x.queue.begin(), x.queue.end());
  h.amplification = ratio(h.first_attempts + h.retries, h.first_attempts);
  h.per_request = ratio(h.first_attempts + h.retries, users);
  h.worst_case = worst;
  return h;
}

// An edge as the defenses name it: "api -> db (calls[2])".
std::string edge_name(const GraphCall& call, size_t i) {
  return call.from + " -> " + call.to + " (calls[" + std::to_string(i) + "])";
}

// How many required calls one attempt at `service` makes.
int required_calls_of(const Graph& g, const std::string& service) {
  int n = 0;
  for (const GraphCall& call : g.calls)
    if (call.from == service && !call.optional) n += call.count;
  return n;
}

}  // namespace

GraphSummary graph_summary(const RunResult& run) {
  GraphSummary out;
  if (run.graph.empty()) return out;
  std::vector<double> worst = worst_case_attempts(run.scenario);
  for (size_t v = 0; v < run.graph.services.size(); ++v)
    out.services.push_back(service_hop(run.graph.services[v], run.user_requests, worst[v]));
  for (const EdgeSeries& x : run.graph.edges) {
    EdgeHop h{x.from,
              x.to,
              total(x.calls),
              total(x.retries),
              total(x.timeouts),
              total(x.failed),
              total(x.denied),
              0,
              total(x.delayed),
              total(x.aborted),
              total(x.paced)};
    h.attempts_per_call = ratio(h.calls + h.retries, h.calls);
    out.edges.push_back(h);
  }
  return out;
}

namespace {

// The changes that span the graph: retries kept only on the outermost call
// that retries (the others fail fast), and a budget on every retrying call.
void add_whole_graph_rows(const Scenario& s, double window, std::vector<LadderRow>& rows) {
  const Graph& g = s.graph;
  LadderRow one_hop{"Retry at one hop only", "", {}},
      budgets{"A 10% retry budget on every call", "", {}};
  // The outermost call that retries: its caller nearest the entry (the
  // user's call first), the first listed among equals, as lint picks it.
  const std::vector<int> depth = service_depths(g);
  auto depth_of = [&](const GraphCall& call) {
    return call.from == kUserCaller ? -1 : depth[static_cast<size_t>(service_index(g, call.from))];
  };
  std::vector<size_t> retrying_calls;
  size_t first = 0;
  for (size_t i = 0; i < g.calls.size(); ++i) {
    Scenario edge = edge_scenario(s, g.calls[i]);
    if (edge.client.retries == 0) continue;
    if (retrying_calls.empty() || depth_of(g.calls[i]) < depth_of(g.calls[first])) first = i;
    retrying_calls.push_back(i);
    if (edge.client.budget.kind != BudgetKind::none) continue;
    std::string at = "calls[" + std::to_string(i) + "].";
    budgets.set.push_back({at + "budget.kind", std::string("window")});
    budgets.set.push_back({at + "budget.ratio", 0.1});
    budgets.set.push_back({at + "budget.window_s", window});
  }
  for (size_t i : retrying_calls)
    if (i != first) one_hop.set.push_back({"calls[" + std::to_string(i) + "].retries", 0.0});
  const int retrying = static_cast<int>(retrying_calls.size());
  one_hop.change = "Only " + edge_name(g.calls[first], first) + " keeps its retries; the " +
                   std::to_string(std::max(0, retrying - 1)) +
                   " other calls that retry fail fast, so attempts no longer multiply from hop "
                   "to hop.";
  budgets.change = "Each call's retries limited to 10% of its own calls over a rolling window.";
  if (retrying > 1) rows.push_back(std::move(one_hop));
  if (retrying > 1 && !budgets.set.empty()) rows.push_back(std::move(budgets));
}

}  // namespace

std::vector<LadderRow> graph_defenses(const Scenario& s) {
  std::vector<LadderRow> rows;
  const Graph& g = s.graph;
  double window = std::max(s.step_s, std::round(10 / s.step_s) * s.step_s);
  add_whole_graph_rows(s, window, rows);
  for (size_t i = 0; i < g.calls.size(); ++i) {
    Scenario edge = edge_scenario(s, g.calls[i]);
    std::string at = "calls[" + std::to_string(i) + "].";
    if (edge.client.retries > 0)
      rows.push_back({"No retries on " + edge_name(g.calls[i], i),
                      "One attempt per call on this edge; the other edges keep theirs.",
                      {{at + "retries", 0.0}}});
    if (edge.client.retries > 0 && edge.client.budget.kind == BudgetKind::none)
      rows.push_back({"A 10% retry budget on " + edge_name(g.calls[i], i),
                      "Retries on this edge limited to 10% of its calls over a rolling window.",
                      {{at + "budget.kind", std::string("window")},
                       {at + "budget.ratio", 0.1},
                       {at + "budget.window_s", window}}});
    // Only where the caller still needs another call: a request answered
    // by fallbacks alone is not an answer.
    if (!g.calls[i].optional && required_calls_of(g, g.calls[i].from) > g.calls[i].count)
      rows.push_back({"Make " + edge_name(g.calls[i], i) + " optional",
                      "Its caller answers without it when it fails (a fallback), instead of "
                      "failing the whole request and having it retried.",
                      {{at + "optional", true}}});
    if (!g.calls[i].propagate_deadline && g.calls[i].from != kUserCaller)
      rows.push_back({"Propagate the deadline on " + edge_name(g.calls[i], i),
                      "Calls on this edge stop once their caller gave up, instead of retrying "
                      "for nobody.",
                      {{at + "propagate_deadline", true}}});
  }
  for (const GraphService& service : g.services) {
    if (!service.serves() || service_scenario(s, service).server.shed_abandoned) continue;
    rows.push_back({"Shed abandoned work at " + service.name,
                    "This service's server drops queued attempts whose caller gave up.",
                    {{"services." + service.name + ".shed_abandoned", true}}});
  }
  return rows;
}

}  // namespace retrystorm
