// One function per command over a validated scenario, shared by the command
// line (src/cli) and the HTTP API (src/server): each checks the request's cost
// before any work, then runs. The front ends parse their own syntax into
// these requests and format the answers.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/ladder.hpp"
#include "analysis/report.hpp"
#include "analysis/risk.hpp"
#include "analysis/run_montecarlo.hpp"
#include "analysis/session_report.hpp"
#include "analysis/step_down.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "engines/montecarlo.hpp"
#include "formats/risk_shard.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm::app {

// What a request may cost (analysis/cost.hpp), and how to stop it early.
struct CostBudget {
  CostLimits limits;
  std::string hint;       // appended to a refusal, e.g. "; --allow-large allows more"
  CancelCheck cancelled;  // polled between runs by ladders, tipping points, sweeps
};

struct RunOptions {
  ReportOptions report;     // the views of a per-step run
  bool montecarlo = false;  // per-step engines: also the replications (runs > 1)
  // Replications allowed, 0: any. Only the server sets one ("the server's limit").
  int max_runs = 0;
  sessions::SessionSink* session_log = nullptr;  // the reported session run's events
};

// A run's answer: the session report, or the per-step report with its Monte Carlo.
struct RunAnswer {
  std::optional<SessionReport> sessions;
  std::optional<RunReport> report;
  std::optional<MonteCarloResult> montecarlo;
};

// A run adds its Monte Carlo replications when its engine draws random
// numbers and `runs` is above 1 (a fluid run's replications are one run
// again: the key is ignored there, as the warning says). The command line,
// the server and the Python package all ask this.
bool montecarlo_wanted(const Scenario& s);

// Refuses, before any work, more replications than `limit` (0: any).
void check_runs(const Scenario& s, int limit);
// InputError when a run of `s` costs more than the budget (run() checks it
// too; the command line checks first, before writing its logs).
// `report`: the run's report too (its advice trials and tipping point), not
// a batch of replications alone.
void check_run_cost(const Scenario& s, const CostBudget& budget, bool report = true);
RunAnswer run(const Scenario& s, const RunOptions& options, const CostBudget& budget);
// run()'s answer with `runs` replications whose figures and goodput ran
// elsewhere (montecarlo_part, in order): rs.distributed.run. The report runs
// here. Per-step engines only: the session model's Monte Carlo is refused.
RunAnswer run_of_parts(const Scenario& s, const RunOptions& options, const CostBudget& budget,
                       const std::vector<Replication>& all);
// The JSON answer of `run --format json` and POST /api/run.
nlohmann::json run_answer_json(const RunAnswer& answer);

// What a run answer leaves out when the page asks for it later: the decision
// trace, and the advice with the tipping point (per-step engines only).
std::vector<TraceEntry> trace(const Scenario& s, const CostBudget& budget);
RunReport advice(const Scenario& s, TippingCache* cache, const CostBudget& budget);

std::vector<LadderResult> ladder(const Scenario& s, const CostBudget& budget);
// grid_s <= 0: the scenario's grid (tipping.grid_s, else ten steps).
TippingResult tipping(const Scenario& s, double grid_s, const CostBudget& budget);
// How likely and how long (docs/risk.md): the agent engine's replications
// at each load, the exact chain beside them.
RiskResult risk(const Scenario& s, RiskOptions options, const CostBudget& budget);
// One shard's replications [first, first + count) of a risk request priced,
// before any of them starts: `count` runs per load (and knob value) and the
// shard's share of the splitting replicas (split_range, as gather_risk runs
// them); no exact chain, which merge solves (check_risk_merge).
void check_risk_shard(const RiskRequest& r, size_t first, size_t count, const CostBudget& budget);
// `count` runs per load (and knob value), every splitting replica and the
// exact chains: with count all of its runs, the whole request, priced before
// any task where the parts run elsewhere and are combined here
// (rs.distributed.risk).
void check_risk_shard(const RiskRequest& r, size_t count, const CostBudget& budget);
// What merging a risk's shards costs: its exact chains, priced.
void check_risk_merge(const RiskRequest& r, const CostBudget& budget);

// The step-down experiment (docs/risk.md, "The hysteresis loop"): its runs
// priced before any of them starts.
StepDown step_down(const Scenario& s, StepDownOptions options, const CostBudget& budget);
RiskMap risk_map(const Scenario& s, const SweepAxis& knob, RiskOptions options,
                 const CostBudget& budget);

// InputError when the range of the sweep that options select costs more than
// the budget (sweep() checks it too; rs.sweep checks the whole grid once).
// `each`: the points' own prices, as sweep_cost gives them.
void check_sweep_cost(const Scenario& s, const std::vector<SweepAxis>& axes,
                      const SweepOptions& options, const CostBudget& budget,
                      std::vector<double>* each = nullptr);
std::vector<SweepRow> sweep(const Scenario& s, const std::vector<SweepAxis>& axes,
                            SweepOptions options, const CostBudget& budget);
// The number of points of a sweep's grid (axes, runs and seed checked; the
// points are validated when the sweep runs). Shards and Dask tasks cut it.
size_t sweep_points(const Scenario& s, const std::vector<SweepAxis>& axes, SweepOptions options);

}  // namespace retrystorm::app
