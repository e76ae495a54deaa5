#include "policies/client_guards.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

ClientGuards::ClientGuards(const Scenario& s)
    : clients_(static_cast<size_t>(std::max(1LL, std::llround(s.client.budget.clients)))),
      max_requests_(static_cast<long>(s.client.max_requests)) {
  if (s.client.breaker.kind != BreakerKind::none)
    breakers_.assign(clients_, CircuitBreaker(breaker_settings(s)));
  if (s.client.throttle.k > 0) throttles_.assign(clients_, AdaptiveThrottle(throttle_settings(s)));
  if (max_requests_ > 0) in_flight_.assign(clients_, 0);
  on_ = !breakers_.empty() || !throttles_.empty() || !in_flight_.empty();
}

}  // namespace retrystorm
