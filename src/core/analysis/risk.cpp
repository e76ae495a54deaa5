#include "analysis/risk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "analysis/cost.hpp"
#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "model/keys.hpp"
#include "policies/backoff.hpp"
#include "policies/client_guards.hpp"
#include "policies/client_policy.hpp"
#include "text/number.hpp"
#include "text/units.hpp"

namespace retrystorm {

double stuck_timeout_s(const Scenario& s) {
  // The server queues the innermost layer's attempts: its timeout is the one
  // a queued attempt outlives or not (the engine and the chain read the same).
  const ClientPolicy policy = ClientPolicy::of(s);
  const std::vector<double>& layers = policy.layer_timeouts_s();
  return layers.empty() ? s.client.timeout_s : layers.back();
}

namespace {

// The goodput window, one timeout in steps, counted in double and cut to
// the run's length before it is a whole number: a timeout of 3e9 steps
// passed an int and judged over one step. A window as long as the run sums
// every step so far, as a longer one would, so the cut changes no verdict.
int goodput_window_steps(double timeout_s, const Scenario& s) {
  const double run_steps = std::round(s.horizon_s / s.step_s);
  const double steps = std::min(
      {timeout_s / s.step_s, run_steps, static_cast<double>(std::numeric_limits<int>::max())});
  return std::max(1, static_cast<int>(std::round(steps)));
}

}  // namespace

StuckRule stuck_rule(const Scenario& s) {
  StuckRule r;
  r.timeout_s = stuck_timeout_s(s);
  r.backlog_above = r.timeout_s * s.server.capacity_per_s;
  r.goodput_below = s.recovery.goodput_fraction;
  r.window_steps = goodput_window_steps(r.timeout_s, s);
  return r;
}

bool no_storm(const RunResult& run, const Metrics& m) {
  const Series& x = run.series;
  return m.failed == 0 && !m.backlog_growing && x.size() > 0 &&
         x.backlog[x.size() - 1] <= stuck_rule(run.scenario).backlog_above;
}

std::string describe(const StuckRule& rule, const Scenario& s) {
  return fmt::format(
      "stuck: more than {} attempts queued (one timeout of work, {} s x {}/s) and less than {} "
      "of new requests served in time over the last {} s; healthy again when both are back",
      number_text(rule.backlog_above), number_text(rule.timeout_s),
      number_text(s.server.capacity_per_s), format_percent(rule.goodput_below),
      number_text(rule.window_steps * s.step_s));
}

namespace {

// +1 stuck, -1 healthy, 0 neither (the state stays) at the end of step i,
// from the window's requests asked and served.
int judge(const Series& x, size_t i, const StuckRule& rule, double asked, double served) {
  const double share = asked > 0 ? served / asked : 1.0;
  const bool deep = x.backlog[i] > rule.backlog_above;
  if (deep && share < rule.goodput_below) return 1;
  if (!deep && share >= rule.goodput_below) return -1;
  return 0;
}

// The window's sums at the end of each step. Whole counts (the agent
// engine's) are kept as the window moves, exactly: a sum of whole numbers
// below 2^53 is the same in any order. Fractions (the fluid engine's) are
// summed afresh each step, in order, as they always were: the same bytes.
class WindowSums {
 public:
  WindowSums(const Series& x, int window_steps)
      : x_(x), window_(static_cast<size_t>(window_steps)), whole_(whole_counts(x)) {}
  void at(size_t i, double& asked, double& served) {
    const size_t from = i + 1 >= window_ ? i + 1 - window_ : 0;
    if (!whole_) {
      asked = served = 0;
      for (size_t j = from; j <= i; ++j) asked += x_.first_attempts[j], served += x_.goodput[j];
      return;
    }
    asked_ += x_.first_attempts[i], served_ += x_.goodput[i];
    if (from > 0) asked_ -= x_.first_attempts[from - 1], served_ -= x_.goodput[from - 1];
    asked = asked_, served = served_;
  }

