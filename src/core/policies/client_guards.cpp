#include "policies/client_guards.hpp"

#include <algorithm>
#include <cmath>

namespace retrystorm {

ClientGuards::ClientGuards(const Scenario& s)
    : clients_(static_cast<size_t>(std::max(1LL, std::llround(s.client.budget.clients)))),
      max_requests_(static_cast<long>(s.client.max_requests)),
      max_connections_(static_cast<long>(s.client.max_connections)),
      max_pending_(static_cast<long>(s.client.max_pending_requests)) {
  if (max_connections_ > 0) pools_.assign(clients_, Pool{});
  if (s.client.breaker.kind != BreakerKind::none)
    breakers_.assign(clients_, CircuitBreaker(breaker_settings(s)));
  if (s.client.throttle.k > 0) throttles_.assign(clients_, AdaptiveThrottle(throttle_settings(s)));
  if (max_requests_ > 0) in_flight_.assign(clients_, 0);
  on_ = wanted(s);
}

bool ClientGuards::wanted(const Scenario& s) {
  return s.client.max_connections > 0 || s.client.breaker.kind != BreakerKind::none ||
         s.client.throttle.k > 0 || s.client.max_requests > 0;
}

ClientGuards::PoolAnswer ClientGuards::ask_connection(size_t client, uint64_t waiter,
                                                      uint32_t& ticket) {
  Pool& pool = pools_[client];
  if (pool.busy < max_connections_) {
    pool.busy += 1;
    ticket |= kHoldsConnection;
    return PoolAnswer::go;
  }
  if (pool.pending >= max_pending_) return PoolAnswer::overflow;
  pool.pending += 1;
  waiting_ += 1;
  pool.waiters.push_back(waiter);
  return PoolAnswer::wait;
}

}  // namespace retrystorm
