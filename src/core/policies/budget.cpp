#include "policies/budget.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace retrystorm {

RetryBudget::RetryBudget(const Scenario& s)
    : kind_(s.client.budget.kind),
      b_(s.client.budget),
      ratio_eff_(std::pow(1 + s.client.budget.ratio, s.retrying_layers()) - 1) {
  double window_s = 0;
  switch (kind_) {
    case BudgetKind::token_bucket:
      // Sized from the base demand: an incident does not resize the bucket.
      bucket_size_ = b_.ratio * s.demand.rate_per_s * b_.window_s;
      break;
    case BudgetKind::grpc_throttling:
      bucket_size_ = b_.clients * b_.max_tokens;
      break;
    case BudgetKind::aws_quota:
      bucket_size_ = b_.clients * b_.quota_tokens;
      break;
    case BudgetKind::window:
      window_s = b_.window_s;
      break;
    case BudgetKind::ratio_ttl:
      window_s = b_.ttl_s;
      ratio_eff_ = b_.ratio;
      floor_ = b_.clients * b_.min_retries_per_s * b_.ttl_s;
      break;
    case BudgetKind::none:
    case BudgetKind::envoy_concurrency:
      break;
  }
  tokens_ = bucket_size_;  // buckets start full
  if (rolling()) {
    auto steps = static_cast<size_t>(std::lround(window_s / s.step_s));
    first_ring_.assign(std::max<size_t>(steps, 1), 0.0);
    retry_ring_.assign(first_ring_.size(), 0.0);
    slot_ = first_ring_.size() - 1;
  }
}

void RetryBudget::begin_step(double first_attempts) {
  taken_this_step_ = 0;
  if (kind_ == BudgetKind::token_bucket) {
    add_tokens(b_.ratio * first_attempts);
  } else if (rolling()) {
    // The oldest step leaves the window, this step enters it.
    slot_ = (slot_ + 1) % first_ring_.size();
    first_in_window_ += first_attempts - first_ring_[slot_];
    retries_in_window_ -= retry_ring_[slot_];
    first_ring_[slot_] = first_attempts;
    retry_ring_[slot_] = 0;
  }
}

double RetryBudget::available(const InFlight& in_flight) const {
  constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  switch (kind_) {
    case BudgetKind::none:
      return kUnlimited;
    case BudgetKind::token_bucket:
      return tokens_;
    case BudgetKind::aws_quota:
      return b_.timeout_cost > 0 ? tokens_ / b_.timeout_cost : kUnlimited;
    case BudgetKind::grpc_throttling:
      return tokens_ > bucket_size_ / 2 ? kUnlimited : 0;
    case BudgetKind::envoy_concurrency: {
      // Retries sent this step join the requests and retries in flight.
      double allowed = std::max(b_.ratio * (in_flight.attempts + taken_this_step_),
                                b_.clients * b_.min_concurrency);
      return std::max(0.0, allowed - in_flight.retries - taken_this_step_);
    }
    case BudgetKind::window:
    case BudgetKind::ratio_ttl:
      break;
  }
  return std::max(0.0, floor_ + ratio_eff_ * first_in_window_ - retries_in_window_);
}

void RetryBudget::add_tokens(double delta) {
  tokens_ = std::clamp(tokens_ + delta, 0.0, bucket_size_);
}

double RetryBudget::take(double wanted, const InFlight& in_flight) {
  if (kind_ == BudgetKind::none) return wanted;
  double taken = std::min(wanted, available(in_flight));
  taken_this_step_ += taken;
  if (kind_ == BudgetKind::token_bucket) {
    tokens_ -= taken;
  } else if (kind_ == BudgetKind::aws_quota) {
    add_tokens(-taken * b_.timeout_cost);
  } else if (rolling()) {
    retry_ring_[slot_] += taken;
    retries_in_window_ += taken;
  }
  return taken;
}

void RetryBudget::on_success(double amount, int attempt) {
  if (kind_ == BudgetKind::grpc_throttling) add_tokens(amount * b_.token_ratio);
  if (kind_ == BudgetKind::aws_quota)
    add_tokens(amount * (attempt == 1 ? b_.success_reward : b_.timeout_cost));
}

void RetryBudget::on_attempt_failed(double amount) {
  if (kind_ == BudgetKind::grpc_throttling) add_tokens(-amount);
}

}  // namespace retrystorm
