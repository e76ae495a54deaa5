// Envoy's outlier detection as one client (one Envoy) runs it over the hosts
// of a dependency, and the round-robin pick among the hosts it has not
// ejected (docs/policies.md, "Outlier detection"). The rules are those of
// source/common/upstream/outlier_detection_impl.cc:
//   - a 5xx answer (a timeout counts as 504, a refused connection as 503, a
//     reset as 500) adds one to the host's run of consecutive 5xx; any
//     other answer (a success, a 429) ends the run
//     (DetectorHostMonitorImpl::putHttpResponseCode);
//   - the run reaching consecutive_5xx ejects the host unless it is ejected
//     already, as long as the hosts ejected, this one included, stay within
//     max_ejection_percent; the run starts again either way
//     (onConsecutiveErrorWorker, ejectHost);
//   - each ejection lengthens the next: the host stays out
//     min(base x multiplier, max) and the multiplier grows by one while
//     multiplier x base < max + base (ejectHost);
//   - every interval, hosts whose time is up come back with their runs
//     reset, and the multiplier of a host back for at least an interval
//     shrinks by one (onIntervalTimer, checkHostForUneject);
//   - the load balancer picks round robin among the hosts not ejected, or
//     among all when fewer than healthy_panic_threshold percent are left
//     (LoadBalancerBase::isHostSetInPanic, RoundRobinLoadBalancer).
// Not modelled: success-rate and failure-percentage ejection (Envoy enforces
// success rate by default from 5 hosts with 100 requests each per
// interval; Istio turns it off), consecutive gateway failures (not enforced
// by default), jitter on the ejection time (0 by default).
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.hpp"  // OutlierSettings

namespace retrystorm {

class OutlierDetector {
 public:
  // `first`: where this client's round robin starts (Envoy starts each
  // load balancer at a random host; the engine spreads clients over hosts).
  OutlierDetector(const OutlierSettings& settings, int hosts, uint64_t first);

  // The host the next attempt goes to; -1 when every host is ejected and
  // the balancer does not panic (Envoy's "no healthy upstream").
  int pick(double now);
  // The host answered (`five_xx`: a 5xx, a timeout, a refused connection or
  // a reset; otherwise a success or another status).
  void heard(int host, bool five_xx, double now);

  bool ejected(int host) const { return hosts_[static_cast<size_t>(host)].ejected; }
  uint64_t ejections(int host) const { return hosts_[static_cast<size_t>(host)].ejections; }
  // Seconds host `host` spent ejected up to `now`.
  double ejected_s(int host, double now);

 private:
  struct Host {
    int consecutive = 0;  // the current run of 5xx
    int multiplier = 0;   // ejectTimeBackoff
    bool ejected = false;
    bool back_once = false;  // lastUnejectionTime is set
    double ejected_at = 0;
    double back_at = 0;
    double out_s = 0;  // ejected time of the ejections that ended
    uint64_t ejections = 0;
  };

  void catch_up(double now);  // the interval timer's ticks up to now
  void tick(double at);
  void eject(size_t host, double now);
  bool idle() const;  // a tick would change nothing
  bool in_panic() const;

  OutlierSettings settings_;
  std::vector<Host> hosts_;
  std::vector<int> healthy_;  // the hosts not ejected, in order
  uint64_t rr_healthy_, rr_all_;
  double next_tick_;
  int ejected_count_ = 0;
};

}  // namespace retrystorm