 private:
  static bool whole_counts(const Series& x) {
    double total = 0;
    for (size_t j = 0; j < x.size(); ++j) {
      if (x.first_attempts[j] != std::floor(x.first_attempts[j]) ||
          x.goodput[j] != std::floor(x.goodput[j]) || x.first_attempts[j] < 0 || x.goodput[j] < 0)
        return false;
      total += x.first_attempts[j] + x.goodput[j];
    }
    return total < 9e15;  // below 2^53: every partial sum exact
  }
  const Series& x_;
  size_t window_;
  bool whole_;
  double asked_ = 0, served_ = 0;
};

}  // namespace

Passage read_passage(const RunResult& run, const StuckRule& rule, double from_s) {
  const Series& x = run.series;
  const double step = run.scenario.step_s;
  Passage p;
  p.end_s = x.size() * step;
  bool stuck = false, judged_from = from_s <= 0;
  WindowSums window(x, rule.window_steps);
  for (size_t i = 0; i < x.size(); ++i) {
    const double end = x.t_s[i] + step;
    if (!judged_from && end > from_s + 1e-9) p.stuck_at_from = stuck, judged_from = true;
    double asked, served;
    window.at(i, asked, served);
    const int verdict = judge(x, i, rule, asked, served);
    if (verdict > 0 && !stuck) {
      stuck = true;
      if (!p.enter_s) p.enter_s = end;
    } else if (verdict < 0 && stuck) {
      stuck = false;
      if (p.stuck_at_from && !p.leave_s && end > from_s) p.leave_s = end - from_s;
      if (!p.left_after_enter_s) p.left_after_enter_s = end - *p.enter_s;
    }
  }
  if (!judged_from) p.stuck_at_from = stuck;
  return p;
}

WaitingTime waiting_time(int events, double exposure_s) {
  using boost::math::chi_squared;
  using boost::math::quantile;
  WaitingTime w;
  w.events = events;
  w.exposure_s = exposure_s;
  if (exposure_s <= 0) return w;
  // Time-censored exponential data: 2 T / mean is chi-squared.
  w.low_s = 2 * exposure_s / quantile(chi_squared(2.0 * events + 2), 0.975);
  if (events > 0) {
    w.mean_s = exposure_s / events;
    w.high_s = 2 * exposure_s / quantile(chi_squared(2.0 * events), 0.025);
  }
  return w;
}

Share WaitingTime::within(double t_s) const {
  Share s;
  auto chance = [t_s](double mean) { return 1 - std::exp(-t_s / mean); };
  s.k = events;
  // Certain within the horizon is certain within any time without memory
  // (and within any longer time with it): not the 0 of no mean.
  s.p = certain ? 1.0 : mean_s ? chance(*mean_s) : 0.0;
  s.low = high_s ? chance(*high_s) : certain ? 1.0 : 0.0;
  s.high = low_s > 0 ? chance(low_s) : 1.0;
  return s;
}

bool scripted_push(const Scenario& s) {
  return s.incident.random_per_h <= 0 && s.incident.duration_s > 0 &&
         s.incident.start_s < s.horizon_s;
}

int risk_runs(const Scenario& s, const RiskOptions& o) {
  if (o.runs > 0) return o.runs;
  return s.runs > 1 ? s.runs : 100;
}

unsigned risk_threads(const Scenario& s, const RiskOptions& o) {
  // Whatever `threads` asks: the same figures on any count, and the memory
  // the request was priced at.
  const unsigned fit = runs_at_once(s);
  return o.threads > 0 ? std::min(o.threads, fit) : fit;
}

namespace {

// The time to leave is measured from the incident's end: an incident that
// does not end before the horizon leaves no time to measure it in.
void refuse_push_past_horizon(const Scenario& r) {
  const double end = r.incident.start_s + r.incident.duration_s;
  if (scripted_push(r) && !(end < r.horizon_s))
    throw InputError(fmt::format(
        "risk: the incident ends at {} s (incident.start_s + incident.duration_s), not before "
        "the horizon of {} s (--horizon, else horizon_s): the time to leave after it could not "
        "be measured; a longer horizon or a shorter incident (incident.duration_s 0: none)",
        number_text(end), number_text(r.horizon_s)));
}

}  // namespace

Scenario risk_scenario(const Scenario& s, const RiskOptions& o) {
  // Named before the agent engine replaces it: the session model's keys say
  // nothing random to the agent engine, and that refusal would mislead.
  if (s.engine == Engine::sessions)
    throw InputError(
        "risk: engine fluid or agent (the session model has no queue of attempts for the stuck "
        "rule to read)");
  Scenario r = s;
  r.engine = Engine::agent;
  r.runs = 1;
  if (o.horizon_s > 0) r.horizon_s = o.horizon_s;
  if (!r.graph.empty() || r.retrying_layers() != 1)
    throw InputError(
        "risk: one population of clients before one server (no services, one layer); "
        "this scenario has " +
        std::string(r.graph.empty() ? "layers" : "services"));
  if (r.demand.clients > 0)
    throw InputError("risk: demand.clients: open-loop arrivals only (demand.clients 0)");
  if (r.demand.process == DemandProcess::deterministic &&
      r.server.service == ServiceDist::deterministic && r.incident.random_per_h <= 0)
    throw InputError(
        "risk: nothing in this scenario is random: set demand.process poisson (or bursty) or "
        "server.service exponential (or lognormal, two_point), or incident.random_per_h above 0");
  if (o.splitting && r.incident.random_per_h > 0)
    throw InputError(
        "risk --splitting: incident.random_per_h: the incidents at random are drawn when a run "
        "starts, so every walk split from it would meet the same ones; estimate them with plain "
        "Monte Carlo (no --splitting)");
  for (double load : o.loads) {
    if (!(load > 0 && load <= 100))
      throw InputError("risk: load " + number_text(load) +
                       " must be above 0 and at most 100 (a multiple of demand.rate_per_s)");
    // A subnormal rate (1e-310 requests a second) is no demand a run can
    // draw; a rate of 0 goes on, as before (the incident's randomness).
    const double demand = r.demand.rate_per_s * load;
    if (demand != 0 && !std::isnormal(demand))
      throw InputError("risk: load " + number_text(load) + " x demand.rate_per_s " +
                       number_text(r.demand.rate_per_s) +
                       " is below the smallest rate a run can draw (about 2.2e-308 requests a "
                       "second)");
  }
  if (o.runs < 0 || o.runs > 100000)
    throw InputError("risk: runs " + std::to_string(o.runs) +
                     " must be 1 to 100000 (0: the scenario's runs, else 100)");
  if (!(o.horizon_s >= 0 && o.horizon_s <= 1e7))
    throw InputError("risk: horizon " + number_text(o.horizon_s) +
                     " must be above 0 s and at most 10000000 s (0: the scenario's horizon_s)");
  auto within = [](const char* what, int v, int low, int high) {
    if (v < low || v > high)
      throw InputError(fmt::format("risk: {} {} must be {} to {}", what, v, low, high));
  };
  within("split effort", o.split_effort, 2, 100000);
  within("split runs", o.split_runs, 2, 1000);
  within("split levels", o.split_levels, 1, 100);
  if (o.loads.empty() || o.loads.size() > 100)
    throw InputError("risk: 1 to 100 loads, not " + std::to_string(o.loads.size()));
  refuse_push_past_horizon(r);
  RunLimits limits;
  limits.max_steps = o.max_steps;
  validate(r, limits);
  check_replication_seeds(r, static_cast<size_t>(risk_runs(s, o)));
  return r;
}

namespace {

// What the scenario has that the exact chain does not model (a queue, one
// retrying client, timeouts and retries): with any of it the chain would
// answer for another system. Empty when the chain is the scenario's model.
std::string beyond_the_chain(const Scenario& s, const ClientPolicy& policy) {
  const ClientGuards guards(s);
  if (!s.graph.empty()) return "a graph of services";
  if (policy.layers() > 1) return "more than one retrying layer";
  if (!(policy.retried_answers() & answer_bit(s.server.reject_status)))
    return "a full queue's answer that is not retried (client.retry_on)";
  if (policy.hedging(0) != Hedging::none) return "hedging";
  if (!policy.retry_on_timeout()) return "timeouts that are not retried";
  if (policy.budget().kind != BudgetKind::none) return "a retry budget";
  if (policy.deadline_rule() != DeadlineRule::none) return "a deadline (client.deadline_s)";
  if (policy.rate_limiter() != RateLimiter::none) return "a client rate limiter";
  if (guards.on() || guards.pool_on()) return "client breakers, throttles or connection limits";
  if (s.server.shed_abandoned) return "shedding abandoned work (server.shed_abandoned)";
  if (s.server.concurrency.kind != ConcurrencyLimiter::none) return "a concurrency limiter";
  if (s.server.discipline != QueueDiscipline::fifo) return "a queue discipline other than fifo";
  if (s.server.hosts > 1) return "several hosts";
  if (s.server.contention > 0) return "contention (server.contention)";
  if (s.server.error_share > 0) return "injected errors (server.error_share)";
  if (s.server.retry_after_s > 0) return "pushback (server.retry_after_s)";
  if (s.server.answer_delay_s > 0) return "an answer delay (server.answer_delay_s)";
  if (s.demand.clients > 0) return "closed-loop clients (demand.clients)";
  if (!s.demand.profile.empty() || !s.server.capacity_profile.empty())
    return "a demand or capacity profile";
  return "";
}

}  // namespace

std::optional<markov::RetryChainParams> chain_params(const Scenario& s, double load,
                                                     std::string& why_not) {
  why_not.clear();
  const ClientPolicy policy = ClientPolicy::of(s, Engine::agent);
  if (std::string beyond = beyond_the_chain(s, policy); !beyond.empty())
    why_not = beyond + " is not in the chain";
  else if (s.incident.random_per_h > 0)
    why_not = "incidents at random (incident.random_per_h) are not in the chain";
  else if (s.demand.process != DemandProcess::poisson)
    why_not = "arrivals are not Poisson";
  else if (s.server.service != ServiceDist::exponential)
    why_not = "service is not exponential";
  else if (s.server.queue_limit <= 0)
    why_not = "the queue has no limit (server.queue_limit)";
  if (!why_not.empty()) return std::nullopt;
  markov::RetryChainParams p;
  p.arrival_per_s = s.demand.rate_per_s * load;
  p.slots = std::max(1, s.server.slots);
  p.service_per_s = s.server.capacity_per_s / p.slots;
  p.queue = p.slots + static_cast<int>(s.server.queue_limit);
  // The client's one layer as its policy reads it: client.stack_retries and
  // client.layer_timeouts_s win over client.retries and client.timeout_s.
  p.timeout_s = policy.layer_timeouts_s().front();
  p.retries = policy.retries(0);
  // The first retry's mean delay: the middle of the window its backoff is
  // drawn from (policies/backoff.hpp), cap and jitter included.
  const DelayRange first = backoff_delay(s.client.backoff, 1);
  p.retry_delay_s = std::max(s.step_s * 0.01, (first.low_s + first.high_s) / 2);
  const double pairs = (p.queue + 1.0) * (p.queue + 2.0) / 2;
  p.orbit = static_cast<int>(std::min(60.0, std::floor(kRiskChainStates / pairs) - 1));
  if (p.orbit < 10) {
    why_not = fmt::format(
        "with {} places at the server the chain would pass {} states; a smaller "
        "server.queue_limit has one",
        p.queue, text::grouped_text(kRiskChainStates));
    return std::nullopt;
  }
  // Compared as a double: timeout x capacity can pass 2^31, and a rule deeper
  // than the places at the server is never met (no state stuck).
  const double deep = stuck_rule(s).backlog_above;
  p.bad_from = deep < p.queue ? static_cast<int>(std::floor(deep)) + 1 : p.queue + 1;
  return p;
}

namespace {

// The figures each replication hands back, in this order.
enum PassageFigure { kEnter, kLeaveAfterEnter, kStuckAtEnd, kLeaveAfterPush, kEnd, kFigures };

std::vector<Passage> passages(const Scenario& s, size_t first, size_t count, const StuckRule& rule,
                              double from_s, const RiskOptions& o) {
  std::vector<Replication> reps =
      run_replications(s, first, count, risk_threads(s, o), [&](size_t, const Scenario& one) {
        throw_if_cancelled(o.cancelled);
        const Passage p = read_passage(run_engine(one), rule, from_s);
        std::vector<Figure> f(kFigures);
        f[kEnter].value = p.enter_s;
        f[kLeaveAfterEnter].value = p.left_after_enter_s;
        f[kStuckAtEnd].value = p.stuck_at_from ? 1.0 : 0.0;
        f[kLeaveAfterPush].value = p.leave_s;
        f[kEnd].value = p.end_s;
        return Replication{std::move(f), {}};
      });
  std::vector<Passage> out;
  for (const Replication& r : reps) {
    Passage p;
    p.enter_s = r.figures[kEnter].value;
    p.left_after_enter_s = r.figures[kLeaveAfterEnter].value;
    p.stuck_at_from = *r.figures[kStuckAtEnd].value > 0;
    p.leave_s = r.figures[kLeaveAfterPush].value;
    p.end_s = *r.figures[kEnd].value;
    out.push_back(p);
  }
  return out;
}

void estimate_entering(RiskLevel& level, const std::vector<Passage>& runs, double first_seed) {
  int entered = 0;
  double exposure = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    exposure += runs[i].enter_s.value_or(runs[i].end_s);
    if (!runs[i].enter_s) continue;
    if (!level.tipped_seed) level.tipped_seed = first_seed + static_cast<double>(i);
    ++entered;
  }
  level.enter_within_horizon = share_of(entered, static_cast<int>(runs.size()));
  level.enter = waiting_time(entered, exposure);
}

// Leaving, from the pushes' ends (push_end_s > 0) or from random entries.
void estimate_leaving(RiskLevel& level, const std::vector<Passage>& runs, double push_end_s) {
  int stuck = 0, left = 0;
  double exposure = 0;
  for (const Passage& p : runs) {
    const bool in = push_end_s > 0 ? p.stuck_at_from : p.enter_s.has_value();
    if (!in) continue;
    ++stuck;
    const std::optional<double> after = push_end_s > 0 ? p.leave_s : p.left_after_enter_s;
    const double start = push_end_s > 0 ? push_end_s : *p.enter_s;
    exposure += after.value_or(p.end_s - start);
    if (after) ++left;
  }
  level.pushed = share_of(stuck, static_cast<int>(runs.size()));
  level.leave_within_horizon = share_of(left, stuck);
  level.leave = waiting_time(left, exposure);
}

void add_exact(RiskLevel& level, const Scenario& s) {
  // `s` runs at this level's demand already: load 1 on it.
  std::optional<markov::RetryChainParams> p = chain_params(s, 1.0, level.exact_note);
  if (!p) return;
  try {
    level.exact = markov::solve_retry_chain(*p);
    level.exact_note = fmt::format(
        "Markov chain: {} places, up to {} requests waiting to retry, timeouts and retry delays "
        "exponential (means {} s and {} s), a retry after a failure with a chance of {}",
        p->queue, p->orbit, number_text(p->timeout_s), number_text(p->retry_delay_s),
        format_percent(p->retries / (p->retries + 1.0)));
  } catch (const InputError& e) {
    level.exact_note = e.what();
  }
}

}  // namespace

