// The Monte Carlo skeleton every driver shares (per-step engines:
// analysis/run_montecarlo.hpp; the session model: analysis/session_metrics.hpp):
// independent replications of one scenario (seed, seed + 1, ...) on the
// thread pool, each figure summarised by its mean and 95% interval.
// Replications are combined in replication order: the same scenario and
// seed give the same bytes whatever the number of threads.
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

struct MetricSummary {
  double mean = 0;  // within [min, max], whatever the rounding of the sum
  double low = 0;   // 95% interval of the mean (Student t), never below the floor
  double high = 0;  // ... nor above the ceiling
  size_t n = 0;     // replications with a value (recovery times can be null)
  // Per seed: the spread the interval of the mean hides.
  double min = 0, median = 0, max = 0;
};
using Summaries = std::vector<std::pair<std::string, MetricSummary>>;

// Per step (or bucket): the 95% interval of the mean of one series over
// the replications (`series[replication][step]`), as a band to draw; the
// series drawn (goodput, sessions in flight) are never negative, so neither
// is the band.
struct Band {
  std::vector<double> low, mean, high;
};
Band band_of(const std::vector<std::vector<double>>& series);

// One figure of one replication; no value when it never happened (a
// recovery that never came, a duration of no session).
struct Figure {
  std::string name;
  std::optional<double> value;
  bool can_be_negative = false;  // a correlation: its interval has no floor
};

// What one replication hands back: its figures (the same names in the same
// order in every replication) and the series its band is drawn from.
struct Replication {
  std::vector<Figure> figures;
  std::vector<double> band;
};

struct Replicated {
  Summaries metrics;  // in the figures' order
  Band band;
};

// The number of replications: `runs`, else the scenario's, at least 1.
int replication_count(const Scenario& s, int runs);

using RunReplication = std::function<Replication(size_t i, const Scenario& replica)>;

// Runs replication i = 0 .. runs - 1 as run_one(i, the scenario with seed
// s.seed + i) on `threads` threads (0 = every core), then summarises each
// figure over the replications that have one.
Replicated replicate(const Scenario& s, int runs, unsigned threads, const RunReplication& run_one);

// The two halves of replicate, for Monte Carlo split across machines
// (rs.distributed.run): replications first .. first + count - 1, in order;
// then the summaries of every replication, given in replication order (the
// same bytes as replicate, wherever each part ran).
std::vector<Replication> run_replications(const Scenario& s, size_t first, size_t count,
                                          unsigned threads, const RunReplication& run_one);
// Refuses replications whose seeds (s.seed .. s.seed + runs - 1) pass
// kMaxSeed, where two of them would round to one seed.
void check_replication_seeds(const Scenario& s, size_t runs);
Replicated summarize_replications(const std::vector<Replication>& all);

// Mean and 95% interval of values (Student t with n - 1 degrees of freedom),
// and their min, median and max. A quantity that cannot be negative (a
// count, a duration, a share) passes floor 0: the interval's low end is
// clamped there, as no seed can go below it. One that cannot exceed 1 (a
// flag counted as 1 or 0, a share of a whole) passes ceiling 1: the high end
// is clamped there (3 runs of which one recovered read 0.33, up to 1.77).
// The mean is kept within [min, max]: n equal values have that value as
// their mean and an interval of zero width, not a sum's rounding.
MetricSummary summarize(const std::vector<double>& values,
                        double floor = -std::numeric_limits<double>::infinity(),
                        double ceiling = std::numeric_limits<double>::infinity());

// A probability from k of n, with Wilson's 95% interval.
struct Share {
  int k = 0, n = 0;
  double p = 0, low = 0, high = 0;
};
Share share_of(int k, int n);

// 0 when no value is negative (a count, a duration, a share: the interval
// of the mean stops at 0), else no floor.
double floor_of(const std::vector<double>& values);

// 1 for a figure that cannot exceed it, by the name Monte Carlo gives it (a
// Figure carries no bound of its own): the flags of Metrics counted as 1 or
// 0 (recovered, backlog_growing) and the shares of a whole (a name ending in
// _fraction or _share: failed_fraction, wasted_fraction, pinned_share,
// asleep_share); else no ceiling.
double ceiling_of(std::string_view name);

}  // namespace retrystorm
