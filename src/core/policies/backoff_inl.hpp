// Template body of split_delay_over_steps (see backoff.hpp).
#pragma once

#include <algorithm>
#include <cmath>

namespace retrystorm {

namespace detail {
// Instants are compared in step units; this absorbs binary error in 0.05 s steps.
constexpr double kLandEpsilon = 1e-9;
inline long step_holding(double instant_steps) {
  return static_cast<long>(std::floor(instant_steps + kLandEpsilon));
}
}  // namespace detail

template <typename Land>
void split_delay_over_steps(DelayRange r, double origin_steps, double step_s, long earliest_step,
                            long beyond_step, Land&& land) {
  double lo = origin_steps + r.low_s / step_s;
  double hi = origin_steps + r.high_s / step_s;
  auto clamp = [&](long step) { return std::min(beyond_step, std::max(earliest_step, step)); };
  if (hi - lo <= detail::kLandEpsilon) {  // no jitter: one landing step
    land(clamp(lo >= beyond_step ? beyond_step : detail::step_holding(lo)), 1.0);
    return;
  }
  double width = hi - lo;
  long first = lo >= beyond_step ? beyond_step : detail::step_holding(lo);
  // The range is half-open: a range ending exactly on a step boundary does not
  // reach into the step that starts there.
  long last = hi >= beyond_step ? beyond_step : detail::step_holding(hi - 2 * detail::kLandEpsilon);
  for (long step = first; step < std::min(last + 1, beyond_step); ++step) {
    double overlap = std::min(hi, static_cast<double>(step + 1)) - std::max(lo, double(step));
    if (overlap > 0) land(clamp(step), overlap / width);
  }
  // Everything from beyond_step on lands there as one share.
  if (hi > beyond_step) land(beyond_step, (hi - std::max(lo, double(beyond_step))) / width);
}

}  // namespace retrystorm