namespace {

// One load's scenarios: without the incident, and with it when it has one.
struct AtLoad {
  double demand_per_s = 0;
  Scenario quiet;
  std::optional<Scenario> push;
};

AtLoad at_load(const Scenario& s, double load) {
  AtLoad a;
  // 12 digits: 9.5 x 0.8 is 7.6, not 7.6000000000000005
  // (strtod, not stod: a subnormal rate would throw out_of_range; risk_scenario refuses one.)
  a.demand_per_s = std::strtod(fmt::format("{:.12g}", s.demand.rate_per_s * load).c_str(), nullptr);
  a.quiet = s;
  a.quiet.demand.rate_per_s = a.demand_per_s;
  if (s.incident.random_per_h > 0) return a;  // the randomness the quiet runs meet
  a.quiet.incident.duration_s = 0;
  if (scripted_push(s)) {
    a.push = a.quiet;
    a.push->incident = s.incident;
  }
  return a;
}

}  // namespace

std::vector<RiskEvidence> gather_risk(const Scenario& base, const RiskOptions& o, size_t first,
                                      size_t count) {
  const Scenario s = risk_scenario(base, o);
  const StuckRule rule = stuck_rule(s);
  std::vector<RiskEvidence> out;
  for (double load : o.loads) {
    const AtLoad a = at_load(s, load);
    RiskEvidence e;
    e.calm = passages(a.quiet, first, count, rule, 0, o);
    if (a.push) e.pushed = passages(*a.push, first, count, rule, s.incident_end_s(), o);
    if (o.splitting) {
      const auto [from, replicas] =
          split_range(first, count, size_t(risk_runs(base, o)), o.split_runs);
      e.split = split_tipping_replicas(a.quiet, rule, o, from, replicas);
    }
    out.push_back(std::move(e));
  }
  return out;
}

