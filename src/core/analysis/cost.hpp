// What a request costs before it runs: CPU seconds and peak memory, estimated
// from the scenario alone in microseconds, so oversized requests are refused
// before anything is allocated. The command line and the server use the same
// estimates and the same limits (docs/limits.md).
#pragma once

#include <string>
#include <vector>

#include "analysis/sweep.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

struct Cost {
  double seconds = 0;  // CPU seconds on one core (a 2020s laptop core)
  double bytes = 0;    // peak memory of the request
  std::string keys;    // the keys that drive it, "horizon_s, step_s, client.retries"
  std::string size;    // what drives it, "20000 steps x 10000 attempts"

  Cost& operator+=(const Cost& other);  // one after the other: seconds add, memory peaks
};

struct CostLimits {
  double max_seconds = 60;                  // one request: about a minute of one core
  double max_bytes = 1024.0 * 1024 * 1024;  // one request: 1 GiB
};

// What the command line allows with --allow-large: any time, and at most
// this much memory (the server never allows more than CostLimits{}).
CostLimits large_cost_limits();

// One `run` (or /api/run) of the scenario's engine, with its report: the
// Monte Carlo replications of `runs`, the runs of the defenses its advice
// tries, and the tipping point when the report includes one. Without
// `report`: the replications alone (a batch of the page's band).
Cost run_cost(const Scenario& s, bool report = true);
// One run of the engine alone (one replication): what ladders, sweeps and
// tipping points repeat.
Cost engine_run_cost(const Scenario& s);
// How many runs of `s` (or of small changes to it) a report may make at once:
// every core, but only as many as fit together in one request's memory
// (CostLimits{}.max_bytes), so running them side by side never lets a
// request hold more than a single allowed run may.
unsigned runs_at_once(const Scenario& s);
// A Monte Carlo's replications priced side by side: as many as fit in one
// request's memory beside its report and its series, at most `runs`, never
// fewer than one. Not the machine's cores, so that a request is priced, and
// accepted, alike everywhere; run_montecarlo runs at most this many at once
// (fewer on fewer cores).
unsigned replications_at_once(const Scenario& s);
Cost ladder_cost(const Scenario& s);
// grid_s <= 0: the scenario's grid, as tipping_point().
Cost tipping_cost(const Scenario& s, double grid_s = 0);
// With the options run_sweep gets (its threads; grids above its max_runs are
// left to it, and it names that limit). `each`, when given, receives the
// range's points' own prices when it was priced point by point (at most
// kPricedSweepPoints), and is left empty otherwise: a caller that also cuts
// the grid by cost need not price it again.
Cost sweep_cost(const Scenario& base, const std::vector<SweepAxis>& axes,
                const SweepOptions& options = {}, std::vector<double>* each = nullptr);

// Each point's estimated CPU seconds (its replications included), in grid
// order, for the whole grid whatever range the options select: what shards
// and Dask tasks are balanced by (cost_balanced_ranges). It depends on the
// scenario and the axes only, never on the machine. Throws InputError for
// axes sweep_grid refuses.
std::vector<double> sweep_point_seconds(const Scenario& base, const std::vector<SweepAxis>& axes,
                                        const SweepOptions& options = {});
// A sweep's range (the whole grid, a shard, a Dask task) of up to this many
// points is priced point by point, a larger one by the costliest corner of
// the grid times its points (an upper bound).
inline constexpr size_t kPricedSweepPoints = 200'000;

// InputError when the cost is above a limit, naming the keys that drive it,
// the estimate and the limit. `what` names the request ("run", "ladder");
// `hint` follows the limit ("; --allow-large raises it").
void check_cost(const Cost& cost, const CostLimits& limits, const std::string& what,
                const std::string& hint = "");

// "1.2 GiB", "340 MiB", "12 KiB".
std::string bytes_text(double bytes);

}  // namespace retrystorm
