#include "analysis/cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include "analysis/ladder.hpp"
#include "analysis/summary.hpp"
#include "analysis/tipping.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "engines/fluid.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "policies/backoff.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// Measured on a 2-core build machine, release build, one core; the peak
// memory of the largest allowed runs against these estimates is in
// bench/cost_bench.cpp.
constexpr double kFluidStepS = 150e-9;   // rules, series, metrics of one step
constexpr double kFluidColumnS = 4e-9;   // one attempt number in one step
constexpr double kFluidLandingS = 2e-9;  // one landing walked in one step
constexpr double kReportBytesPerStep =
    3072;  // a run's report: series, trace, its JSON and text (measured: 2.3 kB)
// One event of the agent engine: BM_AgentEventRate runs 21-25 M events/s
// (40-48 ns) on the build machine; 50 ns leaves room for a slower one
// (tests/cost_calibration_test.cpp holds the estimates to measured runs).
constexpr double kAgentEventS = 50e-9;
constexpr double kAgentEventsPerAttempt = 3;
constexpr double kAgentBytesPerAttempt = 120;  // call, job, timer and heap entry
constexpr double kSessionEventS = 400e-9;      // one event of the session model
constexpr double kSessionAdviceRuns = 3;       // the changes a session report tries
constexpr double kSessionBytes = 600;          // a session's row and its items
constexpr double kSessionBytesPerStep = 160;   // occupancy buckets, series, charts
constexpr double kBaseBytes = 1 << 20;         // a run's fixed part (scenario, tables)
// A scenario copy, as ladders and sweeps hold them; a ladder's answer holds
// each row's scenario with the whole ladder (JSON: measured 6.6 GB and 23 s
// for 2,000 rows), so its cost grows with rows x rows.
constexpr double kScenarioBytes = 2000, kLadderRowBytes = 1700, kLadderRowS = 6e-6;

// Six significant digits, three from a million on ("1.2e+07 points").
std::string number(double v) {
  return text::general_text(v, v < 1e6 ? 6 : 3);
}

unsigned cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// Steps of the rolling ring the window and ratio_ttl budgets keep.
double budget_ring_steps(const Scenario& s) {
  const Budget& b = s.client.budget;
  if (b.kind == BudgetKind::window) return std::round(b.window_s / s.step_s);
  if (b.kind == BudgetKind::ratio_ttl) return std::round(b.ttl_s / s.step_s);
  return 0;
}

std::string retry_keys(const Scenario& s) {
  return s.client.stack_retries.empty() ? "client.retries, client.layers" : "client.stack_retries";
}

Cost fluid_cost(const Scenario& s) {
  FluidShape f = fluid_shape(s);
  double steps = static_cast<double>(f.steps), attempts = f.attempts;
  // Queued cohorts: one per attempt number and step, kept until served
  // (worst case: none is); shedding drops them after a timeout.
  double window = s.server.shed_abandoned ? std::min(steps, s.timeout_steps() + 2.0) : steps;
  double cohorts = window * attempts;
  Cost c;
  c.bytes = kBaseBytes + 96 * steps + 8.0 * static_cast<double>(f.ring_rows) * (attempts + 1) +
            16 * f.landings + 32 * cohorts + 16 * budget_ring_steps(s);
  c.seconds = steps * (kFluidStepS + kFluidColumnS * attempts + kFluidLandingS * f.landing_walk);
  c.keys = "horizon_s, step_s, " + retry_keys(s) + ", client.backoff.*";
  c.size = number(steps) + " steps x " + number(attempts) + " attempt numbers in reach";
  return c;
}

// Attempts one call of a layer can make inside the horizon: its attempts go
// one after another, each taking at least `fail_s` plus its backoff.
double ladder_attempts(const Scenario& s, int retries, double fail_s) {
  double sent = 0;
  for (int a = 1; a <= retries; ++a) {
    sent += fail_s + backoff_delay(s.client.backoff, a).low_s;
    if (sent >= s.horizon_s) return a;
  }
  return retries + 1;
}