RiskResult summarize_risk(const Scenario& base, const RiskOptions& o,
                          const std::vector<RiskEvidence>& evidence) {
  RiskResult out;
  out.scenario = risk_scenario(base, o);
  out.rule = stuck_rule(out.scenario);
  out.runs = risk_runs(base, o);
  out.scenario_runs = base.runs;
  const Scenario& s = out.scenario;
  if (evidence.size() != o.loads.size())
    throw InputError(
        fmt::format("risk: evidence for {} loads, not {}", evidence.size(), o.loads.size()));
  for (size_t i = 0; i < o.loads.size(); ++i) {
    const AtLoad a = at_load(s, o.loads[i]);
    const RiskEvidence& e = evidence[i];
    if (e.calm.size() != size_t(out.runs) || e.pushed.size() != (a.push ? size_t(out.runs) : 0))
      throw InputError(fmt::format("risk: load {}: {} runs of evidence, not {}",
                                   number_text(o.loads[i]), e.calm.size(), out.runs));
    RiskLevel level;
    level.load = o.loads[i];
    level.demand_per_s = a.demand_per_s;
    estimate_entering(level, e.calm, s.seed);
    if (a.push)
      estimate_leaving(level, e.pushed, s.incident_end_s());
    else
      estimate_leaving(level, e.calm, 0);
    if (o.exact) {
      throw_if_cancelled(o.cancelled);  // a chain takes seconds: not for a caller gone
      add_exact(level, a.quiet);
    }
    if (o.splitting) level.rare = rare_tip_of(e.split, out.rule, o, a.quiet.horizon_s);
    out.levels.push_back(std::move(level));
  }
  return out;
}

