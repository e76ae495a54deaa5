#include "policies/adaptive_throttle.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

ThrottleSettings throttle_settings(const Scenario& s) {
  return {.k = s.client.throttle.k,
          .padding = s.client.throttle.padding,
          .window_s = s.client.throttle.window_s};
}

AdaptiveThrottle::AdaptiveThrottle(const ThrottleSettings& settings, double start_s)
    : s_(settings),
      bins_(static_cast<size_t>(settings.bins), settings.window_s / settings.bins, start_s) {}

double AdaptiveThrottle::reject_probability(double now_s) {
  bins_.at(now_s);
  double accepts = 0, throttles = 0;
  for (const Bin& b : bins_.bins()) accepts += b.accepts, throttles += b.throttles;
  double requests = accepts + throttles;
  return std::max(0.0, (requests - s_.k * accepts) / (requests + s_.padding));
}

bool AdaptiveThrottle::throttles(double now_s, double draw) {
  if (reject_probability(now_s) <= draw) return false;
  bins_.at(now_s).throttles += 1;
  rejected_ += 1;
  return true;
}

void AdaptiveThrottle::on_answer(double now_s, bool accepted) {
  Bin& bin = bins_.at(now_s);
  (accepted ? bin.accepts : bin.throttles) += 1;
}

}  // namespace retrystorm
