// Envoy's outlier detection and round robin (rules: outlier_detection.hpp).
#include "policies/outlier_detection.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

OutlierDetector::OutlierDetector(const OutlierSettings& settings, int hosts, uint64_t first)
    : settings_(settings),
      hosts_(static_cast<size_t>(std::max(1, hosts))),
      rr_healthy_(first),
      rr_all_(first),
      next_tick_(settings.interval_s) {
  healthy_.reserve(hosts_.size());
  for (size_t h = 0; h < hosts_.size(); ++h) healthy_.push_back(static_cast<int>(h));
}

// LoadBalancerBase::isHostSetInPanic: the share of hosts not ejected below
// the threshold sends traffic to every host.
bool OutlierDetector::in_panic() const {
  return 100.0 * static_cast<double>(healthy_.size()) / static_cast<double>(hosts_.size()) <
         settings_.panic_percent;
}

int OutlierDetector::pick(double now) {
  if (settings_.consecutive_5xx > 0) catch_up(now);
  if (in_panic()) return static_cast<int>(rr_all_++ % hosts_.size());
  if (healthy_.empty()) return -1;  // no healthy upstream (a threshold of 0 never panics)
  return healthy_[rr_healthy_++ % healthy_.size()];
}

void OutlierDetector::heard(int host, bool five_xx, double now) {
  if (settings_.consecutive_5xx <= 0) return;
  catch_up(now);
  Host& h = hosts_[static_cast<size_t>(host)];
  if (!five_xx) {
    h.consecutive = 0;
    return;
  }
  // Only the answer that makes the run exactly the threshold acts; an
  // ejected host's run goes on counting until it is back.
  if (++h.consecutive != settings_.consecutive_5xx || h.ejected) return;
  h.consecutive = 0;
  double percent = 100.0 * (ejected_count_ + 1) / static_cast<double>(hosts_.size());
  if (percent <= settings_.max_percent) eject(static_cast<size_t>(host), now);
}

void OutlierDetector::eject(size_t host, double now) {
  Host& h = hosts_[host];
  h.ejected = true;
  h.ejected_at = now;
  if (h.multiplier * settings_.ejection_s < settings_.max_ejection_s + settings_.ejection_s)
    ++h.multiplier;
  ++h.ejections;
  ++ejected_count_;
  healthy_.erase(std::find(healthy_.begin(), healthy_.end(), static_cast<int>(host)));
}

// Nothing to bring back and no multiplier to shrink: ticks change nothing.
bool OutlierDetector::idle() const {
  if (ejected_count_ > 0) return false;
  return std::none_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return h.multiplier > 0; });
}

void OutlierDetector::catch_up(double now) {
  while (next_tick_ <= now) {
    if (idle()) {  // skip to the first tick after now
      next_tick_ +=
          settings_.interval_s * std::floor((now - next_tick_) / settings_.interval_s + 1);
      return;
    }
    tick(next_tick_);
    next_tick_ += settings_.interval_s;
  }
}

// DetectorImpl::onIntervalTimer with consecutive 5xx as the only detector.
void OutlierDetector::tick(double at) {
  for (size_t i = 0; i < hosts_.size(); ++i) {
    Host& h = hosts_[i];
    if (!h.ejected) continue;
    double out = std::min(settings_.ejection_s * h.multiplier, settings_.max_ejection_s);
    if (out > at - h.ejected_at) continue;
    h.ejected = false;
    h.consecutive = 0;
    h.back_once = true;
    h.back_at = at;
    h.out_s += at - h.ejected_at;
    --ejected_count_;
    healthy_.insert(std::lower_bound(healthy_.begin(), healthy_.end(), static_cast<int>(i)),
                    static_cast<int>(i));
  }
  for (Host& h : hosts_)
    if (!h.ejected && h.back_once && at - h.back_at >= settings_.interval_s && h.multiplier > 0)
      --h.multiplier;
}

double OutlierDetector::ejected_s(int host, double now) {
  if (settings_.consecutive_5xx > 0) catch_up(now);
  const Host& h = hosts_[static_cast<size_t>(host)];
  return h.out_s + (h.ejected ? std::max(0.0, now - h.ejected_at) : 0.0);
}

}  // namespace retrystorm
