// Retry budgets: fluid-model.md, step rules 2 and 3. Shared by every engine.
//   token_bucket: holds ratio * base demand * window_s tokens, starts full,
//                 each step deposits ratio * new requests (capped).
//   window:       a rolling window of the last window_s / step_s steps,
//                 this one included; retries may reach
//                 ratio_eff * first attempts in the window, where
//                 ratio_eff = (1 + ratio)^layers - 1.
#pragma once

#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

class RetryBudget {
 public:
  explicit RetryBudget(const Scenario& s);

  // Rule 2: called once at the start of every step with its first attempts.
  void begin_step(double first_attempts);
  // Rule 3: how much of a retry amount may be sent now; records what it takes.
  double take(double wanted);
  bool enabled() const { return kind_ != BudgetKind::none; }

 private:
  double available() const;

  BudgetKind kind_;
  double ratio_;      // token_bucket: deposit per new request
  double ratio_eff_;  // window: allowed retries per first attempt
  double tokens_ = 0;
  double bucket_size_ = 0;
  // window: per-step first attempts and retries, a ring of window_steps.
  std::vector<double> first_ring_, retry_ring_;
  size_t slot_ = 0;
  double first_in_window_ = 0, retries_in_window_ = 0;
};

}  // namespace retrystorm