// Attempts one request can make at the dependency inside the horizon. Each
// attempt takes at least the shortest timeout (or nothing, when a queue
// limit rejects it) plus its backoff. With layers the ladders run at once,
// not one after another: an outer retry starts a new inner ladder while the
// one it gave up on goes on (docs/agent-engine.md), so each layer's ladder
// multiplies the attempts below it.
double agent_attempts(const Scenario& s) {
  std::vector<double> timeouts = layer_timeouts(s);
  double fail_s =
      s.server.queue_limit > 0 ? 0 : *std::min_element(timeouts.begin(), timeouts.end());
  double attempts = 1;
  for (int retries : s.layer_retries()) attempts *= ladder_attempts(s, retries, fail_s);
  return attempts;
}

// Attempts one user request can make in all: in a graph, at every service
// in the worst case (each call's attempts multiplied along the paths, as
// lint reports them); else those of the client's stack.
double request_attempts(const Scenario& s) {
  if (s.graph.empty()) return agent_attempts(s);
  const std::vector<double> worst = worst_case_attempts(s);
  return std::accumulate(worst.begin(), worst.end(), 0.0);
}

Cost agent_cost(const Scenario& s) {
  double requests = s.requests_bound();
  double attempts = requests * request_attempts(s);
  double steps = s.steps();
  Cost c;
  // Every attempt may still be waiting at the end (a queue that never
  // drains keeps abandoned ones): memory is bounded by all of them.
  c.bytes = kBaseBytes + 96 * steps + kAgentBytesPerAttempt * attempts +
            16 * budget_ring_steps(s) * static_cast<double>(s.retrying_layers());
  c.seconds = attempts * kAgentEventsPerAttempt * kAgentEventS + steps * kFluidStepS;
  c.keys = std::string(s.demand.clients > 0 ? "demand.clients, demand.think_s"
                                            : "demand.rate_per_s, incident.demand_factor") +
           ", horizon_s, " + (s.graph.empty() ? retry_keys(s) : "calls[].retries, calls[].count");
  c.size = number(requests) + " requests, up to " + number(attempts) + " attempts";
  return c;
}

// Pings, notifications and anchors over the run, from the rates as given
// (day factors at their largest).
double session_items(const Scenario& s) {
  double days = std::ceil(s.horizon_s / text::kDay);
  std::vector<double> rates, factors;
  std::string bad;
  parse_number_list(s.items.ping_rates_per_h, rates, bad);
  parse_number_list(s.items.ping_day_factors, factors, bad);
  double per_day = 1 + s.items.notifications_per_day;
  double factor = factors.empty() ? 1 : *std::max_element(factors.begin(), factors.end());
  for (double r : rates) per_day += r * factor;
  return days * per_day + 100000;  // items.initial_queue holds at most 100,000
}

Cost sessions_cost(const Scenario& s) {
  const auto& x = s.sessions;
  double span = s.horizon_s - x.start_s;
  double sessions = std::ceil(span / x.poll_s) * x.max_deliveries;
  double rounds = x.batch_cap + 4.0 + (s.client.retries + 1.0);  // scan, items, ..., API ladder
  // An item round ends when its work budget runs out: a session working
  // until its deadline (or the horizon) has that many more rounds.
  const double worked_s = s.client.deadline_s > 0 ? std::min(s.client.deadline_s, span) : span;
  rounds += worked_s / x.round_min_s;
  double items = session_items(s);
  double buckets = span / s.step_s;
  double runs = std::max(1, s.runs);
  Cost c;
  c.bytes = kBaseBytes + kSessionBytes * (sessions + items) + kSessionBytesPerStep * buckets +
            8 * buckets * runs;
  c.seconds = runs * (sessions * rounds + items) * kSessionEventS;
  c.keys =
      "horizon_s, sessions.start_s, sessions.poll_s, sessions.batch_cap, sessions.round_min_s, "
      "step_s, runs, items.ping_rates_per_h";
  c.size =
      number(sessions) + " sessions x " + number(rounds) + " rounds x " + number(runs) + " runs";
  return c;
}

}  // namespace

Cost& Cost::operator+=(const Cost& other) {
  seconds += other.seconds;
  bytes = std::max(bytes, other.bytes);
  return *this;
}

CostLimits large_cost_limits() {
  CostLimits l;
  l.max_seconds = INFINITY;
  l.max_bytes = 8.0 * 1024 * 1024 * 1024;  // 8 GiB: beyond it a laptop swaps or dies
  return l;
}

