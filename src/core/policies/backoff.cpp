#include "policies/backoff.hpp"

#include <cmath>

namespace retrystorm {

double backoff_window_s(const Backoff& b, int k) {
  double w = b.base_s * std::pow(b.multiplier, k - 1);
  if (b.cap_s > 0 && w > b.cap_s) w = b.cap_s;
  return w;
}

DelayRange backoff_delay(const Backoff& b, int k) {
  double w = backoff_window_s(b, k);
  switch (b.jitter) {
    case Jitter::full:
      return {0, w};
    case Jitter::equal:
      return {w / 2, w};
    case Jitter::none:
      break;
  }
  return {w, w};
}

}  // namespace retrystorm
