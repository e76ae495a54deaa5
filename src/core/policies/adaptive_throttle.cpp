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
  const Bin& window = bins_.total(now_s);
  double requests = window.accepts + window.throttles;
  return std::max(0.0, (requests - s_.k * window.accepts) / (requests + s_.padding));
}

bool AdaptiveThrottle::throttles(double now_s, double draw) {
  if (reject_probability(now_s) <= draw) return false;
  bins_.add(now_s, {.accepts = 0, .throttles = 1});
  rejected_ += 1;
  return true;
}

void AdaptiveThrottle::on_answer(double now_s, bool accepted) {
  bins_.add(now_s,
            accepted ? Bin{.accepts = 1, .throttles = 0} : Bin{.accepts = 0, .throttles = 1});
}

}  // namespace retrystorm
