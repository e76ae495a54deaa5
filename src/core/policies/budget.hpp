// Retry budgets, shared by every engine. fluid-model.md rules 2 and 3 define
// token_bucket and window; docs/policies.md defines the others, which follow
// ../shared/reference/retry-configs.md.
//   token_bucket:      holds ratio x base demand x window_s, starts full, each
//                      step deposits ratio x new requests (capped).
//   window:            retries in the last window_s may reach ratio_eff x first
//                      attempts in it, ratio_eff = (1 + ratio)^layers - 1.
//   envoy_concurrency: retries in flight may reach
//                      max(ratio x requests in flight, clients x min_concurrency).
//   grpc_throttling:   clients x max_tokens tokens; each failed attempt -1, each
//                      success +token_ratio; retries only while above half.
//   aws_quota:         clients x quota_tokens; a retry costs timeout_cost, a
//                      successful retry refunds it, a first-attempt success adds
//                      success_reward; a retry without tokens fails.
//   ratio_ttl:         retries in the last ttl_s may reach
//                      clients x min_retries_per_s x ttl_s + ratio x first attempts.
#pragma once

#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

// What an engine tells the budget about requests in flight at the dependency
// (attempts whose caller still waits). Only envoy_concurrency reads it.
struct InFlight {
  double attempts = 0;
  double retries = 0;
};

class RetryBudget {
 public:
  explicit RetryBudget(const Scenario& s);

  // Rule 2: called once at the start of every step with its first attempts.
  void begin_step(double first_attempts);
  // Rule 3: how much of a retry amount may be sent now; records what it takes.
  double take(double wanted, const InFlight& in_flight = {});
  // Feedback for the budgets that learn from outcomes.
  void on_success(double amount, int attempt);
  void on_attempt_failed(double amount);
  bool enabled() const { return kind_ != BudgetKind::none; }

 private:
  double available(const InFlight& in_flight) const;
  void add_tokens(double delta);
  bool rolling() const { return kind_ == BudgetKind::window || kind_ == BudgetKind::ratio_ttl; }

  BudgetKind kind_;
  Budget b_;
  double ratio_eff_;  // window: allowed retries per first attempt
  double tokens_ = 0;
  double bucket_size_ = 0;
  double floor_ = 0;  // ratio_ttl: retries always allowed in the window
  double taken_this_step_ = 0;
  // window, ratio_ttl: per-step first attempts and retries, a ring of steps.
  std::vector<double> first_ring_, retry_ring_;
  size_t slot_ = 0;
  double first_in_window_ = 0, retries_in_window_ = 0;
};

}  // namespace retrystorm