RiskResult assess_risk(const Scenario& base, const RiskOptions& o) {
  const auto runs = static_cast<size_t>(risk_runs(base, o));
  return summarize_risk(base, o, gather_risk(base, o, 0, runs));
}

Hysteresis hysteresis_of(const RiskResult& r) {
  Hysteresis h;
  for (const RiskLevel& l : r.levels) {
    if (l.enter_within_horizon.p >= 0.5 && (!h.tipping_load || l.load < *h.tipping_load))
      h.tipping_load = l.load;
    if (l.pushed.k > 0 && l.leave_within_horizon.p >= 0.5 &&
        (!h.recovery_load || l.load > *h.recovery_load))
      h.recovery_load = l.load;
  }
  return h;
}

std::vector<double> risk_map_values(const SweepAxis& knob, const RiskOptions& o) {
  if (o.splitting)
    throw InputError("risk: splitting estimates one scenario's loads, not a map (--vary)");
  // Every cell takes the options' runs and horizon: a knob on them would
  // change nothing, or disagree with the evidence gathered.
  if (knob.path == "runs")
    throw InputError("risk --vary runs: the runs per cell are --runs, one for every cell");
  if (knob.path == "horizon_s" && o.horizon_s > 0)
    throw InputError("risk --vary horizon_s: --horizon " + number_text(o.horizon_s) +
                     " sets every cell's horizon; leave --horizon out to vary it");
  const double count = knob.point_count();
  if (!(count >= 1 && count <= static_cast<double>(kRiskMapValues)))
    throw InputError(fmt::format("risk --vary {}: {} values; a map takes 1 to {}", knob.path,
                                 number_text(count), kRiskMapValues));
  return knob.values();
}