Cost engine_run_cost(const Scenario& s) {
  switch (s.engine) {
    case Engine::sessions:
      return sessions_cost(s);
    case Engine::agent:
      return agent_cost(s);
    case Engine::fluid:
      break;
  }
  return fluid_cost(s);
}

unsigned runs_at_once(const Scenario& s) {
  double fit = std::floor(CostLimits{}.max_bytes / std::max(1.0, engine_run_cost(s).bytes));
  return static_cast<unsigned>(std::clamp<double>(fit, 1, cores()));
}

// The report of a run (one, of replication 0) and a goodput series a replication.
double montecarlo_fixed_bytes(const Scenario& s) {
  const double steps = s.steps();
  return kReportBytesPerStep * steps + 8 * steps * std::max(1, s.runs);
}

unsigned replications_at_once(const Scenario& s) {
  const double room = CostLimits{}.max_bytes - montecarlo_fixed_bytes(s);
  const double fit = std::floor(room / std::max(1.0, engine_run_cost(s).bytes));
  return static_cast<unsigned>(std::clamp<double>(fit, 1, std::max(1, s.runs)));
}

Cost run_cost(const Scenario& s, bool report) {
  Cost c = engine_run_cost(s);
  if (!engine_facts(s).run) {
    // Sessions: its replications are in sessions_cost; the advice tries up
    // to three changes on the same seed, a run each (session_advice.cpp).
    c.seconds += kSessionAdviceRuns * c.seconds / std::max(1, s.runs);
    return c;
  }
  double steps = s.steps();
  if (s.runs > 1 && engine_facts(s).random) {
    // Replications side by side (replications_at_once), a goodput series for
    // each; one report, of replication 0.
    c.bytes = c.bytes * replications_at_once(s) + 8 * steps * s.runs;
    c.seconds *= 1 + s.runs;
    c.keys += ", runs";
  }
  if (!report) return c;  // a batch of replications (the page's band): no report
  c.bytes += kReportBytesPerStep * steps;
  // The report's advice: a run of each defense it tries (try_defenses), each
  // priced as the run itself (a graph's 1,000 trials ran unpriced).
  c.seconds += static_cast<double>(defense_trials(s)) * engine_run_cost(s).seconds;
  // The report's tipping point, when it has one (result_json.cpp: make_report).
  if (tipping_steps(s) <= kReportTippingSteps) c.seconds += tipping_cost(s).seconds;
  return c;
}

Cost ladder_cost(const Scenario& s) {
  Scenario base = s;
  base.ladder = {};  // the rows need not be copied to be priced
  Ladder ladder = ladder_of(s);
  double rows = static_cast<double>(ladder.rows.size());
  Cost c;
  Scenario current = base;
  for (const LadderRow& row : ladder.rows) {
    Scenario next = apply_row(ladder.mode == LadderMode::cumulative ? current : base, row);
    if (ladder.mode == LadderMode::cumulative) current = next;
    c += engine_run_cost(next);
  }
  // Each row keeps its scenario, ladder included, and prints it as JSON.
  c.bytes += rows * (kScenarioBytes + kLadderRowBytes * rows);
  c.seconds += kLadderRowS * rows * rows;
  c.keys = "ladder (its rows), " + engine_run_cost(base).keys;
  c.size = number(rows) + " rows";
  return c;
}

Cost tipping_cost(const Scenario& s, double grid_s) {
  Cost run = engine_run_cost(s);
  double runs = tipping_steps(s, grid_s) / std::max(1, s.steps()) /
                engine_facts(s).step_cost;  // tipping_steps weighs agent steps
  Cost c = run;
  c.seconds = run.seconds * runs;
  c.keys = "the grid (--grid, grid_s or tipping.grid_s), incident.start_s, " + run.keys;
  c.size = number(runs) + " runs of " + run.size;
  return c;
}

