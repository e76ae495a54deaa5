// Sweeps: a grid of runs over numeric scenario keys, one row per point,
// run on every core. Rows come back in grid order whatever the thread count.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/cancel.hpp"
#include "analysis/metrics.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

struct SweepAxis {
  std::string path;  // a numeric key, "incident.duration_s"
  double from = 0;
  double to = 0;
  double step = 1;
  std::vector<double> values() const;  // from, from+step, ... <= to
};

struct SweepRow {
  std::vector<double> values;  // one per axis
  Metrics metrics;
};

struct SweepOptions {
  unsigned threads = 0;                                     // 0 = every core
  size_t max_runs = 1'000'000;                              // refuse larger grids
  std::function<void(size_t done, size_t total)> progress;  // from the calling thread
  CancelCheck cancelled;  // polled before each point; true ends the sweep with Cancelled
};

// Throws InputError for a non-numeric path, an empty or oversized grid, or a
// grid point that does not validate.
std::vector<SweepRow> run_sweep(const Scenario& base, const std::vector<SweepAxis>& axes,
                                const SweepOptions& options = {});

// Parses "PATH=FROM:TO:STEP".
SweepAxis parse_axis(const std::string& text);

}  // namespace retrystorm
