// A client-side circuit breaker, one per client instance (docs/policies.md,
// "Circuit breakers"): closed, open, half-open, with the rules of the
// library it names, read from their code:
//   - opossum (lib/circuit.js, lib/status.js): after each failure, open when
//     failures / fires over a rolling window of buckets exceeds the rate
//     (fires count every call, the rejected ones too; the window is never
//     cleared); after open_s one trial call, any outcome while half-open
//     decides (success closes, failure opens again).
//   - consecutive (cockatiel's ConsecutiveBreaker, CircuitBreakerPolicy.ts):
//     open on the N-th failure in a row; a success resets the count; after
//     open_s one trial call decides.
//   - resilience4j (CircuitBreakerStateMachine.java, COUNT_BASED window):
//     after every outcome, once min_calls outcomes are in the window of the
//     last window_calls, open when failures / outcomes >= the rate; after
//     open_s, `trials` calls let through, judged on a fresh window of their
//     own; the others are rejected.
//   - polly (Polly v8's CircuitStateController, AdvancedCircuitBehavior,
//     RollingHealthMetrics): on a failure while closed, open when the calls
//     that ran in the sampling window are at least min_calls and failures /
//     calls >= the rate; the window is 10 windows started at the first
//     outcome after the last one ended; after open_s the next call is the
//     one trial; any outcome while half-open decides (success closes and
//     clears the counts, failure opens again).
// The clock is the caller's: this class does no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.hpp"
#include "policies/rolling_bins.hpp"

namespace retrystorm {

enum class BreakerState { closed, open, half_open };
const char* breaker_state_name(BreakerState s);

// The breaker's settings, each library's defaults filled in.
struct BreakerSettings {
  BreakerKind kind = BreakerKind::none;
  double failure_rate = 0.5;  // opossum: errorThresholdPercentage / 100 (>); resilience4j (>=)
  int failures = 5;           // consecutive: failures in a row that open it
  double window_s = 10;       // opossum: rollingCountTimeout
  int buckets = 10;           // opossum: rollingCountBuckets
  int window_calls = 100;     // resilience4j: slidingWindowSize
  int min_calls = 0;          // opossum: volumeThreshold; resilience4j: minimumNumberOfCalls
  double open_s = 30;         // resetTimeout, halfOpenAfter, waitDurationInOpenState
  int trials = 1;             // calls let through half-open (resilience4j's permitted calls)
};

// client.breaker_* read, each 0 ("the library's default") filled in.
BreakerSettings breaker_settings(const Scenario& s);

class CircuitBreaker {
 public:
  CircuitBreaker(const BreakerSettings& settings, double start_s = 0);

  // A call asks to go at now_s: 0 rejects it at once; otherwise the ticket
  // the call hands back with its outcome (which state let it through).
  uint32_t admit(double now_s);
  // A call let through ended at now_s: answered well, or failed (an error
  // answer or its timeout). opossum and resilience4j judge an outcome in
  // the state it arrives in; cockatiel in the state that let the call go.
  void on_outcome(double now_s, bool ok, uint32_t ticket);

  BreakerState state() const { return state_; }
  // The state a caller would read at now_s: opossum's timer turns it
  // half-open at open_s whether or not a call comes; the others wait for one.
  BreakerState state_at(double now_s) const {
    bool timer = s_.kind == BreakerKind::opossum && state_ == BreakerState::open;
    return timer && now_s >= open_until_s_ ? BreakerState::half_open : state_;
  }
  long opened() const { return opened_; }      // times it opened
  long rejected() const { return rejected_; }  // calls it refused

 private:
  void to_half_open();
  void open(double now_s);
  void close();
  void closed_failure(double now_s);
  void half_open_outcome(double now_s, bool ok);
  bool rate_trips() const;           // resilience4j: the current window's verdict
  double threshold_percent() const;  // s_.failure_rate as the percent the libraries compare with
  void record(bool ok);              // resilience4j: into the window of outcomes
  void polly_outcome(double now_s, bool ok);
  struct PollyWindow;
  PollyWindow& polly_window(double now_s);  // RollingHealthMetrics.UpdateCurrentWindow

  BreakerSettings s_;
  BreakerState state_ = BreakerState::closed;
  double open_until_s_ = 0;
  uint32_t epoch_ = 1;   // moves at every change of state
  int trials_left_ = 0;  // half-open: calls still let through
  long opened_ = 0, rejected_ = 0;
  // opossum: its Status window of buckets of fires and failures.
  struct Bucket {
    long fires = 0, failures = 0;
    Bucket& operator+=(const Bucket& o) { return fires += o.fires, failures += o.failures, *this; }
    Bucket& operator-=(const Bucket& o) { return fires -= o.fires, failures -= o.failures, *this; }
  };
  RollingBins<Bucket> ring_;
  // consecutive: failures in a row (not reset at open, as cockatiel).
  int in_a_row_ = 0;
  // resilience4j: the last outcomes (1 = failed), a ring of window_calls.
  std::vector<uint8_t> outcomes_;
  size_t next_ = 0, outcome_count_ = 0, failed_count_ = 0;
  // polly: its health windows, oldest first (at most 11).
  struct PollyWindow {
    double start_s;
    long successes = 0, failures = 0;
  };
  std::vector<PollyWindow> windows_;
};

}  // namespace retrystorm
