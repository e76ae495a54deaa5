#include "policies/budget.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

RetryBudget::RetryBudget(const Scenario& s)
    : kind_(s.client.budget.kind),
      ratio_(s.client.budget.ratio),
      ratio_eff_(std::pow(1 + s.client.budget.ratio, s.client.layers) - 1) {
  if (kind_ == BudgetKind::token_bucket) {
    // Sized from the base demand: an incident does not resize the bucket.
    bucket_size_ = ratio_ * s.demand.rate_per_s * s.client.budget.window_s;
    tokens_ = bucket_size_;
  } else if (kind_ == BudgetKind::window) {
    auto window_steps = static_cast<size_t>(std::lround(s.client.budget.window_s / s.step_s));
    first_ring_.assign(std::max<size_t>(window_steps, 1), 0.0);
    retry_ring_.assign(first_ring_.size(), 0.0);
    slot_ = first_ring_.size() - 1;
  }
}

void RetryBudget::begin_step(double first_attempts) {
  if (kind_ == BudgetKind::token_bucket) {
    tokens_ = std::min(bucket_size_, tokens_ + ratio_ * first_attempts);
  } else if (kind_ == BudgetKind::window) {
    // The oldest step leaves the window, this step enters it.
    slot_ = (slot_ + 1) % first_ring_.size();
    first_in_window_ += first_attempts - first_ring_[slot_];
    retries_in_window_ -= retry_ring_[slot_];
    first_ring_[slot_] = first_attempts;
    retry_ring_[slot_] = 0;
  }
}

double RetryBudget::available() const {
  if (kind_ == BudgetKind::token_bucket) return tokens_;
  return std::max(0.0, ratio_eff_ * first_in_window_ - retries_in_window_);
}

double RetryBudget::take(double wanted) {
  if (kind_ == BudgetKind::none) return wanted;
  double taken = std::min(wanted, available());
  if (kind_ == BudgetKind::token_bucket) {
    tokens_ -= taken;
  } else {
    retry_ring_[slot_] += taken;
    retries_in_window_ += taken;
  }
  return taken;
}

}  // namespace retrystorm
