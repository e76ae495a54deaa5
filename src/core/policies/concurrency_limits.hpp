// Netflix concurrency-limits' SimpleLimiter with its Gradient2 or Vegas limit
// in front of a server (docs/policies.md, "Adaptive concurrency"), as
// concurrency-limits-core runs them:
//   - SimpleLimiter.acquire (AbstractLimiter): a request is let through while
//     fewer than the limit are in flight; its listener keeps the in-flight
//     count at acquire, itself included. onSuccess and onDropped hand the
//     limit (rtt, that count, dropped); the limit updates at every sample
//     (no WindowedLimit).
//   - Gradient2Limit._update: the long RTT an exponential average (a plain
//     mean over the first 10 samples), decayed by 0.95 when it is more than
//     twice the sample; no change while fewer than half the limit were in
//     flight; gradient = max(0.5, min(1, tolerance x longRtt / rtt)); the new
//     limit limit x gradient + queueSize, smoothed, then clamped.
//   - VegasLimit._update: the no-load RTT is the least sample, measured again
//     every jitter x probeMultiplier x limit samples; the queue estimate
//     ceil(limit x (1 - noload / rtt)) grows the limit, holds it or shrinks
//     it against thresholds of log10(limit); a drop shrinks it.
// RTTs are whole nanoseconds, as System.nanoTime gives them. No I/O.
#pragma once

#include <cstdint>

#include "model/scenario.hpp"
#include "random/rng.hpp"

namespace retrystorm {

// The limit's settings, each 0 ("the limit's default") filled in.
struct NetflixLimitSettings {
  ConcurrencyLimiter kind = ConcurrencyLimiter::gradient2;
  int initial = 20;        // initialLimit
  int min = 20;            // Gradient2's minLimit; Vegas: 1
  int max = 200;           // maxConcurrency (Vegas: 1000)
  double smoothing = 0.2;  // Vegas: 1
  int queue_size = 4;
  int long_window = 600;
  double rtt_tolerance = 1.5;
  int probe_multiplier = 30;
};

// server.* of a gradient2 or vegas limiter read.
NetflixLimitSettings netflix_limit_settings(const Scenario& s);

// ExpAvgMeasurement(window, warmup 10).
class ExpAvgMeasurement {
 public:
  explicit ExpAvgMeasurement(int window) : factor_(2.0 / (window + 1)) {}
  double add(double sample);
  void scale(double by) { value_ *= by; }
  double value() const { return value_; }

 private:
  double factor_, value_ = 0, sum_ = 0;
  int count_ = 0;
};

class NetflixLimiter {
 public:
  NetflixLimiter(const NetflixLimitSettings& settings, uint64_t seed);

  // acquire: 0 rejects; otherwise the in-flight count, itself included, to
  // hand back with the outcome.
  uint32_t admit();
  // onSuccess (an answer) or onDropped (none): a sample of rtt_s.
  void on_outcome(double rtt_s, uint32_t inflight_at_admit, bool dropped);

  int limit() const { return limit_; }
  long in_flight() const { return in_flight_; }
  long blocked() const { return blocked_; }
  double estimated() const { return estimated_; }

 private:
  int gradient2(int64_t rtt_ns, uint32_t inflight);
  int vegas(int64_t rtt_ns, uint32_t inflight, bool dropped);
  int vegas_estimate(int64_t rtt_ns, uint32_t inflight, bool dropped);

  NetflixLimitSettings s_;
  Rng rng_;  // Vegas's probe jitter
  int limit_;
  double estimated_;
  long in_flight_ = 0, blocked_ = 0;
  ExpAvgMeasurement long_rtt_;  // Gradient2
  int64_t rtt_noload_ns_ = 0;   // Vegas
  int probe_count_ = 0;
  double probe_jitter_ = 0;
};

}  // namespace retrystorm
