#include "policies/concurrency_limits.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

NetflixLimitSettings netflix_limit_settings(const Scenario& s) {
  const auto& c = s.server.concurrency;
  const bool vegas = c.kind == ConcurrencyLimiter::vegas;
  // The builders' defaults (Gradient2Limit.Builder, VegasLimit.Builder).
  return {.kind = c.kind,
          .initial = c.initial_limit > 0 ? c.initial_limit : 20,
          .min = vegas ? 1 : (c.min_limit > 0 ? c.min_limit : 20),
          .max = c.max_limit > 0 ? c.max_limit : (vegas ? 1000 : 200),
          .smoothing = c.smoothing > 0 ? c.smoothing : (vegas ? 1.0 : 0.2),
          .queue_size = c.queue_size,
          .long_window = c.long_window,
          .rtt_tolerance = c.rtt_tolerance,
          .probe_multiplier = c.probe_multiplier};
}

// The first 10 samples' mean, then an exponential average of factor 2 / (window + 1).
double ExpAvgMeasurement::add(double sample) {
  if (count_ < 10) {
    ++count_;
    sum_ += sample;
    value_ = sum_ / count_;
  } else {
    value_ = value_ * (1 - factor_) + sample * factor_;
  }
  return value_;
}

NetflixLimiter::NetflixLimiter(const NetflixLimitSettings& settings, uint64_t seed)
    : s_(settings),
      rng_(seed),
      limit_(settings.initial),
      estimated_(settings.initial),
      long_rtt_(settings.long_window),
      probe_jitter_(0.5 + 0.5 * rng_.uniform()) {}  // nextDouble(0.5, 1), drawn at construction

uint32_t NetflixLimiter::admit() {
  if (in_flight_ >= limit_) {  // the semaphore has no permit left
    ++blocked_;
    return 0;
  }
  return static_cast<uint32_t>(++in_flight_);
}

void NetflixLimiter::on_outcome(double rtt_s, uint32_t inflight_at_admit, bool dropped) {
  --in_flight_;
  // System.nanoTime never gives two events the same instant; a model does.
  // Vegas throws on an RTT of 0 and Gradient2 would divide by it, so an
  // answer in the instant it was let through is no sample.
  const auto rtt_ns = static_cast<int64_t>(std::llround(rtt_s * 1e9));
  if (rtt_ns <= 0) return;
  limit_ = s_.kind == ConcurrencyLimiter::vegas ? vegas(rtt_ns, inflight_at_admit, dropped)
                                                : gradient2(rtt_ns, inflight_at_admit);
}

// Gradient2Limit._update; didDrop is not read.
int NetflixLimiter::gradient2(int64_t rtt_ns, uint32_t inflight) {
  const double est = estimated_;
  const auto queue = static_cast<double>(s_.queue_size);
  const auto short_rtt = static_cast<double>(rtt_ns);
  const double long_rtt = long_rtt_.add(short_rtt);
  // After a long overload the long RTT comes down faster than its average would.
  if (long_rtt / short_rtt > 2) long_rtt_.scale(0.95);
  if (inflight < est / 2) return static_cast<int>(est);  // app-limited: no change
  const double gradient = std::max(0.5, std::min(1.0, s_.rtt_tolerance * long_rtt / short_rtt));
  double next = est * gradient + queue;
  next = est * (1 - s_.smoothing) + next * s_.smoothing;
  next = std::max<double>(s_.min, std::min<double>(s_.max, next));
  estimated_ = next;
  return static_cast<int>(next);
}

// VegasLimit._update.
int NetflixLimiter::vegas(int64_t rtt_ns, uint32_t inflight, bool dropped) {
  ++probe_count_;
  if (probe_jitter_ * s_.probe_multiplier * estimated_ <= probe_count_) {  // shouldProbe
    probe_jitter_ = 0.5 + 0.5 * rng_.uniform();
    probe_count_ = 0;
    rtt_noload_ns_ = rtt_ns;
    return static_cast<int>(estimated_);
  }
  if (rtt_noload_ns_ == 0 || rtt_ns < rtt_noload_ns_) {  // a new least RTT
    rtt_noload_ns_ = rtt_ns;
    return static_cast<int>(estimated_);
  }
  return vegas_estimate(rtt_ns, inflight, dropped);
}

namespace {
// Log10RootIntFunction: max(1, floor(log10 t)) below 1000 (a table), floor(log10 t) above.
int log10_root(int t) {
  const int l = t > 0 ? static_cast<int>(std::log10(static_cast<double>(t))) : 0;
  return t < 1000 ? std::max(1, l) : l;
}
}  // namespace

// VegasLimit.updateEstimatedLimit with the builder's default functions:
// alpha 3 x L, beta 6 x L, threshold L, increase +L, decrease -L.
int NetflixLimiter::vegas_estimate(int64_t rtt_ns, uint32_t inflight, bool dropped) {
  const double est = estimated_;
  const auto queue = static_cast<int>(
      std::ceil(est * (1 - static_cast<double>(rtt_noload_ns_) / static_cast<double>(rtt_ns))));
  const int l = log10_root(static_cast<int>(est));
  double next;
  if (dropped) {
    next = est - l;
  } else if (static_cast<double>(inflight) * 2 < est) {
    return static_cast<int>(est);  // app-limited
  } else if (queue <= l) {
    next = est + 6 * l;  // no queueing: grow fast
  } else if (queue < 3 * l) {
    next = est + l;
  } else if (queue > 6 * l) {
    next = est - l;
  } else {
    return static_cast<int>(est);
  }
  next = std::max(1.0, std::min<double>(s_.max, next));
  next = (1 - s_.smoothing) * est + s_.smoothing * next;
  estimated_ = next;
  return static_cast<int>(next);
}

}  // namespace retrystorm
