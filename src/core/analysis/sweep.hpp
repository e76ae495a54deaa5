// Sweeps: a grid of runs over numeric scenario keys, one row per point,
// run on every core. Rows come back in grid order whatever the thread count.
// A sweep may run a range of the grid's points (a shard, a Dask task): each
// point's seeds depend only on the base seed, the point's index in the grid
// and the replication, so any partition of the grid gives the same rows
// (docs/distributed.md).
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metrics.hpp"
#include "engines/montecarlo.hpp"
#include "model/scenario.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

struct SweepAxis {
  SweepAxis() = default;
  SweepAxis(std::string path_, double from_, double to_, double step_,
            std::vector<double> listed_ = {})
      : path(std::move(path_)), from(from_), to(to_), step(step_), listed(std::move(listed_)) {}
  std::string path;  // a numeric key, "incident.duration_s"
  double from = 0;
  double to = 0;
  double step = 1;
  // Explicit values, in the order given (`PATH=V1,V2,...`, a Python list):
  // when not empty the axis is these and from, to and step are unused.
  std::vector<double> listed;
  // How many values the axis has, computed without listing them: +inf when
  // the step is so small the count is not a number of points.
  double point_count() const;
  std::vector<double> values() const;  // from, from+step, ... <= to, or the listed ones
  double lowest() const;               // the smallest and largest value (the cost's corners)
  double highest() const;
};

struct SweepRow {
  size_t point = 0;            // index in the whole grid (row-major, last axis fastest)
  std::vector<double> values;  // one per axis
  Metrics metrics;             // runs = 1: the run; runs > 1: replication 0
  Summaries montecarlo;        // runs > 1: the Monte Carlo figures over the replications
};

constexpr size_t kAllPoints = std::numeric_limits<size_t>::max();

struct SweepOptions {
  unsigned threads = 0;                                     // 0 = every core
  size_t max_runs = 1'000'000;                              // refuse larger grids
  std::function<void(size_t done, size_t total)> progress;  // from the calling thread
  CancelCheck cancelled;  // polled before each point; true ends the sweep with Cancelled
  // The points run: [first, first + count) of the grid, clipped to its end.
  size_t first = 0;
  size_t count = kAllPoints;
  // Replications per point; above 1 each row carries run_montecarlo's summaries.
  int runs = 1;
  // Unset: every point starts at the scenario's seed (the same random numbers
  // at every point, replication r at seed + r). Set to S: point i's
  // replication r runs at seed S + i * runs + r (independent streams).
  std::optional<double> seed;
  // Validate every point of the grid before any work (false: only the range
  // run, when the caller has validated the grid once, as Dask tasks do).
  bool validate_grid = true;
  // What each point may cost, as a run is held to it (the server's are lower).
  RunLimits limits;
};

// The grid of a sweep: each axis's values and the number of points.
struct SweepGrid {
  std::vector<std::vector<double>> values;
  size_t points = 1;
  std::vector<double> point_values(size_t point) const;  // one per axis
};

// Checks the axes (and options.runs / options.seed) and, with
// options.validate_grid, every point of the grid. Throws InputError.
SweepGrid sweep_grid(const Scenario& base, const std::vector<SweepAxis>& axes,
                     const SweepOptions& options = {});

// Grid point i of the base scenario: the axes' values, and its seed when the
// sweep has a base seed (never the thread's or the shard's).
Scenario sweep_point(const Scenario& base, const std::vector<SweepAxis>& axes,
                     const SweepGrid& grid, size_t i, const SweepOptions& options);
// The same into `out`, whose strings and lists keep their storage: a loop
// over a grid's points builds each without allocating (copies of a scenario
// were most of the time spent checking a grid).
void sweep_point_into(Scenario& out, const Scenario& base, const std::vector<SweepAxis>& axes,
                      const SweepGrid& grid, size_t i, const SweepOptions& options);

// Cuts the points [0, costs.size()) into `parts` contiguous ranges (first,
// count) of about equal total cost, in order; a range may be empty. Shards
// and tasks cut so end at about the same time, where equal counts of points
// end as far apart as the grid's costs (a first axis of client.retries).
std::vector<std::pair<size_t, size_t>> cost_balanced_ranges(const std::vector<double>& costs,
                                                            size_t parts);
// Range `part` (from 0, below parts) of cost_balanced_ranges(costs, parts),
// the same (first, count), in one pass over the costs and no list of the
// ranges: a shard K of N costs the same for any N (--shard 1/100000000 of
// two points took 2.9 GB and 25 s when every range was listed).
std::pair<size_t, size_t> cost_balanced_range(const std::vector<double>& costs, size_t parts,
                                              size_t part);

// The range [first, end) options select from a grid of `points` points.
size_t sweep_range_end(size_t points, const SweepOptions& options);

// Throws InputError for a non-numeric path, an empty or oversized grid, or a
// grid point that does not validate. Returns the rows of the range only.
std::vector<SweepRow> run_sweep(const Scenario& base, const std::vector<SweepAxis>& axes,
                                const SweepOptions& options = {});

// A figure of a row: the run's (runs = 1) or the mean over the replications
// that have it (runs > 1; a flag reads as the share of replications).
std::optional<double> sweep_figure(const SweepRow& row, const MetricField& field);

// Parses "PATH=FROM:TO:STEP", or "PATH=V1,V2,..." (one value or more, any order).
SweepAxis parse_axis(const std::string& text);

}  // namespace retrystorm
