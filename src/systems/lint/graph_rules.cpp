// The lint rules that need a graph of services (docs/configs.md, "Lint rules
// of a graph"): retries multiplying along a path, a call below that outlasts
// its caller, a deadline that does not propagate, a budget that protects
// only its own hop, and a shared dependency its callers can overload. Each
// call's own policy is linted too, as one layer (the rules of the other files).
#include <algorithm>
#include <functional>
#include <set>

#include "analysis/summary.hpp"
#include "model/graph.hpp"
#include "systems/lint/rules.hpp"

namespace retrystorm::configs::lint {

namespace {

struct Hop {
  size_t index;  // in calls
  const GraphCall* call;
  Scenario edge;  // the call's client (edge_scenario)
};

std::string call_name(const Hop& h) {
  return "calls[" + std::to_string(h.index) + "] (" + h.call->from + " -> " + h.call->to + ")";
}

std::vector<Hop> hops_of(const Scenario& s) {
  std::vector<Hop> out;
  for (size_t i = 0; i < s.graph.calls.size(); ++i)
    out.push_back({i, &s.graph.calls[i], edge_scenario(s, s.graph.calls[i])});
  return out;
}

// The longest a call takes when every attempt times out: its attempts'
// timeouts and the backoffs between them at their longest.
// The backoffs between a call's attempts at their longest (each window whole).
double longest_backoffs_s(const Scenario& edge) {
  const Backoff& b = edge.client.backoff;
  double total = 0, delay = b.base_s;
  for (int k = 0; k < edge.client.retries; ++k) {
    total += b.cap_s > 0 ? std::min(delay, b.cap_s) : delay;
    delay *= b.multiplier;
  }
  return total;
}

// A call at its longest: every attempt timing out and the backoffs between,
// cut by its deadline.
double longest_call_s(const Scenario& edge) {
  double total = (edge.client.retries + 1) * edge.client.timeout_s + longest_backoffs_s(edge);
  return edge.client.deadline_s > 0 ? std::min(total, edge.client.deadline_s) : total;
}

// How long a caller waits for one attempt of its call: the per-attempt
// timeout, or its deadline when that comes first.
double attempt_wait_s(const Scenario& edge) {
  const double t = edge.client.timeout_s, d = edge.client.deadline_s;
  return d > 0 ? std::min(t, d) : t;
}

// Every path of calls from the user to a service that calls nobody.
void for_each_path(const std::vector<Hop>& hops,
                   const std::function<void(const std::vector<const Hop*>&)>& visit) {
  constexpr int kMaxPaths = 1000;  // a wide graph has many; the first ones make the point
  int paths = 0;
  std::vector<const Hop*> path;
  std::function<void(const std::string&)> walk = [&](const std::string& from) {
    if (paths >= kMaxPaths) return;
    bool leaf = true;
    for (const Hop& h : hops) {
      if (h.call->from != from) continue;
      leaf = false;
      path.push_back(&h);
      walk(h.call->to);
      path.pop_back();
    }
    if (leaf && !path.empty() && paths++ < kMaxPaths) visit(path);
  };
  walk(kUserCaller);
}

std::string path_text(const std::vector<const Hop*>& path) {
  std::string out = kUserCaller;
  for (const Hop* h : path) out += " -> " + h->call->to;
  return out;
}

void rule_multiplying_path(const std::vector<const Hop*>& path, const std::string& source,
                           std::vector<Finding>& out) {
  std::vector<const Hop*> retrying;
  double attempts = 1;
  for (const Hop* h : path) {
    attempts *= h->call->count * (h->edge.client.retries + 1.0);
    if (h->edge.client.retries > 0) retrying.push_back(h);
  }
  if (retrying.size() < 2) return;
  Finding f = finding(Severity::warning, "retries-multiply-across-hops", source);
  std::string names;
  for (const Hop* h : retrying) names += (names.empty() ? "" : ", ") + call_name(*h);
  f.message = path_text(path) + ": " + std::to_string(retrying.size()) +
              " calls on the path retry (" + names +
              "); when every attempt fails, one user "
              "request makes " +
              format_amount(attempts) + " attempts at " + path.back()->call->to;
  f.fix = "retry at one hop only: keep " + call_name(*retrying.front()) +
          "'s retries and set retries: 0 on the others";
  for (size_t i = 1; i < retrying.size(); ++i)
    f.fix_keys.push_back({"calls[" + std::to_string(retrying[i]->index) + "].retries", 0.0});
  f.numbers = {{"path", path_text(path)}, {"attempts", attempts}};
  out.push_back(std::move(f));
}

// The fix of a call that outlasts its caller's wait `waits`: a deadline
// within it where the call has one, else the per-attempt timeout with which
// its attempts and backoffs fit, else one attempt.
void fit_in_caller(const Hop& below, double waits, Finding& f) {
  const auto& c = below.edge.client;
  const std::string at = "calls[" + std::to_string(below.index) + "].";
  const double within = std::floor(waits * 1000) / 1000;
  if (c.deadline_s > 0) {
    f.fix = "a deadline of at most " + format_seconds(within) + " on " + call_name(below) +
            " (all its attempts then end within the caller's " + format_seconds(waits) + ")";
    f.fix_keys = {{at + "deadline_s", within}};
    return;
  }
  const int attempts = c.retries + 1;
  const double backoffs = longest_backoffs_s(below.edge);
  const double fit = std::floor((waits - backoffs) / attempts * 1000) / 1000;
  if (fit >= 0.001) {
    f.fix = "a timeout of at most " + format_seconds(fit) + " per attempt on " + call_name(below) +
            " (" + plural(attempts, "attempt", "attempts") +
            (backoffs > 0 ? " and " + format_seconds(backoffs) + " of backoffs" : std::string()) +
            (attempts == 1 && backoffs <= 0 ? " then fits" : " then fit") + " in the caller's " +
            format_seconds(waits) + ")";
    f.fix_keys = {{at + "timeout_s", fit}};
    return;
  }
  f.fix = "one attempt of at most " + format_seconds(within) + " on " + call_name(below) + " (" +
          (backoffs >= waits ? "its backoffs alone, " + format_seconds(backoffs) + ", outlast"
                             : plural(attempts, "attempt", "attempts") +
                                   (attempts == 1 ? " does not fit in" : " do not fit in")) +
          " the caller's " + format_seconds(waits) + ")";
  f.fix_keys = {{at + "retries", 0.0}, {at + "timeout_s", within}, {at + "deadline_s", 0.0}};
}

// A call made by `below.call->from` outlasting the calls into that service.
void rule_outlasts_caller(const Hop& above, const Hop& below, const std::string& source,
                          std::vector<Finding>& out) {
  double longest = longest_call_s(below.edge), waits = attempt_wait_s(above.edge);
  if (longest <= waits) return;
  bool inner_longer = attempt_wait_s(below.edge) >= waits;
  Finding f = finding(inner_longer ? Severity::error : Severity::warning,
                      inner_longer ? "inner-timeout-longer" : "call-outlasts-caller", source);
  f.message = call_name(below) + " may take up to " + format_seconds(longest) + " (" +
              plural(below.edge.client.retries + 1, "attempt", "attempts") + " of " +
              format_seconds(below.edge.client.timeout_s) +
              (below.edge.client.retries > 0 ? " and the backoffs" : "") +
              (below.edge.client.deadline_s > 0
                   ? ", within its " + format_seconds(below.edge.client.deadline_s) + " deadline"
                   : std::string()) +
              "), longer than " + call_name(above) + "'s " + format_seconds(waits) + " " +
              (above.edge.client.deadline_s > 0 &&
                       above.edge.client.deadline_s < above.edge.client.timeout_s
                   ? "deadline"
                   : "timeout") +
              ": the caller gives up first, and " +
              (below.call->propagate_deadline ? "the call stops at its next retry"
                                              : "the attempts below go on for nobody");
  fit_in_caller(below, waits, f);
  f.numbers = {{"longest_s", longest}, {"caller_timeout_s", waits}};
  out.push_back(std::move(f));
  if (below.call->propagate_deadline || below.edge.client.retries == 0) return;
  Finding d = finding(Severity::warning, "deadline-not-propagated", source);
  d.message = call_name(below) + " does not learn that " + call_name(above) +
              " gave up: its retries after " + format_seconds(waits) + " serve nobody";
  d.fix =
      "propagate the deadline (gRPC deadline propagation, or Envoy honouring "
      "x-envoy-expected-rq-timeout-ms): propagate_deadline: true on " +
      call_name(below);
  d.fix_keys = {{"calls[" + std::to_string(below.index) + "].propagate_deadline", true}};
  out.push_back(std::move(d));
}

// A service that makes its calls one after another (pattern sequence): its
// visit takes their longest times added up, `count` times each. When no one
// call outlasts the caller's wait (rule_outlasts_caller says that) but the
// sum does, the caller gives up while the later calls still run.
void rule_sequence_outlasts_caller(const Scenario& s, const Hop& above,
                                   const std::vector<Hop>& hops, const std::string& source,
                                   std::vector<Finding>& out) {
  const int v = service_index(s.graph, above.call->to);
  if (v < 0 || s.graph.services[static_cast<size_t>(v)].pattern != CallPattern::sequence) return;
  const double waits = attempt_wait_s(above.edge);
  double total = 0;
  int calls = 0;  // one call made `count` times in a row is a sequence too
  std::vector<std::string> names;
  for (const Hop& below : hops) {
    if (below.call->from != above.call->to) continue;
    const double longest = longest_call_s(below.edge);
    if (longest > waits) return;  // that call alone is reported
    total += below.call->count * longest;
    calls += below.call->count;
    names.push_back(call_name(below) +
                    (below.call->count > 1 ? " x" + std::to_string(below.call->count) : ""));
  }
  if (calls < 2 || total <= waits) return;
  Finding f = finding(Severity::warning, "sequence-outlasts-caller", source);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  f.message = above.call->to + " makes its calls one after another (" + list +
              "): together they may take up to " + format_seconds(total) + ", longer than " +
              call_name(above) + "'s " + format_seconds(waits) +
              ": the caller gives up while the later calls still run";
  f.fix = "fit the calls' timeouts and retries of " + above.call->to + " into " +
          format_seconds(waits) + " together, or make them in parallel (pattern: parallel)";
  f.numbers = {{"longest_s", total}, {"caller_timeout_s", waits}};
  out.push_back(std::move(f));
}

void rule_budget_below(const std::vector<const Hop*>& path, const std::string& source,
                       std::set<std::string>& said, std::vector<Finding>& out) {
  for (size_t i = 0; i < path.size(); ++i) {
    // A fixed cap is no budget here, as no-retry-budget says of it.
    if (!path[i]->edge.client.budget.follows_traffic()) continue;
    for (size_t j = i + 1; j < path.size(); ++j) {
      const Hop& below = *path[j];
      if (below.edge.client.retries == 0 || below.edge.client.budget.follows_traffic()) continue;
      if (!said.insert(std::to_string(path[i]->index) + ">" + std::to_string(below.index)).second)
        continue;
      Finding f = finding(Severity::warning, "budget-does-not-protect-below", source);
      f.message = "the retry budget on " + call_name(*path[i]) +
                  " limits that call's retries only; " + call_name(below) + " below it retries " +
                  plural(below.edge.client.retries, "time", "times") +
                  " per call with no budget, and its retries multiply whatever the budget above";
      f.fix = "a retry budget on " + call_name(below) + " too";
      std::string at = "calls[" + std::to_string(below.index) + "].budget.";
      f.fix_keys = {{at + "kind", std::string("window")}, {at + "ratio", 0.1}};
      out.push_back(std::move(f));
    }
  }
}

void rule_shared_dependency(const Scenario& s, const std::string& source,
                            std::vector<Finding>& out) {
  std::vector<double> worst = worst_case_attempts(s);
  for (size_t v = 0; v < s.graph.services.size(); ++v) {
    const GraphService& service = s.graph.services[v];
    std::set<std::string> callers;
    for (const GraphCall& call : s.graph.calls)
      if (call.to == service.name) callers.insert(call.from);
    if (callers.size() < 2 || !service.serves()) continue;
    double capacity = service_scenario(s, service).server.capacity_per_s;
    double rate = s.demand.rate_per_s * worst[v];
    if (rate <= capacity) continue;
    std::string names;
    for (const std::string& c : callers) names += (names.empty() ? "" : " and ") + c;
    Finding f = finding(Severity::warning, "shared-dependency-overload", source);
    f.message = service.name + " is shared by " + names + ": when their attempts fail they send " +
                "it up to " + format_amount(worst[v]) + " attempts per user request, " +
                format_amount(rate) + "/s at " + format_amount(s.demand.rate_per_s) +
                " requests/s, " + format_amount(rate / capacity) + "x its capacity of " +
                format_amount(capacity) + "/s; one caller's retries take the other's headroom";
    f.fix = "budget or remove the retries of the calls to " + service.name +
            ", so that their worst case fits its capacity";
    f.numbers = {{"attempts_per_s", rate}, {"capacity_per_s", capacity}};
    out.push_back(std::move(f));
  }
}

}  // namespace

void graph_rules(const Scenario& s, const std::string& source, std::vector<Finding>& out) {
  std::vector<Hop> hops = hops_of(s);
  std::set<std::string> said;  // budget pairs reported, paths share their hops
  for_each_path(hops, [&](const std::vector<const Hop*>& path) {
    rule_multiplying_path(path, source, out);
    rule_budget_below(path, source, said, out);
  });
  for (const Hop& below : hops)
    for (const Hop& above : hops)
      if (above.call->to == below.call->from) rule_outlasts_caller(above, below, source, out);
  for (const Hop& above : hops) rule_sequence_outlasts_caller(s, above, hops, source, out);
  rule_shared_dependency(s, source, out);
}

}  // namespace retrystorm::configs::lint
