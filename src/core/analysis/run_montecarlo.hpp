// Monte Carlo of a per-step engine run (`run --runs N`): the skeleton of
// engines/montecarlo.hpp over the figures of Metrics and the goodput band.
#pragma once

#include <vector>

#include "analysis/metrics.hpp"
#include "engines/montecarlo.hpp"
#include "engines/run_result.hpp"

namespace retrystorm {

struct MonteCarloResult {
  int runs = 0;
  double seed = 0;
  Summaries metrics;                  // metric_fields()' Monte Carlo figures, in their order
  std::vector<Metrics> replications;  // by replication
  RunResult first;                    // replication 0 (the run `run` shows)
  Band goodput;                       // goodput (served on time) per step: the page's band
};

// Runs `runs` replications (default: the scenario's `runs`) of a validated
// scenario; threads = 0: as many at once as run_cost priced
// (replications_at_once), at most one a core.
MonteCarloResult run_montecarlo(const Scenario& s, int runs = 0, unsigned threads = 0);

// The figures of one replication that Monte Carlo summarises.
std::vector<Figure> montecarlo_figures(const Metrics& m);
// What Monte Carlo keeps of one replication: its figures and its goodput.
Replication replication_of(const Metrics& m, const RunResult& run);

// Monte Carlo in parts (rs.distributed.run, docs/distributed.md): the
// figures and goodput of replications first .. first + count - 1 of a
// validated scenario, and the summaries and band of all `runs` of them
// (given in replication order): run_montecarlo's runs, seed, metrics and
// goodput, byte for byte, wherever each part ran. `first` and
// `replications` stay empty.
std::vector<Replication> montecarlo_part(const Scenario& s, size_t first, size_t count,
                                         unsigned threads = 0);
MonteCarloResult montecarlo_of_parts(const Scenario& s, const std::vector<Replication>& all);

}  // namespace retrystorm
