#include "policies/circuit_breaker.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

const char* breaker_state_name(BreakerState s) {
  switch (s) {
    case BreakerState::closed:
      return "closed";
    case BreakerState::open:
      return "open";
    case BreakerState::half_open:
      return "half-open";
  }
  return "closed";
}

BreakerSettings breaker_settings(const Scenario& s) {
  const auto& b = s.client.breaker;
  bool r4j = b.kind == BreakerKind::resilience4j;
  BreakerSettings out{.kind = b.kind,
                      .failure_rate = b.failure_rate,
                      .failures = b.failures,
                      .window_s = b.window_s,
                      .window_calls = b.window_calls,
                      .min_calls = b.min_calls,
                      .open_s = b.open_s,
                      .trials = b.trials};
  bool polly = b.kind == BreakerKind::polly;
  // resetTimeout 30 s; waitDurationInOpenState 60 s; BreakDuration 5 s;
  // cockatiel has no default halfOpenAfter: opossum's.
  if (out.open_s <= 0) out.open_s = r4j ? 60 : polly ? 5 : 30;
  if (out.trials <= 0) out.trials = r4j ? 10 : 1;  // permittedNumberOfCallsInHalfOpenState
  // minimumNumberOfCalls, MinimumThroughput; volumeThreshold
  if (out.min_calls <= 0) out.min_calls = r4j || polly ? 100 : 0;
  return out;
}

// opossum's Status rotates its buckets every floor(rollingCountTimeout /
// rollingCountBuckets) ms from the breaker's creation (nextBucket).
CircuitBreaker::CircuitBreaker(const BreakerSettings& settings, double start_s)
    : s_(settings),
      ring_(settings.kind == BreakerKind::opossum ? static_cast<size_t>(settings.buckets) : 1,
            std::floor(settings.window_s * 1000 / settings.buckets) / 1000, start_s) {
  if (s_.kind == BreakerKind::resilience4j)
    outcomes_.assign(static_cast<size_t>(s_.window_calls), 0);
}

uint32_t CircuitBreaker::admit(double now_s) {
  if (s_.kind == BreakerKind::opossum) {
    ring_.add(now_s, {.fires = 1, .failures = 0});  // 'fire': every call, the rejected too
  }
  if (state_ == BreakerState::open) {
    // cockatiel: Date.now() - openedAt < duration rejects; resilience4j:
    // now.isAfter(retryAfter) lets through; opossum: its resetTimeout timer.
    // Polly: PermitHalfOpenCircuitTest, now >= blockedUntil.
    bool over =
        s_.kind == BreakerKind::resilience4j ? now_s > open_until_s_ : now_s >= open_until_s_;
    if (over) to_half_open();
  }
  bool lets =
      state_ == BreakerState::closed || (state_ == BreakerState::half_open && trials_left_ > 0);
  if (!lets) {
    rejected_ += 1;
    return 0;
  }
  bool trial = state_ == BreakerState::half_open;
  if (trial) trials_left_ -= 1;
  return epoch_ * 2 + (trial ? 1 : 0);
}

void CircuitBreaker::to_half_open() {
  state_ = BreakerState::half_open;
  ++epoch_;
  trials_left_ = s_.trials;
  if (s_.kind == BreakerKind::resilience4j) {  // a fresh window of the trials
    outcomes_.assign(static_cast<size_t>(s_.trials), 0);
    next_ = outcome_count_ = failed_count_ = 0;
  }
}

void CircuitBreaker::open(double now_s) {
  if (state_ == BreakerState::open) return;  // opossum and cockatiel: open() does nothing
  state_ = BreakerState::open;
  ++epoch_;
  open_until_s_ = now_s + s_.open_s;
  opened_ += 1;
}

void CircuitBreaker::close() {
  state_ = BreakerState::closed;
  ++epoch_;
  in_a_row_ = 0;  // cockatiel: breaker.success(HalfOpen)
  if (s_.kind == BreakerKind::resilience4j) {
    outcomes_.assign(static_cast<size_t>(s_.window_calls), 0);
    next_ = outcome_count_ = failed_count_ = 0;
  }
  windows_.clear();  // polly: OnCircuitClosed resets the health metrics
}

void CircuitBreaker::record(bool ok) {
  size_t size = outcomes_.size();
  if (outcome_count_ == size)
    failed_count_ -= outcomes_[next_];
  else
    outcome_count_ += 1;
  outcomes_[next_] = ok ? 0 : 1;
  failed_count_ += outcomes_[next_];
  next_ = (next_ + 1) % size;
}

