// Backoff windows and jitter: fluid-model.md, "Backoff and jitter".
// Shared by every engine: the fluid engine splits a delay range over steps,
// a per-request engine would draw from the same range.
#pragma once

#include <limits>
#include <utility>

#include "model/scenario.hpp"

namespace retrystorm {

// The window for retry number k (k = 1 sends attempt 2):
// base_s * multiplier^(k-1), capped at cap_s when cap_s > 0.
double backoff_window_s(const Backoff& b, int k);

// The delay of retry k is uniform on [low_s, high_s); a point when low == high.
struct DelayRange {
  double low_s;
  double high_s;
};

// none: the window itself; full: [0, w); equal: [w/2, w).
DelayRange backoff_delay(const Backoff& b, int k);

// Splits a delay range exactly over steps, in proportion to the overlap.
// `origin_steps` is the failure instant in step units; a delay d lands in the
// step floor(origin_steps + d/step_s), never before `earliest_step`; every
// share from `beyond_step` on lands in beyond_step (an engine's "after the
// horizon"), so a huge delay costs no more than a short one.
// Calls land(step, fraction) for each step with a share; fractions sum to 1.
template <typename Land>
void split_delay_over_steps(DelayRange r, double origin_steps, double step_s, long earliest_step,
                            Land&& land);

// The same with no horizon: for short ranges only.
template <typename Land>
void split_delay_over_steps(DelayRange r, double origin_steps, double step_s, long earliest_step,
                            Land&& land) {
  split_delay_over_steps(r, origin_steps, step_s, earliest_step,
                         std::numeric_limits<long>::max() / 2, std::forward<Land>(land));
}

}  // namespace retrystorm

#include "policies/backoff_inl.hpp"
