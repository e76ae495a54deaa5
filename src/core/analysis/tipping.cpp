#include "analysis/tipping.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "model/keys.hpp"

namespace retrystorm {

namespace {
// 3 x 0.1 s is 0.30000000000000004 in binary; durations are shown rounded.
double tidy_seconds(double s) {
  return std::round(s * 1e9) / 1e9;
}
}  // namespace

double default_grid_s(const Scenario& s) {
  return s.tipping.grid_s > 0 ? s.tipping.grid_s : 10 * s.step_s;
}

double tipping_steps(const Scenario& s, double grid_s) {
  double grid = grid_s > 0 ? grid_s : default_grid_s(s);
  double points = std::max(1.0, std::floor((s.horizon_s - s.incident.start_s) / grid));
  double per_step = engine_facts(s).step_cost;  // an agent step: about 30 fluid steps
  return (points + 20) * s.steps() * per_step;  // 20 runs cover any bisection
}

bool recovers_with_duration(Scenario s, double duration_s) {
  s.incident.duration_s = duration_s;
  return compute_metrics(run_engine(s)).recovered;
}

TippingResult tipping_point(const Scenario& s, double grid_s, const CancelCheck& cancelled) {
  TippingResult r;
  r.grid_s = grid_s > 0 ? grid_s : default_grid_s(s);
  double longest = s.horizon_s - s.incident.start_s;
  long grid_points = static_cast<long>(std::floor(longest / r.grid_s + 1e-9));
  double last_recovering = 0;
  for (long i = 1; i <= grid_points; ++i) {
    double d = tidy_seconds(i * r.grid_s);
    throw_if_cancelled(cancelled);
    if (!recovers_with_duration(s, d)) {
      r.on_grid_s = d;
      break;
    }
    last_recovering = d;
  }
  if (!r.on_grid_s) return r;
  // Bisection in whole steps between the last grid point that recovers and
  // the first that does not (assumes one tipping point between them).
  long lo = std::lround(last_recovering / s.step_s);
  long hi = std::lround(*r.on_grid_s / s.step_s);
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    throw_if_cancelled(cancelled);
    if (recovers_with_duration(s, tidy_seconds(mid * s.step_s)))
      lo = mid;
    else
      hi = mid;
  }
  r.exact_s = tidy_seconds(hi * s.step_s);
  return r;
}

TippingResult TippingCache::get(const Scenario& s, double grid_s) {
  std::string key = std::to_string(grid_s);
  for (const KeySpec& k : scenario_keys())
    if (k.path != "incident.duration_s" && k.path != "name" && k.path != "description")
      key += "|" + to_string(k.get(s));
  {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
  }
  TippingResult r = tipping_point(s, grid_s);  // outside the lock: it takes a while
  std::lock_guard lock(mutex_);
  entries_.emplace_front(std::move(key), r);
  if (entries_.size() > capacity_) entries_.pop_back();
  return r;
}

}  // namespace retrystorm
