// Monte Carlo: independent replications of one scenario (seed, seed + 1, ...)
// on every core, each metric summarised by its mean and 95% interval.
// Replications are combined in replication order: the same scenario and
// seed give the same bytes whatever the number of threads.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metrics.hpp"
#include "engines/run_result.hpp"

namespace retrystorm {

struct MetricSummary {
  double mean = 0;
  double low = 0;  // 95% interval of the mean (Student t), never below the floor
  double high = 0;
  size_t n = 0;  // replications with a value (recovery times can be null)
  // Per seed: the spread the interval of the mean hides.
  double min = 0, median = 0, max = 0;
};

// Per step (or bucket): the 95% interval of the mean of one series over
// the replications (`series[replication][step]`), as a band to draw; the
// series drawn (goodput, sessions in flight) are never negative, so neither
// is the band.
struct Band {
  std::vector<double> low, mean, high;
};
Band band_of(const std::vector<std::vector<double>>& series);

struct MonteCarloResult {
  int runs = 0;
  double seed = 0;
  std::vector<std::pair<std::string, MetricSummary>> metrics;  // in a fixed order
  std::vector<Metrics> replications;                           // by replication
  RunResult first;  // replication 0 (the run `run` shows)
  Band goodput;     // goodput (served on time) per step: the page's band
};

// Runs `runs` replications (default: the scenario's `runs`) of a validated
// scenario; threads = 0 uses every core.
MonteCarloResult run_montecarlo(const Scenario& s, int runs = 0, unsigned threads = 0);

// Calls work(i) for i in [0, total) on `threads` threads (0 = every core);
// rethrows the first exception once every thread has stopped.
void for_each_replication(size_t total, unsigned threads, const std::function<void(size_t)>& work);

// The text table of metric summaries that `run --runs N` prints.
std::string summaries_text(int runs, double seed,
                           const std::vector<std::pair<std::string, MetricSummary>>& metrics);

// Mean and 95% interval of values (Student t with n - 1 degrees of freedom),
// and their min, median and max. A quantity that cannot be negative (a
// count, a duration, a share) passes floor 0: the interval's low end is
// clamped there, as no seed can go below it.
MetricSummary summarize(const std::vector<double>& values,
                        double floor = -std::numeric_limits<double>::infinity());

// 0 when no value is negative (a count, a duration, a share: the interval
// of the mean stops at 0), else no floor.
double floor_of(const std::vector<double>& values);

// A few lines for the text report.
std::string montecarlo_text(const MonteCarloResult& r);

}  // namespace retrystorm
