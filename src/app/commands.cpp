#include "app/commands.hpp"

#include <algorithm>
#include <cmath>

#include "engines/engine.hpp"
#include "formats/result_json.hpp"
#include "formats/session_report.hpp"
#include "text/number.hpp"

namespace retrystorm::app {

namespace {

void check(const Cost& cost, const CostBudget& budget, const std::string& what) {
  check_cost(cost, budget.limits, what, budget.hint);
}

}  // namespace

bool montecarlo_wanted(const Scenario& s) {
  return engine_facts(s).random && s.runs > 1;
}

void check_runs(const Scenario& s, int limit) {
  if (limit > 0 && s.runs > limit)
    throw InputError("runs: " + std::to_string(s.runs) + " replications; the server's limit for " +
                     "engine " + engine_name(s.engine) + " is " + std::to_string(limit) +
                     " (use the command line for more)");
}

void check_run_cost(const Scenario& s, const CostBudget& budget, bool report) {
  check(run_cost(s, report), budget, "run");
}

RunAnswer run(const Scenario& s, const RunOptions& o, const CostBudget& budget) {
  check_run_cost(s, budget);
  RunAnswer a;
  if (!engine_facts(s).run) {  // sessions: the session report, its own Monte Carlo
    check_runs(s, o.max_runs);
    a.sessions = make_session_report(s, o.session_log);
    return a;
  }
  if (!o.montecarlo) {
    a.report = make_report(s, o.report);
    return a;
  }
  check_runs(s, o.max_runs);
  // Replication 0 is the run shown: no second run.
  a.montecarlo = run_montecarlo(s);
  a.report = report_of_run(s, std::move(a.montecarlo->first), o.report);
  return a;
}

RunAnswer run_of_parts(const Scenario& s, const RunOptions& o, const CostBudget& budget,
                       const std::vector<Replication>& all) {
  if (!engine_facts(s).run)
    throw InputError(
        "engine: sessions runs its Monte Carlo on one machine; only the per-step "
        "engines (fluid, agent) split theirs");
  if (all.size() != static_cast<size_t>(replication_count(s, 0)))
    throw InputError("runs: " + std::to_string(s.runs) + " replications, but " +
                     std::to_string(all.size()) + " were given");
  // Parts of another scenario or build would index past their figures.
  size_t figures = montecarlo_figures(Metrics{}).size();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].figures.size() != figures || all[i].band.size() != all[0].band.size())
      throw InputError("replication " + std::to_string(i) + ": " +
                       std::to_string(all[i].figures.size()) + " figures and " +
                       std::to_string(all[i].band.size()) + " steps, not the " +
                       std::to_string(figures) + " figures and steps of replication 0");
  Scenario one = s;
  one.runs = 1;  // the replications ran elsewhere: here, the report alone
  check_run_cost(one, budget);
  RunAnswer a;
  a.report = make_report(s, o.report);
  a.montecarlo = montecarlo_of_parts(s, all);
  return a;
}

nlohmann::json run_answer_json(const RunAnswer& a) {
  if (a.sessions) return session_json(*a.sessions);
  nlohmann::json j = run_json(*a.report);
  if (a.montecarlo) j["montecarlo"] = montecarlo_json(*a.montecarlo);
  return j;
}

std::vector<TraceEntry> trace(const Scenario& s, const CostBudget& budget) {
  check(engine_run_cost(s), budget, "trace");
  return decision_trace(run_engine(s));
}

RunReport advice(const Scenario& s, TippingCache* cache, const CostBudget& budget) {
  check(run_cost(s), budget, "advice");
  return make_report(s, {.trace = false, .cache = cache});
}

std::vector<LadderResult> ladder(const Scenario& s, const CostBudget& budget) {
  check(ladder_cost(s), budget, "ladder");
  return run_ladder(s, budget.cancelled);
}

TippingResult tipping(const Scenario& s, double grid_s, const CostBudget& budget) {
  // The range of the key tipping.grid_s: a grid far beyond any horizon
  // (1e300) would claim that every incident length recovers.
  const double max_grid_s = key_or_throw("tipping.grid_s").max;
  if (!(grid_s >= 0 && grid_s <= max_grid_s))  // NaN and infinity too, from Python or HTTP
    throw InputError("grid_s: " + to_string(KeyValue{grid_s}) +
                     " is not a grid; give seconds above 0 up to " + number_text(max_grid_s) +
                     ", or 0 for the default grid");
  check(tipping_cost(s, grid_s), budget, "tipping");
  return tipping_point(s, grid_s, budget.cancelled);
}