namespace {

// Each value of the knob as its own scenario; cells without the exact chain
// (a chain per cell would cost more than the map's runs).
std::vector<Scenario> map_cells(const Scenario& s, const SweepAxis& knob, RiskOptions& cells) {
  cells.exact = false;
  std::vector<Scenario> out;
  for (double v : risk_map_values(knob, cells)) {
    Scenario one = s;
    set_key(one, knob.path, KeyValue{v});
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace

std::vector<std::vector<RiskEvidence>> gather_risk_map(const Scenario& s, const SweepAxis& knob,
                                                       const RiskOptions& o, size_t first,
                                                       size_t count) {
  RiskOptions cells = o;
  std::vector<std::vector<RiskEvidence>> out;
  for (const Scenario& one : map_cells(s, knob, cells))
    out.push_back(gather_risk(one, cells, first, count));
  return out;
}

RiskMap summarize_risk_map(const Scenario& s, const SweepAxis& knob, const RiskOptions& o,
                           const std::vector<std::vector<RiskEvidence>>& evidence) {
  RiskMap map;
  map.knob = knob;
  map.operating_value = get_number(s, knob.path);
  RiskOptions cells = o;
  const std::vector<Scenario> scenarios = map_cells(s, knob, cells);
  if (evidence.size() != scenarios.size())
    throw InputError(fmt::format("risk: evidence for {} values of {}, not {}", evidence.size(),
                                 knob.path, scenarios.size()));
  for (size_t v = 0; v < scenarios.size(); ++v)
    map.rows.push_back(summarize_risk(scenarios[v], cells, evidence[v]));
  return map;
}

RiskMap assess_risk_map(const Scenario& s, const SweepAxis& knob, const RiskOptions& o) {
  const auto runs = static_cast<size_t>(risk_runs(s, o));
  return summarize_risk_map(s, knob, o, gather_risk_map(s, knob, o, 0, runs));
}

}  // namespace retrystorm
