#include "policies/budget.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/client_policy.hpp"

namespace retrystorm {

RetryBudget::RetryBudget(const Scenario& s)
    : RetryBudget(ClientPolicy::of(s), s.demand.rate_per_s, s.step_s) {}

RetryBudget::RetryBudget(const ClientPolicy& policy, double base_demand_per_s, double step_s)
    : kind_(policy.budget().kind),
      b_(policy.budget()),
      ratio_eff_(std::pow(1 + policy.budget().ratio, policy.layers()) - 1) {
  double window_s = 0;
  switch (kind_) {
    case BudgetKind::token_bucket:
      // Sized from the base demand: an incident does not resize the bucket.
      bucket_size_ = b_.ratio * base_demand_per_s * b_.window_s;
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
      // tower's TpsBudget: the reserve counts whole seconds of ttl.
      window_s = b_.ttl_s;
      ratio_eff_ = linkerd_ratio(b_.ratio);
      floor_ = b_.clients * b_.min_retries_per_s * std::floor(b_.ttl_s);
      break;
    case BudgetKind::none:
    case BudgetKind::envoy_concurrency:
      break;
  }
  tokens_ = bucket_size_;  // buckets start full
  if (rolling()) {
    auto steps = static_cast<size_t>(std::lround(window_s / step_s));
    first_ring_.assign(std::max<size_t>(steps, 1), 0.0);
    retry_ring_.assign(first_ring_.size(), 0.0);
    slot_ = first_ring_.size() - 1;
  }
}

void RetryBudget::begin_step(double first_attempts) {
  if (kind_ == BudgetKind::token_bucket) {
    add_tokens(b_.ratio * first_attempts);
  } else if (rolling()) {
    // The oldest step leaves the window, this step enters it.
    // Linkerd deposits outcomes, not requests (on_success, on_attempt_failed).
    double entering = kind_ == BudgetKind::window ? first_attempts : 0;
    slot_ = (slot_ + 1) % first_ring_.size();
    first_in_window_ += entering - first_ring_[slot_];
    retries_in_window_ -= retry_ring_[slot_];
    first_ring_[slot_] = entering;
    retry_ring_[slot_] = 0;
  }
}

void RetryBudget::deposit(double amount) {
  first_ring_[slot_] += amount;
  first_in_window_ += amount;
}

double RetryBudget::linkerd_ratio(double ratio) {
  // tower-rs/tower tower/src/retry/budget/tps_budget.rs TpsBudget::new: a
  // deposit is worth 1 (1000 above a ratio of 1) and a withdrawal costs the
  // whole part of its inverse.
  if (ratio <= 0) return 0;
  if (ratio <= 1) return 1 / std::floor(1 / ratio);
  return 1000 / std::floor(1000 / ratio);
}

double RetryBudget::available(const InFlight& in_flight, RetryCause cause) const {
  constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  switch (kind_) {
    case BudgetKind::none:
      return kUnlimited;
    case BudgetKind::token_bucket:
      return tokens_;
    case BudgetKind::aws_quota:
      return cost(cause) > 0 ? tokens_ / cost(cause) : kUnlimited;
    case BudgetKind::grpc_throttling:
      return tokens_ > bucket_size_ / 2 ? kUnlimited : 0;
    case BudgetKind::envoy_concurrency:
      // The engine counts what it admitted in in_flight.retries.
      return std::max(0.0, envoy_limit(b_, in_flight.attempts) - in_flight.retries);
    case BudgetKind::window:
    case BudgetKind::ratio_ttl:
      break;
  }
  return std::max(0.0, floor_ + ratio_eff_ * first_in_window_ - retries_in_window_);
}

double RetryBudget::envoy_limit(const Budget& b, double requests) {
  // Envoy's RetryBudgetImpl::max truncates budget_percent / 100.0 x active
  // to a whole number as it comes, binary error included: 29% of 100 is
  // 28.999999999999996 there, so 28 retries.
  double clients = std::max(b.clients, 1.0);
  double per_instance = std::floor(b.ratio * (requests / clients));
  return clients * std::max(per_instance, b.min_concurrency);
}

void RetryBudget::add_tokens(double delta) {
  tokens_ = std::clamp(tokens_ + delta, 0.0, bucket_size_);
}

double RetryBudget::take(double wanted, const InFlight& in_flight, RetryCause cause) {
  if (kind_ == BudgetKind::none) return wanted;
  double taken = std::min(wanted, available(in_flight, cause));
  if (kind_ == BudgetKind::token_bucket) {
    tokens_ -= taken;
  } else if (kind_ == BudgetKind::aws_quota) {
    add_tokens(-taken * cost(cause));
  } else if (rolling()) {
    retry_ring_[slot_] += taken;
    retries_in_window_ += taken;
  }
  return taken;
}

bool RetryBudget::take_one(RetryCause cause) {
  // botocore retries/quota.py RetryQuota.acquire: all or nothing. The
  // tolerance keeps fractional rewards summed to a whole cost from refusing.
  if (cost(cause) > tokens_ + 1e-9) return false;
  add_tokens(-cost(cause));
  return true;
}

void RetryBudget::on_success(double amount, int attempt, RetryCause cause) {
  if (kind_ == BudgetKind::grpc_throttling) add_tokens(amount * b_.token_ratio);
  if (kind_ == BudgetKind::ratio_ttl) deposit(amount);
  if (kind_ == BudgetKind::aws_quota)
    add_tokens(amount * (attempt == 1 ? b_.success_reward : cost(cause)));
}

void RetryBudget::on_attempt_failed(double amount, bool retryable) {
  if (kind_ == BudgetKind::grpc_throttling && retryable) add_tokens(-amount);
  if (kind_ == BudgetKind::ratio_ttl && !retryable) deposit(amount);
}

}  // namespace retrystorm
