// The step-down experiment (docs/risk.md, "The hysteresis loop"): the load
// climbs step by step and then comes back down the same steps; read with
// the stuck rule, the load at which the service became stuck going up and
// the load at which it was healthy again coming down. Between the two it
// stays where it is: the loop a metastable service draws.
#pragma once

#include <optional>
#include <vector>

#include "analysis/risk.hpp"
#include "engines/run_result.hpp"
#include "model/scenario.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

struct StepDownOptions {
  double from = 0.5;  // the first and last load, a multiple of demand.rate_per_s
  double to = 1.5;    // the top load
  double step = 0.1;
  double hold_s = 0;  // each load's time; 0: 40 timeouts, at least 60 s (whole steps)
  int runs = 0;       // agent engine: 0 = the scenario's runs above 1, else 10; fluid: 1
  unsigned threads = 0;
  int max_steps = RunLimits{}.max_steps;  // the staircase's run at most (the server's is lower)
  CancelCheck cancelled;
};

// One run of the staircase: where it first became stuck going up, whether
// it was stuck when the top load ended, and where it was healthy again
// coming down.
struct StepDownRun {
  double seed = 0;
  std::optional<double> tipped_s, tipped_load;
  bool stuck_at_top = false;
  std::optional<double> recovered_s, recovered_load;  // on the way down
};

struct StepDown {
  Scenario scenario;  // as run: the staircase as demand.profile, no incident
  StuckRule rule;
  std::vector<double> loads;  // one per hold: up, then down
  double hold_s = 0;
  std::vector<StepDownRun> runs;
  std::optional<double> tipping_load, recovery_load;  // medians over the runs that did
  RunResult first;                                    // run 0, for its chart
};

// The scenario the staircase runs (InputError for what it cannot: a graph,
// a demand profile of its own, loads out of order or range, too many holds).
Scenario step_down_scenario(const Scenario& s, const StepDownOptions& o);
int step_down_runs(const Scenario& s, const StepDownOptions& o);
StepDown run_step_down(const Scenario& s, const StepDownOptions& o);

constexpr int kStepDownHolds = 1000;  // loads up and down, at most

}  // namespace retrystorm
