// The one pool for requests made of many independent runs: Monte Carlo
// replications, sweep points, calibration seeds. Items are indexed and each
// writes its own slot, so results never depend on the number of threads.
#pragma once

#include <cstddef>
#include <functional>

namespace retrystorm {

struct PoolOptions {
  unsigned threads = 0;  // 0 = every core; never more threads than items
  // Called from the calling thread about every 100 ms while the workers run
  // (then the calling thread only watches) when the count of finished items
  // changed, and once at the end: a run of every item ends with done = total.
  std::function<void(size_t done, size_t total)> progress;
  // Polled before each item, from the workers; true stops every worker.
  std::function<bool()> stop;
};

// Calls work(i) for every i in [0, total). When work throws, the workers
// stop taking items and, once every one has stopped, the first exception is
// rethrown here: a worker's error reaches the caller, never std::terminate.
// Returns false when `stop` ended the work early.
bool for_each_index(size_t total, const std::function<void(size_t)>& work,
                    const PoolOptions& options = {});

}  // namespace retrystorm