namespace {

// Every load's replications, twice with a push; the loudest load sets the
// price of each.
// The exact chain: up to about 0.3 ms per state on this project's chains
// (measured 3.9 to 8.5 s for 29,799 states on a loaded 2-core machine),
// stationary distribution, two hitting times and the relaxation time together.
constexpr double kExactChainSecondsPerState = 3e-4;
double exact_chain_seconds(const Scenario& one, const RiskOptions& options) {
  double seconds = 0;
  std::string why_not;
  if (options.exact)
    for (double load : options.loads)
      if (auto p = chain_params(one, load, why_not))
        seconds += kExactChainSecondsPerState * markov::chain_states(*p);
  return seconds;
}

// Splitting's walks at every load for `replicas` of its independent runs,
// at most: each stage's walks, each a run of the horizon.
double split_walks(const RiskOptions& options, int replicas) {
  if (!options.splitting) return 0;
  RiskOptions share = options;
  share.split_runs = replicas;
  return split_engine_runs(share) * double(options.loads.size());
}

// What runs where is priced: the whole request runs every splitting replica
// and solves the exact chains; a shard runs its share of the replicas and
// no chain (merge solves them, check_risk_merge).
struct RiskWork {
  int split_replicas = 0;
  bool chains = true;
};

RiskWork whole_request(const RiskOptions& options) {
  return {options.split_runs, true};
}

Cost risk_cost(const Scenario& s, const RiskOptions& options, double maps, const RiskWork& work) {
  const Scenario one = risk_scenario(s, options);
  const bool pushed = scripted_push(one);
  double loudest = 1;
  for (double load : options.loads) loudest = std::max(loudest, load);
  Scenario priced = one;
  priced.demand.rate_per_s *= loudest;
  Cost cost = engine_run_cost(priced);
  const double runs = risk_runs(s, options) * double(options.loads.size()) * (pushed ? 2 : 1);
  cost.seconds *= runs;
  cost.seconds *= maps;
  const double exact_s = maps == 1 && work.chains ? exact_chain_seconds(one, options) : 0;
  cost.seconds += exact_s;
  const double walks = split_walks(options, work.split_replicas);
  cost.seconds += walks * engine_run_cost(priced).seconds;
  cost.size = number_text(runs * maps + walks) + " runs of " + cost.size;
  if (exact_s > 0)
    cost.size += ", and exact chains of about " + number_text(std::round(exact_s)) +
                 " s (--no-exact, or exact false, leaves them out)";
  return cost;
}

// A map's cells, each checked (as its run would be) and priced at its own
// value, before any runs: the largest value priced every cell, where a
// smaller step_s or horizon costs more, and a bad cell failed after the
// others had run.
Cost risk_map_cost(const Scenario& s, const SweepAxis& knob, RiskOptions options) {
  options.exact = false;  // a map has no exact chains
  const std::vector<double> values = risk_map_values(knob, options);
  Cost total, dearest;
  double dearest_value = values.front();
  for (double value : values) {
    Scenario cell = s;
    set_key(cell, knob.path, KeyValue{value});
    // Throws what the cell's runs would.
    const Cost cost = risk_cost(cell, options, 1, whole_request(options));
    if (cost.seconds > dearest.seconds) dearest = cost, dearest_value = value;
    total += cost;
  }
  total.keys = dearest.keys.find(knob.path) == std::string::npos
                   ? knob.path + (dearest.keys.empty() ? "" : ", " + dearest.keys)
                   : dearest.keys;
  total.size = number_text(double(values.size())) + " cells of " + knob.path + ", the dearest (" +
               number_text(dearest_value) + ") " + dearest.size;
  return total;
}

}  // namespace

RiskResult risk(const Scenario& s, RiskOptions options, const CostBudget& budget) {
  check(risk_cost(s, options, 1, whole_request(options)), budget, "risk");
  if (budget.cancelled) options.cancelled = budget.cancelled;
  return assess_risk(s, options);
}

void check_risk_shard(const RiskRequest& r, size_t first, size_t count, const CostBudget& budget) {
  RiskOptions o = r.options;
  o.runs = static_cast<int>(std::max<size_t>(count, 1));
  if (r.knob) {  // a map has no splitting and no chains
    check(risk_map_cost(r.scenario, *r.knob, o), budget, "risk");
    return;
  }
  // The replicas gather_risk runs for this range, from the request's runs.
  const auto total = static_cast<size_t>(risk_runs(r.scenario, r.options));
  const int replicas =
      r.options.splitting ? split_range(first, count, total, r.options.split_runs).second : 0;
  check(risk_cost(r.scenario, o, 1, {replicas, false}), budget, "risk");
}

void check_risk_shard(const RiskRequest& r, size_t count, const CostBudget& budget) {
  RiskOptions o = r.options;
  o.runs = static_cast<int>(std::max<size_t>(count, 1));
  check(r.knob ? risk_map_cost(r.scenario, *r.knob, o)
               : risk_cost(r.scenario, o, 1, whole_request(o)),
        budget, "risk");
}

void check_risk_merge(const RiskRequest& r, const CostBudget& budget) {
  Cost cost;
  if (!r.knob) cost.seconds = exact_chain_seconds(risk_scenario(r.scenario, r.options), r.options);
  cost.size = "the exact chains of " + number_text(double(r.options.loads.size())) + " loads";
  check(cost, budget, "merge");
}

StepDown step_down(const Scenario& s, StepDownOptions options, const CostBudget& budget) {
  const Scenario one = step_down_scenario(s, options);
  Cost cost = engine_run_cost(one);
  const double runs = step_down_runs(s, options);
  cost.seconds *= runs;
  cost.size = number_text(runs) + " runs of " + cost.size;
  check(cost, budget, "step-down");
  if (budget.cancelled) options.cancelled = budget.cancelled;
  return run_step_down(s, options);
}

RiskMap risk_map(const Scenario& s, const SweepAxis& knob, RiskOptions options,
                 const CostBudget& budget) {
  check(risk_map_cost(s, knob, options), budget, "risk");
  if (budget.cancelled) options.cancelled = budget.cancelled;
  return assess_risk_map(s, knob, options);
}

void check_sweep_cost(const Scenario& s, const std::vector<SweepAxis>& axes,
                      const SweepOptions& options, const CostBudget& budget,
                      std::vector<double>* each) {
  check(sweep_cost(s, axes, options, each), budget, "sweep");
}

std::vector<SweepRow> sweep(const Scenario& s, const std::vector<SweepAxis>& axes,
                            SweepOptions options, const CostBudget& budget) {
  check_sweep_cost(s, axes, options, budget);
  if (budget.cancelled) options.cancelled = budget.cancelled;
  return run_sweep(s, axes, options);
}

size_t sweep_points(const Scenario& s, const std::vector<SweepAxis>& axes, SweepOptions options) {
  options.validate_grid = false;
  return sweep_grid(s, axes, options).points;
}

}  // namespace retrystorm::app
