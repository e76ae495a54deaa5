// Envoy's adaptive concurrency filter with its gradient controller
// (docs/policies.md, "Adaptive concurrency"), as
// source/extensions/filters/http/adaptive_concurrency/controller/
// gradient_controller.cc runs it: a request is forwarded while fewer than
// the limit are outstanding, else answered 503 at once; latencies of the
// answers are sampled, and every update interval the limit becomes
//   limit x gradient + sqrt(limit x gradient), clamped to [min, max],
//   gradient = min(2, max(0.5, minRTT x (1 + buffer) / sampleRTT)),
// sampleRTT the window's percentile. minRTT is measured at the start and
// every interval (plus jitter) after: the limit drops to the minimum until
// `min_rtt_requests` answers are in, their percentile is the new minRTT, and
// the limit goes back to what it was. Five updates in a row at the minimum
// start a new measurement at once. Times are the caller's; no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.hpp"
#include "random/rng.hpp"

namespace retrystorm {

struct GradientSettings {
  double update_interval_s = 0.1;  // concurrency_update_interval
  double min_rtt_interval_s = 60;  // min_rtt_calc_params.interval
  double jitter = 0.15;            // min_rtt_calc_params.jitter: up to this share more
  double buffer = 0.25;            // min_rtt_calc_params.buffer
  double percentile = 0.5;         // sample_aggregate_percentile
  int min_rtt_requests = 50;       // min_rtt_calc_params.request_count
  int min_concurrency = 3;         // min_rtt_calc_params.min_concurrency
  int max_concurrency = 1000;      // concurrency_limit_params.max_concurrency_limit
};

// server.concurrency_* read.
GradientSettings gradient_settings(const Scenario& s);

class GradientController {
 public:
  GradientController(const GradientSettings& settings, uint64_t seed);

  // forwardingDecision at now_s: true forwards (one more outstanding).
  bool admit(double now_s);
  // recordLatencySample: an answer at now_s to a request forwarded at sent_s.
  void on_answer(double now_s, double sent_s);
  // cancelLatencySample: a forwarded request that ends without an answer.
  void on_cancel(double now_s);

  int limit() const { return limit_; }
  long outstanding() const { return outstanding_; }
  double min_rtt_s() const { return min_rtt_s_; }
  bool measuring_min_rtt() const { return deferred_limit_ > 0; }
  long blocked() const { return blocked_; }

 private:
  void advance(double now_s);  // fires the timers due by now_s, in time order
  void enter_min_rtt_window(double now_s);
  void update_min_rtt(double now_s);
  void reset_sample_window(double now_s);
  double take_percentile();  // the samples' percentile, and clears them
  void set_limit(int limit, double now_s);

  GradientSettings s_;
  Rng rng_;  // the minRTT interval's jitter
  int limit_;
  int deferred_limit_ = 0;  // > 0: in the minRTT window, the limit to go back to
  long outstanding_ = 0;
  long blocked_ = 0;
  int at_minimum_ = 0;  // updates in a row that set the minimum
  double min_rtt_s_ = 0, sample_rtt_s_ = 0;
  double min_rtt_epoch_s_ = 0;            // answers to requests sent before it are not samples
  double next_reset_s_, next_min_rtt_s_;  // +inf: the timer is not armed
  std::vector<double> samples_;
};

}  // namespace retrystorm
