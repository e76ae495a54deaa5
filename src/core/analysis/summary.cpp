#include "analysis/summary.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>

#include "analysis/cost.hpp"
#include "analysis/graph_report.hpp"
#include "analysis/ladder.hpp"
#include "analysis/risk.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"
#include "policies/client_guards.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {

namespace {

std::string thousands(long v) {
  std::string digits = std::to_string(std::labs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

size_t step_at(const Scenario& s, double t_s) {
  return static_cast<size_t>(std::max(0.0, std::floor(t_s / s.step_s + 1e-9)));
}

}  // namespace

std::string format_amount(double v) {
  if (std::fabs(v) >= 1000 && std::fabs(v - std::round(v)) < 0.05) return thousands(std::lround(v));
  return text::trimmed_text(v, std::fabs(v) >= 100 ? 1 : 2);
}

std::string format_seconds(double s) {
  return text::trimmed_text(s, 2) + " s";
}

namespace {

// Why a run did not recover, in the facts it has: a run that ends inside its
// incident, a growing backlog, failures or goodput short at the end, or too
// little time after the incident; the give-ups' loop only when work went to
// callers who had given up.
std::string unrecovered_detail(const RunResult& run, const Metrics& m) {
  const Scenario& s = run.scenario;
  std::string why;
  if (s.incident_end_s() >= s.horizon_s)
    why = "The run ended inside the incident";
  else if (m.backlog_growing)
    why = "The backlog was still growing at the end";
  else if (no_storm(run, m))
    why = "No request failed, but the run ends too soon after the incident to tell";
  else if (m.failed == 0)
    why = "No request failed yet, but the queue stayed full: every request was still retrying";
  else if (s.recovery.criterion == RecoveryCriterion::goodput)
    why = "Goodput was still below " + format_percent(s.recovery.goodput_fraction) +
          " of demand at the end";
  else
    why = "Users were still failing at the end";
  if (!(m.wasted_fraction > 0)) return why + ". ";
  return why + ", and " + format_percent(m.wasted_fraction) +
         " of the work served went to callers who had already given up. Each give-up sent "
         "another retry into the same queue: the loop keeps itself going after the trigger is "
         "gone. ";
}

// The worst case the model bound stands on, and the demand it can make. A
// graph's bound.max_amplification is per call reaching the incident service
// (the worst case there over the calls a request makes to it when nothing
// fails, docs/graph.md): a user request can cost that many times more, as
// the per-service table's worst case says (shared-database's db: 7 per call,
// 14 per user request).
std::string worst_cost_text(const RunResult& run, const Metrics& m) {
  const std::string demand = format_percent(m.bound.max_amplification * m.bound.load);
  const Scenario& s = run.scenario;
  const int hit = s.graph.empty() ? -1 : incident_service(s);
  if (hit < 0)
    return "each request can cost up to " + text::trimmed_text(m.bound.max_amplification, 2) +
           " attempts, so demand can reach " + demand + " of capacity";
  const auto at = static_cast<size_t>(hit);
  const std::string name = printable(s.graph.services[at].name);
  return "each user request can cost up to " + text::trimmed_text(worst_case_attempts(s)[at], 2) +
         " attempts at " + name + ", so the load there can reach " + demand + " of its capacity";
}

}  // namespace

const ServiceSeries* charted_service(const RunResult& run) {
  if (run.graph.empty()) return nullptr;
  const int hit = incident_service(run.scenario);
  return hit < 0 ? nullptr : &run.graph.services[static_cast<size_t>(hit)];
}

Verdict verdict(const RunResult& run, const Metrics& m) {
  const Scenario& s = run.scenario;
  Verdict v;
  v.recovered = m.recovered;
  auto rec = recovery_time(m, s);
  bool goodput = s.recovery.criterion == RecoveryCriterion::goodput;
  if (rec) {
    v.headline = goodput ? "Recovered: goodput back above " +
                               format_percent(s.recovery.goodput_fraction) + " of demand " +
                               format_seconds(*rec) + " after the incident ended"
                         : "Recovered: the last user failure came " + format_seconds(*rec) +
                               " after the incident ended";
    if (*rec == 0)
      v.headline = goodput ? "Absorbed: goodput held up as soon as the incident ended"
                           : "Absorbed: no user failed after the incident ended";
    // An incident of no length is none: nothing after it is its doing (a
    // recovery that took time is the capacity profile's, and is told).
    if (*rec == 0 && s.incident.duration_s <= 0)
      v.headline =
          "Absorbed: an incident of no length (incident.duration_s 0) leaves nothing to recover "
          "from";
  } else if (s.incident.duration_s > 0 && s.incident_end_s() >= s.horizon_s) {
    // The run ends inside the incident: nothing after it to judge. (An
    // incident of no length is none, wherever it starts.)
    v.headline = "Still in the incident when the run ends at " + format_seconds(s.horizon_s) +
                 ": it would end at " + format_seconds(s.incident_end_s()) +
                 "; lengthen horizon_s to see what follows";
  } else if (no_storm(run, m)) {
    v.headline = "Not judged by " + format_seconds(s.horizon_s) + ": the run ends " +
                 format_seconds(s.horizon_s - s.incident_end_s()) +
                 " after the incident, too soon to tell, and no request failed";
  } else if (s.incident.duration_s <= 0) {
    // No incident: what kept it from recovering was chance (or the load) alone.
    v.headline = "Not recovered by " + format_seconds(s.horizon_s) +
                 ": no incident was scripted (incident.duration_s 0), yet it did not settle "
                 "after " +
                 format_seconds(s.incident.start_s);
  } else {
    v.headline = "Not recovered by " + format_seconds(s.horizon_s) + ": the incident ended at " +
                 format_seconds(s.incident_end_s());
  }
  std::string bound = "Model bound: with every response late, " + worst_cost_text(run, m) +
                      "; the backlog is sure to drain on its own only below " +
                      format_percent(m.bound.safe_load_below) +
                      " load, and this scenario runs at " + format_percent(m.bound.load) + ".";
  if (!rec) {
    v.detail = unrecovered_detail(run, m) + bound;
  } else {
    v.detail = format_percent(m.failed_fraction) + " of user requests failed (" +
               format_amount(m.failed) + " of " + format_amount(m.user_requests) + "), and " +
               format_percent(m.wasted_fraction) +
               " of the work served was wasted on callers who had left. " + bound;
  }
  return v;
}

std::vector<GoodputRow> goodput_table(const RunResult& run, std::vector<double> at) {
  const Scenario& s = run.scenario;
  double start = s.incident.start_s, end = s.incident_end_s(), h = s.horizon_s;
  if (at.empty()) {
    double lead = std::min(10.0, start / 2);
    at = {start - lead, start, start + s.incident.duration_s / 2, end};
    for (double after : {0.5, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0})
      at.push_back(end + after * std::max(1.0, s.incident.duration_s / 10));
    at.push_back(h - s.step_s);
  }
  std::vector<GoodputRow> rows;
  for (double t : at) {
    t = std::round(t / s.step_s) * s.step_s;
    if (t < 0 || t >= h) continue;
    if (!rows.empty() && t <= rows.back().t_s) continue;
    size_t i = step_at(s, t);
    std::string phase = s.in_incident(static_cast<int>(i)) ? "during"
                        : t < start                        ? "before"
                                                           : "after";
    rows.push_back({std::round(t * 1e6) / 1e6, phase, run.series.goodput[i] / s.step_s});
  }
  return rows;
}

std::vector<TraceEntry> decision_trace(const RunResult& run) {
  // A graph's series are its incident service's: read that server and the client calling it.
  const Scenario s = run.scenario.graph.empty() ? run.scenario : dependency_view(run.scenario);
  const Series& x = run.series;
  // What the service received: for a graph, the incident service's own
  // arrivals (a user request may reach it by several paths; the top-level
  // series count it once).
  const ServiceSeries* hit = charted_service(run);
  const std::span<const double> first = hit ? std::span<const double>(hit->first_attempts)
                                            : std::span<const double>(x.first_attempts);
  const std::span<const double> retries =
      hit ? std::span<const double>(hit->retries) : std::span<const double>(x.retries);
  std::string timeout = format_seconds(s.client.timeout_s);
  std::vector<TraceEntry> out;
  out.reserve(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    std::string t;
    t.reserve(320);
    auto add = [&t](std::initializer_list<std::string_view> parts) {
      for (auto p : parts) t += p;
    };
    add({"capacity ", format_amount(x.capacity[i])});
    if (s.in_incident(static_cast<int>(i))) t += " (incident)";
    add({"; sent ", format_amount(first[i]), " new"});
    if (retries[i] > 0) add({" + ", format_amount(retries[i]), " retries"});
    if (x.budget_denied[i] > 0)
      add({"; budget denied ", format_amount(x.budget_denied[i]), " retries (those users fail)"});
    if (x.rejected[i] > 0) add({"; queue full, rejected ", format_amount(x.rejected[i])});
    add({"; served ", format_amount(x.goodput[i]), " on time"});
    if (x.served_late[i] > 0)
      add({", ", format_amount(x.served_late[i]), " late (their callers had gone)"});
    if (x.gave_up[i] > 0)
      add({"; ", format_amount(x.gave_up[i]), " reached the ", timeout, " timeout and gave up"});
    if (x.shed[i] > 0) add({", shed ", format_amount(x.shed[i]), " from the queue"});
    if (x.failed[i] > 0) add({"; ", format_amount(x.failed[i]), " user requests failed"});
    add({"; backlog ", format_amount(x.backlog[i])});
    // The wait at the step's own capacity: during an incident the queue
    // drains at what is left (at normal capacity 240 queued read as 2.4 s
    // while the next requests waited 6 s and gave up).
    if (x.backlog[i] > 0 && x.capacity[i] <= 0) {
      add({" (nothing is served while capacity is 0: new work will be late)"});
    } else if (x.backlog[i] > 0) {
      double wait_s = x.backlog[i] / x.capacity[i] * s.step_s;
      add({" (~", format_seconds(wait_s), " of work",
           wait_s > s.client.timeout_s ? ", longer than the timeout: new work will be late)"
                                       : ")"});
    }
    out.push_back({x.t_s[i], std::move(t)});
  }
  return out;
}

namespace {

// One layer: the outermost layer's timeout and hedging, where they were
// given per layer (a list of a stack no longer fits one layer).
std::vector<std::pair<std::string, KeyValue>> one_layer_change(const Scenario& s) {
  std::vector<std::pair<std::string, KeyValue>> change = {{"client.layers", 1.0},
                                                          {"client.stack_retries", std::string()}};
  if (!s.client.layer_timeouts_s.empty()) {
    change.push_back({"client.timeout_s", layer_timeouts(s).front()});
    change.push_back({"client.layer_timeouts_s", std::string()});
  }
  if (s.client.hedging != "none" && s.client.hedging != "grpc" && s.client.hedging != "envoy") {
    Hedging outer = s.hedged_layers().front();
    change.push_back(
        {"client.hedging",
         std::string(outer == Hedging::none ? "none" : kHedgingNames[static_cast<int>(outer)])});
  }
  return change;
}

// One defense as a change to the scenario, before it runs.
void add_candidate(std::vector<Advice>& candidates, std::string title, std::string why,
                   std::vector<std::pair<std::string, KeyValue>> change) {
  candidates.push_back({std::move(title), std::move(why), std::move(change), std::nullopt, false});
}

// A defense that buys its failures back with waiting (a connection pool's
// queue at the client) says what the slowest successes then cost: when
// their p99 at least doubles and grows by over a second.
std::string slower_text(const Metrics& now, const Metrics& with) {
  if (!with.latency_p99_s || !now.latency_p99_s) return "";
  double a = *now.latency_p99_s, b = *with.latency_p99_s;
  if (b < 2 * a || b - a < 1) return "";
  return ", but the slowest 1% of successes take " + format_seconds(b) + " (now " +
         format_seconds(a) + ")";
}

// Keeps, in the trials' order, the defenses that help, with their effect in the why.
void keep_helping(const Metrics& m, std::vector<DefenseTrial> trials, std::vector<Advice>& tried) {
  for (DefenseTrial& trial : trials) {
    Advice& a = trial.advice;
    const Metrics& with = trial.with;
    a.failed_fraction = with.failed_fraction;
    a.recovers = with.recovered;
    bool helps = (a.recovers && !m.recovered) || with.failed_fraction < m.failed_fraction - 0.005;
    if (!helps) continue;
    auto rec = recovery_time(with, trial.changed);
    a.why += " In this scenario: " +
             (rec ? "recovers " + format_seconds(*rec) + " after the incident"
                  : std::string("still not recovered")) +
             ", " + format_percent(with.failed_fraction) + " of requests fail (now " +
             format_percent(m.failed_fraction) + ")" + slower_text(m, with) + ".";
    tried.push_back(std::move(a));
  }
}

// What the run itself says about headroom: the load bound and the tipping point.
std::string headroom_text(const Metrics& m, const std::optional<TippingResult>& tipping) {
  std::string headroom = "With this policy the backlog is sure to drain only below " +
                         format_percent(m.bound.safe_load_below) + " load; you run at " +
                         format_percent(m.bound.load) + ".";
  if (tipping && tipping->on_grid_s)
    headroom += " Above that bound it holds until an incident of about " +
                format_seconds(tipping->exact_s.value_or(*tipping->on_grid_s)) +
                " leaves it stuck. Read both as directions for capacity planning, not thresholds.";
  else if (tipping)
    headroom += " No incident length up to the horizon left it stuck.";
  return headroom;
}

// A breaker and adaptive throttling in each client (agent engine; docs/
// policies.md): each refuses attempts at the client while the server fails.
void client_side_defenses(const Scenario& s, std::vector<Advice>& out) {
  bool fits = s.engine == Engine::agent && s.hedged_layers().back() == Hedging::none &&
              s.client.budget.clients <= 100000;
  if (!fits) return;
  if (s.client.breaker.kind == BreakerKind::none)
    add_candidate(out, "Trip a circuit breaker in each client",
                  "A breaker that opens when over half of a client's calls in 10 s fail (at "
                  "least 20 calls; opossum's rules) refuses the client's attempts for 30 s, "
                  "then lets one through: the server gets room to drain, at the price of "
                  "failing requests at once while it is open, some that would have succeeded.",
                  {{"client.breaker", std::string("opossum")}, {"client.breaker_min_calls", 20.0}});
  if (s.client.max_connections == 0 && s.client.max_requests == 0 && s.server.hosts == 1) {
    // Half of one timeout's work at full capacity on the wire, shared by the
    // clients: the server's queue stays short even when capacity halves.
    double per_client =
        std::max(1.0, std::floor(s.server.capacity_per_s * s.client.timeout_s / 2 /
                                 std::max(1.0, std::round(s.client.budget.clients))));
    add_candidate(out, "Hold each client to a few connections",
                  "Envoy's connection pool with max_connections " + format_amount(per_client) +
                      " per client (HTTP/1) keeps the attempts on the wire to half of one "
                      "timeout's work, so the server's queue never outlasts a timeout; the "
                      "others wait at the client, where the per-try timeout has not started. "
                      "The price is latency: that wait is bounded only by the route timeout "
                      "(client.deadline_s) and by max_pending_requests, beyond which requests "
                      "fail at once.",
                  {{"client.max_connections", per_client}});
  }
  if (s.client.throttle.k <= 0)
    add_candidate(out, "Throttle in each client when the server stops accepting",
                  "Adaptive throttling (the SRE book's, as gRPC runs it: K = 2 over 30 s) "
                  "refuses requests locally in proportion to the ones the server did not "
                  "accept; it needs twice as many accepted as sent to stop, so it lets traffic "
                  "back one window at a time after the server recovers.",
                  {{"client.throttle_k", 2.0},
                   {"client.throttle_window_s", 30.0},
                   {"client.throttle_padding", 8.0}});
}

// Envoy's outlier detection when the incident hits some of the hosts only
// (agent engine; docs/policies.md, "Outlier detection").
void host_defenses(const Scenario& s, std::vector<Advice>& out) {
  const int hosts = s.server.hosts, hit = s.incident.hosts;
  if (s.engine != Engine::agent || hosts <= 1 || hit <= 0 || hit >= hosts ||
      s.client.outlier.consecutive_5xx > 0)
    return;
  const double percent = std::ceil(100.0 * hit / hosts);
  add_candidate(out, "Eject the failing hosts in each client",
                "Envoy's outlier detection takes a host out of each client's rotation after 5 "
                "5xx in a row (a timeout counts) for 30 s, longer each time; with "
                "max_ejection_percent " +
                    format_amount(percent) + " it may eject " +
                    (hit == 1 ? std::string("the host") : "the " + std::to_string(hit) + " hosts") +
                    " the incident hits (the default 10 ejects none of fewer than 10 "
                    "hosts). The price: an ejected host's capacity is out of use until it "
                    "is let back, and when every host is overloaded it ejects busy ones unless "
                    "the panic threshold keeps them in.",
                {{"client.outlier_5xx", 5.0}, {"client.outlier_max_percent", percent}});
}

// Envoy's adaptive concurrency filter before the server (agent engine;
// docs/policies.md, "Adaptive concurrency").
void server_side_defenses(const Scenario& s, std::vector<Advice>& out) {
  if (s.engine != Engine::agent || !s.graph.empty() || s.server.hosts > 1 ||
      s.server.concurrency.kind != ConcurrencyLimiter::none)
    return;
  add_candidate(out, "Limit concurrency at the server adaptively",
                "Envoy's adaptive concurrency filter keeps the attempts in flight near what "
                "the server turns round at its lowest latency, sampled every 100 ms, and "
                "answers the rest 503 at once: no attempt waits out a timeout in a queue. "
                "It starts at 3 in flight and drops back to 3 every minute to measure that "
                "latency again, which fails requests on a service whose answers are slow.",
                {{"server.adaptive_concurrency", std::string("envoy")}});
}

// The defenses of one population before one dependency, each tried alone.
std::vector<Advice> defenses(const Scenario& s) {
  std::vector<Advice> out;
  if (s.client.retries > 0 && s.client.budget.kind == BudgetKind::none) {
    double window = std::max(s.step_s, std::round(10 / s.step_s) * s.step_s);
    add_candidate(out, "Cap retries as a share of traffic",
                  "A retry budget (10% of first attempts over a rolling window) keeps sustained "
                  "amplification near 1.1x however many attempts each request may make; retries "
                  "over the budget fail fast instead of joining the queue.",
                  {{"client.budget.kind", std::string("window")},
                   {"client.budget.ratio", 0.1},
                   {"client.budget.window_s", window}});
  }
  if (!s.server.shed_abandoned)
    add_candidate(out, "Stop serving callers who already left",
                  "Propagate deadlines and let the server drop queued work whose caller has timed "
                  "out, so capacity after the trigger goes to requests someone still waits for.",
                  {{"server.shed_abandoned", true}});
  if (s.server.queue_limit == 0) {
    double limit = std::max(1.0, std::round(s.server.capacity_per_s * s.client.timeout_s));
    add_candidate(out, "Bound the queue to one timeout of work",
                  "A queue longer than capacity x timeout only holds work that will be late; a "
                  "limit of " +
                      format_amount(limit) +
                      " turns the excess into fast rejections the client can act on.",
                  {{"server.queue_limit", limit}});
  }
  if (s.retrying_layers() > 1)
    add_candidate(out, "Retry at one layer only",
                  "Retries at " + std::to_string(s.retrying_layers()) +
                      " stacked layers multiply to " + std::to_string(s.attempts()) +
                      " attempts per request at the bottom; keep retries at the layer closest to "
                      "the user and let the others fail fast.",
                  one_layer_change(s));
  client_side_defenses(s, out);
  host_defenses(s, out);
  server_side_defenses(s, out);
  if (s.client.retries > 1 && s.client.stack_retries.empty())
    add_candidate(out, "Fewer attempts per request",
                  "Every extra attempt raises the load a stuck system must carry; one retry is "
                  "usually enough to ride out a lost packet.",
                  {{"client.retries", 1.0}});
  return out;
}

// A graph's: each on one edge or one service (analysis/graph_report.hpp).
std::vector<Advice> graph_candidates(const Scenario& s) {
  std::vector<Advice> out;
  for (const LadderRow& row : graph_defenses(s)) add_candidate(out, row.name, row.change, row.set);
  return out;
}

// Whether the clients or the server cap the attempts a run sends (a retry
// budget, a breaker, a throttle, a connection pool, a rate limiter, a
// concurrency limit): into a stuck server such a run sends far fewer.
bool caps_attempts(const Scenario& s) {
  return s.client.budget.kind != BudgetKind::none || ClientGuards::wanted(s) ||
         s.client.rate_limiter != RateLimiter::none ||
         s.server.concurrency.kind != ConcurrencyLimiter::none;
}

// The order the trials start in: those likely long first, so that the last
// run to start on a core is a short one and no core waits long for the
// other at the end. Only the time depends on it: each trial writes its own slot.
std::vector<size_t> longest_first(const std::vector<DefenseTrial>& trials) {
  std::vector<size_t> order(trials.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return !caps_attempts(trials[i].changed); });
  return order;
}

}  // namespace

size_t defense_trials(const Scenario& s) {
  return (s.graph.empty() ? defenses(s) : graph_candidates(s)).size();
}

std::vector<DefenseTrial> try_defenses(const Scenario& s, const std::function<void()>& beside) {
  std::vector<DefenseTrial> trials;
  for (Advice& a : s.graph.empty() ? defenses(s) : graph_candidates(s)) {
    Scenario changed = s;
    for (const auto& [path, value] : a.change) set_key(changed, path, value);
    validate(changed);
    trials.push_back({std::move(a), std::move(changed), {}});
  }
  const std::vector<size_t> order = longest_first(trials);
  size_t first = beside ? 1 : 0;
  PoolOptions options;
  options.threads = runs_at_once(s);
  for_each_index(
      trials.size() + first,
      [&](size_t i) {
        if (i < first) return beside();
        DefenseTrial& trial = trials[order[i - first]];
        trial.with = compute_metrics(run_engine(trial.changed));
      },
      options);
  return trials;
}

std::vector<Advice> advise(const RunResult& run, const Metrics& m,
                           const std::optional<TippingResult>& tipping,
                           std::vector<DefenseTrial> trials) {
  const Scenario& s = run.scenario;
  std::vector<Advice> tried;
  keep_helping(m, std::move(trials), tried);

  std::stable_sort(tried.begin(), tried.end(), [](const Advice& a, const Advice& b) {
    if (a.recovers != b.recovers) return a.recovers;
    return a.failed_fraction.value_or(1) < b.failed_fraction.value_or(1);
  });

  if (!m.recovered && s.client.retries > 0 && s.client.backoff.base_s > 0)
    tried.push_back({"Backoff alone does not cap load",
                     "New requests keep arriving whatever the clients do, so backoff only moves "
                     "retries later; they still land on a saturated queue. It helps with short "
                     "blips and synchronised clients, not with a backlog.",
                     {},
                     std::nullopt,
                     false});
  tried.push_back({"Or buy headroom", headroom_text(m, tipping), {}, std::nullopt, false});
  return tried;
}

}  // namespace retrystorm
