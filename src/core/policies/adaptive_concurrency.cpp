#include "policies/adaptive_concurrency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace retrystorm {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

GradientSettings gradient_settings(const Scenario& s) {
  const auto& c = s.server.concurrency;
  return {c.update_interval_s, c.min_rtt_interval_s, c.jitter,          c.buffer,
          c.percentile,        c.min_rtt_requests,   c.min_concurrency, c.max_concurrency};
}

GradientController::GradientController(const GradientSettings& settings, uint64_t seed)
    : s_(settings),
      rng_(seed),
      limit_(settings.min_concurrency),
      next_reset_s_(settings.update_interval_s),
      next_min_rtt_s_(kNever) {
  enter_min_rtt_window(0);  // the constructor measures minRTT first
}

void GradientController::advance(double now_s) {
  while (std::min(next_reset_s_, next_min_rtt_s_) <= now_s) {
    if (next_min_rtt_s_ <= next_reset_s_) {
      const double at = next_min_rtt_s_;
      next_min_rtt_s_ = kNever;
      enter_min_rtt_window(at);
    } else {
      const double at = next_reset_s_;
      // In the minRTT window the reset timer gives up; updateMinRTT re-arms it.
      next_reset_s_ = measuring_min_rtt() ? kNever : at + s_.update_interval_s;
      if (!measuring_min_rtt()) reset_sample_window(at);
    }
  }
}

void GradientController::enter_min_rtt_window(double now_s) {
  if (measuring_min_rtt()) return;
  deferred_limit_ = limit_;
  set_limit(s_.min_concurrency, now_s);
  samples_.clear();
  min_rtt_epoch_s_ = now_s;
}

void GradientController::update_min_rtt(double now_s) {
  if (!samples_.empty()) min_rtt_s_ = take_percentile();
  // Envoy's updateMinRTT restores the limit before it clears the deferred
  // one: the restore happens inside the window and counts as no update at
  // the minimum.
  set_limit(deferred_limit_, now_s);
  deferred_limit_ = 0;
  // applyJitter: interval + (random % ceil(interval x jitter)), in whole ms.
  const double range_ms = std::ceil(s_.min_rtt_interval_s * 1000 * s_.jitter);
  const double jitter_ms =
      range_ms > 0 ? static_cast<double>(rng_.next() % static_cast<uint64_t>(range_ms)) : 0;
  next_min_rtt_s_ = std::min(next_min_rtt_s_, now_s + s_.min_rtt_interval_s + jitter_ms / 1000);
  next_reset_s_ = now_s + s_.update_interval_s;
}

void GradientController::reset_sample_window(double now_s) {
  if (samples_.empty()) return;
  sample_rtt_s_ = take_percentile();
  if (!(sample_rtt_s_ > 0)) return;  // calculateNewLimit asserts a positive sample
  const double gradient = std::clamp(min_rtt_s_ * (1 + s_.buffer) / sample_rtt_s_, 0.5, 2.0);
  const double limit = limit_ * gradient;
  const auto next = static_cast<int64_t>(limit + std::sqrt(limit));  // the burst headroom
  set_limit(static_cast<int>(std::clamp<int64_t>(next, s_.min_concurrency, s_.max_concurrency)),
            now_s);
}

double GradientController::take_percentile() {
  // Envoy reads an approximate quantile from a log-linear histogram; here the
  // samples' own (the lower of the two around it).
  const size_t k = static_cast<size_t>(std::clamp(
      std::ceil(s_.percentile * double(samples_.size())) - 1, 0.0, double(samples_.size() - 1)));
  std::nth_element(samples_.begin(), samples_.begin() + static_cast<long>(k), samples_.end());
  const double q = samples_[k];
  samples_.clear();
  return q;
}

void GradientController::set_limit(int limit, double now_s) {
  const int old = limit_;
  limit_ = limit;
  at_minimum_ = !measuring_min_rtt() && old == s_.min_concurrency && limit == s_.min_concurrency
                    ? at_minimum_ + 1
                    : 0;
  // Five windows in a row at the minimum: minRTT may be wrong; measure again now.
  if (at_minimum_ >= 5) next_min_rtt_s_ = now_s;
}

bool GradientController::admit(double now_s) {
  advance(now_s);
  if (outstanding_ < limit_) {
    ++outstanding_;
    return true;
  }
  ++blocked_;
  return false;
}

void GradientController::on_answer(double now_s, double sent_s) {
  advance(now_s);
  --outstanding_;
  if (sent_s < min_rtt_epoch_s_) return;  // from before this minRTT window
  samples_.push_back(now_s - sent_s);
  if (measuring_min_rtt() && samples_.size() >= static_cast<size_t>(s_.min_rtt_requests))
    update_min_rtt(now_s);
}

void GradientController::on_cancel(double now_s) {
  advance(now_s);
  --outstanding_;
}

}  // namespace retrystorm