namespace {

// The costliest corner of the grid (costs grow with each key in one
// direction): the price of every point of a grid too large to price one by one.
Cost corner_cost(const Scenario& base, const std::vector<SweepAxis>& axes) {
  Cost worst;
  for (size_t corner = 0; corner < (size_t{1} << std::min<size_t>(axes.size(), 10)); ++corner) {
    Scenario s = base;
    try {
      for (size_t i = 0; i < axes.size(); ++i)
        set_key(s, axes[i].path, (corner >> i) & 1 ? axes[i].highest() : axes[i].lowest());
      validate(s);
    } catch (const InputError&) {
      continue;  // run_sweep names it
    }
    Cost c = engine_run_cost(s);
    worst.seconds = std::max(worst.seconds, c.seconds);
    worst.bytes = std::max(worst.bytes, c.bytes);
    worst.keys = c.keys;
    worst.size = c.size;
  }
  return worst;
}

// Points [first, end)'s estimated CPU seconds, each at its own values.
std::vector<double> range_seconds(const Scenario& base, const std::vector<SweepAxis>& axes,
                                  const SweepOptions& options, size_t first, size_t end) {
  SweepOptions whole = options;
  whole.validate_grid = false;
  SweepGrid grid = sweep_grid(base, axes, whole);
  end = std::min(end, grid.points);
  std::vector<double> out(end > first ? end - first : 0);
  double runs = std::max(1, options.runs);
  Scenario point;
  for (size_t i = first; i < end; ++i) {
    sweep_point_into(point, base, axes, grid, i, whole);
    out[i - first] = runs * engine_run_cost(point).seconds;
  }
  return out;
}

}  // namespace

std::vector<double> sweep_point_seconds(const Scenario& base, const std::vector<SweepAxis>& axes,
                                        const SweepOptions& options) {
  return range_seconds(base, axes, options, 0, std::numeric_limits<size_t>::max());
}

Cost sweep_cost(const Scenario& base, const std::vector<SweepAxis>& axes,
                const SweepOptions& options, std::vector<double>* each) {
  if (each) each->clear();
  double points = 1;
  for (const SweepAxis& a : axes) {
    if (a.listed.empty() && (!(a.step > 0) || a.to < a.from)) return {};  // run_sweep names it
    points *= a.point_count();
  }
  if (points > static_cast<double>(options.max_runs)) return {};  // run_sweep names its limit
  // A shard or a Dask task pays for its range only, each point for its
  // replications, and prices only its range: a task of a few points of a
  // large grid spent most of its time pricing the others.
  size_t first = std::min(options.first, static_cast<size_t>(points));
  size_t end = sweep_range_end(static_cast<size_t>(points), options);
  double runs = std::max(1, options.runs);
  Cost worst = corner_cost(base, axes);
  double seconds = worst.seconds * static_cast<double>(end - first) * runs;
  if (end - first <= kPricedSweepPoints) {
    try {  // each point at its own values: a grid is mostly cheaper than its corner
      std::vector<double> priced = range_seconds(base, axes, options, first, end);
      seconds = std::accumulate(priced.begin(), priced.end(), 0.0);
      if (each) *each = std::move(priced);
    } catch (const InputError&) {
      return {};  // run_sweep names it
    }
  }
  double range = static_cast<double>(end - first);
  double workers = std::min<double>(range, options.threads ? options.threads : cores());
  Cost c;
  c.seconds = seconds;
  c.bytes = worst.bytes * workers + range * (2 * kScenarioBytes);  // points, rows, output
  c.keys =
      "vary (the grid's points), " + (worst.keys.empty() ? engine_run_cost(base).keys : worst.keys);
  c.size = number(range) + " points x " + (runs > 1 ? number(runs) + " runs x " : "") + "(" +
           (worst.size.empty() ? engine_run_cost(base).size : worst.size) + " at the costliest)";
  return c;
}

std::string bytes_text(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return text::general_text(bytes, bytes < 10 ? 2 : 3) + " " + units[u];
}

void check_cost(const Cost& cost, const CostLimits& limits, const std::string& what,
                const std::string& hint) {
  bool memory = !(cost.bytes <= limits.max_bytes);  // NaN is refused too
  bool time = !(cost.seconds <= limits.max_seconds);
  if (!memory && !time) return;
  std::string need = memory ? "about " + bytes_text(cost.bytes) + " of memory"
                            : "about " + number(std::ceil(cost.seconds)) + " s of CPU";
  std::string limit = memory ? bytes_text(limits.max_bytes) : number(limits.max_seconds) + " s";
  throw InputError(what + ": " + cost.keys + " make " + cost.size + ", which needs " + need +
                   "; the limit is " + limit + hint + " (docs/limits.md)");
}

}  // namespace retrystorm
