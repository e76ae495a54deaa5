// AWS adaptive retry mode's client-side rate limiter, one per client
// (docs/policies.md, "AWS adaptive mode"). Off until the first throttling
// answer; from then on every attempt, first or retry, takes a token from a
// bucket whose rate follows a CUBIC curve: cut to beta x the measured rate on
// each throttling answer, growing back along scale x (t - K)^3 + w_max on the
// others. As botocore's ClientRateLimiter (retries/adaptive.py), with its
// CubicCalculator (retries/throttling.py), TokenBucket (retries/bucket.py)
// and RateClocker. The clock is the caller's: this class does no I/O.
#pragma once

namespace retrystorm {

class AdaptiveRateLimiter {
 public:
  static constexpr double kBeta = 0.7;          // CubicCalculator._BETA
  static constexpr double kScale = 0.4;         // CubicCalculator._SCALE_CONSTANT
  static constexpr double kMinRate = 0.5;       // TokenBucket._MIN_RATE, per second
  static constexpr double kMaxRateScale = 2.0;  // ClientRateLimiter._MAX_RATE_ADJUST_SCALE
  static constexpr double kSmoothing = 0.8;     // RateClocker._DEFAULT_SMOOTHING
  static constexpr double kRateBucketS = 0.5;   // RateClocker._TIME_BUCKET_RANGE

  explicit AdaptiveRateLimiter(double start_s = 0);

  // An attempt is about to be sent at now_s: the instant it may go (now_s
  // while the limiter is off or a token is there). A sender that must wait
  // reserves its token, so senders waiting together leave in turn.
  double acquire(double now_s);
  // A response (or a timed-out attempt) reached the client at now_s;
  // `throttled`: a throttling error (HTTP 429, ThrottlingException, ...).
  void on_response(double now_s, bool throttled);

  bool enabled() const { return enabled_; }
  double send_rate() const { return fill_rate_; }  // the bucket's rate, per second
  double measured_rate() const { return measured_; }

 private:
  void set_rate(double rate, double now_s);
  void refill(double now_s);
  double measure(double now_s);

  bool enabled_ = false;
  // CubicCalculator
  double w_max_ = 0, k_ = 0, last_fail_s_;
  // TokenBucket (botocore starts it at max_rate 1)
  double fill_rate_ = 1, max_capacity_ = 1, capacity_ = 0, last_s_;
  // RateClocker
  double measured_ = 0, count_ = 0, last_bucket_s_;
};

}  // namespace retrystorm
