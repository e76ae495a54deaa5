#include "policies/adaptive_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

// botocore builds its bucket at max_rate 1, which starts the bucket's clock.
AdaptiveRateLimiter::AdaptiveRateLimiter(double start_s)
    : last_fail_s_(start_s), last_s_(start_s), last_bucket_s_(std::floor(start_s)) {}

// TokenBucket._refill.
void AdaptiveRateLimiter::refill(double now_s) {
  capacity_ = std::min(max_capacity_, capacity_ + (now_s - last_s_) * fill_rate_);
  last_s_ = now_s;
}

// TokenBucket.max_rate's setter: refill at the old rate first.
void AdaptiveRateLimiter::set_rate(double rate, double now_s) {
  refill(now_s);
  fill_rate_ = std::max(rate, kMinRate);
  max_capacity_ = rate >= 1 ? rate : 1;
  capacity_ = std::min(capacity_, max_capacity_);
}

double AdaptiveRateLimiter::acquire(double now_s) {
  if (!enabled_) return now_s;
  refill(now_s);
  double wait_s = capacity_ >= 1 ? 0 : (1 - capacity_) / fill_rate_;
  capacity_ -= 1;  // below 0: tokens reserved by the senders waiting
  return now_s + wait_s;
}

// RateClocker.record: responses per second, smoothed per half-second bucket.
double AdaptiveRateLimiter::measure(double now_s) {
  const double scale = 1 / kRateBucketS;
  double bucket = std::floor(now_s * scale) / scale;
  count_ += 1;
  if (bucket > last_bucket_s_) {
    double current = count_ / (bucket - last_bucket_s_);
    measured_ = current * kSmoothing + measured_ * (1 - kSmoothing);
    count_ = 0;
    last_bucket_s_ = bucket;
  }
  return measured_;
}

// ClientRateLimiter.on_receiving_response with CubicCalculator.
void AdaptiveRateLimiter::on_response(double now_s, bool throttled) {
  double measured = measure(now_s);
  double rate;
  if (!throttled) {
    rate = kScale * std::pow(now_s - last_fail_s_ - k_, 3) + w_max_;
  } else {
    w_max_ = enabled_ ? std::min(measured, fill_rate_) : measured;
    k_ = std::pow(w_max_ * (1 - kBeta) / kScale, 1 / 3.0);  // as botocore's ** (1 / 3.0)
    last_fail_s_ = now_s;
    rate = w_max_ * kBeta;
    enabled_ = true;
  }
  set_rate(std::min(rate, kMaxRateScale * measured), now_s);
}

}  // namespace retrystorm
