#include "policies/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

namespace {
// gRPC multiplies each delay by U(0.8, 1.2) (retry design, 2024 revision).
constexpr double kGrpcJitterLow = 0.8, kGrpcJitterHigh = 1.2;
// Decorrelated jitter draws from [base, 3 x previous delay); the fluid model
// uses the widest range that retry k can reach, [base, base x 3^k).
constexpr double kDecorrelatedGrowth = 3;
}  // namespace

double backoff_window_s(const Backoff& b, int k) {
  // A zero base stays zero however far the multiplier grows (0 x inf is NaN).
  if (b.base_s <= 0) return 0;
  double w = b.base_s * std::pow(b.multiplier, k - 1);  // may overflow to inf
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
    case Jitter::grpc:
      return {w * kGrpcJitterLow, w * kGrpcJitterHigh};
    case Jitter::decorrelated: {
      double high = b.base_s * std::pow(kDecorrelatedGrowth, k);
      if (b.cap_s > 0) high = std::min(high, b.cap_s);
      return {std::min(b.base_s, high), high};
    }
    case Jitter::none:
      break;
  }
  return {w, w};
}

}  // namespace retrystorm
