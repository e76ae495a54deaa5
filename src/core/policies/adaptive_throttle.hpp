// Client-side adaptive throttling, one per client instance (docs/policies.md,
// "Client-side throttling"), as the Google SRE book describes it and gRPC
// implements it (grpc-go balancer/rls/internal/adaptive: Throttler's
// ShouldThrottle and RegisterBackendResponse, over a lookback of bins):
// over the last window, requests = accepts + throttles, and a new request
// is rejected locally with probability
//   max(0, (requests - K x accepts) / (requests + padding)).
// A request rejected locally counts as a throttle; one let through counts
// when its answer arrives: an accept if it succeeded, a throttle otherwise.
// The clock is the caller's: this class does no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.hpp"
#include "policies/rolling_bins.hpp"

namespace retrystorm {

struct ThrottleSettings {
  double k = 2;           // RatioForAccepts (the SRE book's K)
  double padding = 1;     // RequestsPadding: the book's + 1; gRPC's is 8
  double window_s = 120;  // the book's two minutes; gRPC's lookback is 30 s
  int bins = 100;         // gRPC's lookback bins
};

// client.throttle_* read.
ThrottleSettings throttle_settings(const Scenario& s);

class AdaptiveThrottle {
 public:
  explicit AdaptiveThrottle(const ThrottleSettings& settings, double start_s = 0);

  // The probability that a request sent at now_s is rejected locally.
  double reject_probability(double now_s);
  // ShouldThrottle with `draw` uniform in [0, 1): true rejects the request
  // (and counts it as a throttle).
  bool throttles(double now_s, double draw);
  // RegisterBackendResponse: the answer of a request let through.
  void on_answer(double now_s, bool accepted);

  long rejected() const { return rejected_; }

 private:
  struct Bin {
    double accepts = 0, throttles = 0;
    Bin& operator+=(const Bin& o) { return accepts += o.accepts, throttles += o.throttles, *this; }
    Bin& operator-=(const Bin& o) { return accepts -= o.accepts, throttles -= o.throttles, *this; }
  };

  ThrottleSettings s_;
  RollingBins<Bin> bins_;
  long rejected_ = 0;
};

}  // namespace retrystorm
