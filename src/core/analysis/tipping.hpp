// The tipping point: the shortest incident whose run does not recover
// (fluid-model.md, "Tipping point"), on a grid and exactly by bisection.
#pragma once

#include <list>
#include <mutex>
#include <optional>
#include <string>

#include "model/scenario.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

struct TippingResult {
  double grid_s = 0;
  std::optional<double> on_grid_s;  // first grid duration that does not recover
  std::optional<double> exact_s;    // shortest such duration, to one step
};

// grid_s <= 0 uses the scenario's tipping.grid_s, or ten steps.
// `cancelled` is polled before each run (throws Cancelled). Throws
// InputError when no incident length fits the grid (tipping_grid_points).
TippingResult tipping_point(const Scenario& s, double grid_s = 0,
                            const CancelCheck& cancelled = {});
double default_grid_s(const Scenario& s);
// The incident lengths on the grid between incident.start_s and horizon_s.
long tipping_grid_points(const Scenario& s, double grid_s = 0);
// The longest incident the tipping point tries: one that leaves a whole step
// before the horizon to judge recovery in (may be 0 or less: none fits).
double tipping_room_s(const Scenario& s);

// An upper bound on the steps tipping_point() runs: every grid point a whole
// run, plus the bisection. Callers use it to refuse or skip work too large.
double tipping_steps(const Scenario& s, double grid_s = 0);
// Above this many steps, `run` reports leave the tipping point out (about a
// second of work); the `tipping` command and /api/tipping have their own limits.
constexpr double kReportTippingSteps = 3e6;

// Whether the run with this incident length recovers (scenario's criterion),
// or is no storm at all: no request failed and the backlog is not growing.
bool recovers_with_duration(Scenario s, double duration_s);

// Remembers tipping points by scenario. The tipping point does not depend on
// the incident's own length, so changing only that hits the cache. Safe to
// share between threads. Bounded by entries and by the bytes of their keys
// (every key's text: a profile of 10,000 points is most of a megabyte).
class TippingCache {
 public:
  explicit TippingCache(size_t capacity = 256, size_t max_key_bytes = size_t{16} << 20)
      : capacity_(capacity), max_key_bytes_(max_key_bytes) {}
  TippingResult get(const Scenario& s, double grid_s = 0);
  size_t key_bytes() const {
    std::lock_guard lock(mutex_);
    return key_bytes_;
  }

 private:
  size_t capacity_;
  size_t max_key_bytes_;
  size_t key_bytes_ = 0;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, TippingResult>> entries_;  // most recent first
};

}  // namespace retrystorm