// resilience4j's checkIfThresholdsExceeded: no verdict below the minimum
// number of calls (at most the window), then failure rate >= threshold.
bool CircuitBreaker::rate_trips() const {
  size_t minimum = std::min(outcomes_.size(), static_cast<size_t>(std::max(1, s_.min_calls)));
  if (outcome_count_ < minimum) return false;
  // SnapshotImpl.getFailureRate: failed * 100.0f / total, in float.
  const float rate =
      static_cast<float>(failed_count_) * 100.0f / static_cast<float>(outcome_count_);
  return rate >= static_cast<float>(threshold_percent());
}

// The threshold as the libraries hold it, a percent as typed: 0.55 x 100 is
// 55.00000000000001 in binary, and 55 failed calls of 100 must reach it.
double CircuitBreaker::threshold_percent() const {
  return std::round(s_.failure_rate * 100 * 1e9) / 1e9;
}

// A failure of a call the closed state let through.
void CircuitBreaker::closed_failure(double now_s) {
  switch (s_.kind) {
    case BreakerKind::opossum: {
      // fail(): volumeThreshold, then failures / fires * 100 > errorThresholdPercentage.
      const auto [fires, failures] = ring_.total(now_s);
      if (fires < s_.min_calls) return;
      if (fires == 0 ||
          static_cast<double>(failures) / static_cast<double>(fires) * 100 > threshold_percent())
        open(now_s);
      return;
    }
    case BreakerKind::consecutive:
      if (++in_a_row_ >= s_.failures) open(now_s);  // ConsecutiveBreaker.failure
      return;
    case BreakerKind::resilience4j:
    case BreakerKind::polly:
    case BreakerKind::none:
      return;
  }
}

// A new window when the newest is windowDuration old (SamplingDuration / 10
// in whole 100 ns ticks); windows that started SamplingDuration ago or more go.
CircuitBreaker::PollyWindow& CircuitBreaker::polly_window(double now_s) {
  const double width_s = std::floor(s_.window_s * 1e7 / 10) / 1e7;
  if (windows_.empty() || now_s - windows_.back().start_s >= width_s)
    windows_.push_back({.start_s = now_s});
  size_t old = 0;
  while (now_s - windows_[old].start_s >= s_.window_s) ++old;
  windows_.erase(windows_.begin(), windows_.begin() + static_cast<long>(old));
  return windows_.back();
}

// Polly judges an outcome in the state it arrives in, whichever call it is:
// a success counts in any state and closes a half-open breaker; a failure
// reopens a half-open one uncounted, counts while open, and while closed
// opens it when enough calls ran and enough of them failed.
void CircuitBreaker::polly_outcome(double now_s, bool ok) {
  if (ok) {
    polly_window(now_s).successes += 1;
    if (state_ == BreakerState::half_open) close();
    return;
  }
  if (state_ == BreakerState::half_open) return open(now_s);
  polly_window(now_s).failures += 1;
  if (state_ != BreakerState::closed) return;
  long calls = 0, failures = 0;
  for (const PollyWindow& w : windows_) calls += w.successes + w.failures, failures += w.failures;
  if (calls >= s_.min_calls &&
      static_cast<double>(failures) / static_cast<double>(calls) >= s_.failure_rate)
    open(now_s);
}

void CircuitBreaker::half_open_outcome(double now_s, bool ok) {
  if (s_.kind != BreakerKind::resilience4j) return ok ? close() : open(now_s);
  record(ok);
  int needed = std::min(s_.trials, std::max(1, s_.min_calls));
  if (static_cast<int>(outcome_count_) < needed) return;
  if (rate_trips())
    open(now_s);
  else
    close();
}

void CircuitBreaker::on_outcome(double now_s, bool ok, uint32_t ticket) {
  switch (s_.kind) {
    case BreakerKind::opossum:
      if (state_ == BreakerState::open && now_s >= open_until_s_) to_half_open();
      if (!ok) ring_.add(now_s, {.fires = 0, .failures = 1});
      if (state_ == BreakerState::half_open) return half_open_outcome(now_s, ok);
      if (!ok) closed_failure(now_s);  // closed, or open (where open() does nothing)
      return;
    case BreakerKind::consecutive: {
      bool trial = ticket % 2 == 1;
      if (trial) {  // recordHalfOpen*: only while its half-open state lasts
        if (state_ == BreakerState::half_open && ticket / 2 == epoch_) half_open_outcome(now_s, ok);
        return;
      }
      if (ok)
        in_a_row_ = 0;  // ConsecutiveBreaker.success(Closed)
      else
        closed_failure(now_s);
      return;
    }
    case BreakerKind::polly:
      return polly_outcome(now_s, ok);
    case BreakerKind::resilience4j:
      if (state_ == BreakerState::half_open) return half_open_outcome(now_s, ok);
      if (state_ == BreakerState::closed) {
        record(ok);
        if (rate_trips()) open(now_s);
      }
      return;  // open: recorded in metrics that decide nothing
    case BreakerKind::none:
      return;
  }
}

}  // namespace retrystorm
