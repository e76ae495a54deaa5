// The client-side defenses in front of each client instance's innermost
// attempts (docs/policies.md, "Circuit breakers", "Client-side throttling",
// "Envoy's cluster thresholds as bulkheads"): Envoy's HTTP/1 connection pool
// (max_connections, max_pending_requests) first, then its max_requests
// overflow, then the circuit breaker, then adaptive throttling, one of each
// per client (client.budget.clients). An attempt they refuse fails at once
// and is not retried. The agent engine and the lab's caller both ask this
// class, so the engine's prediction and the lab's measurement run the same
// rules. No I/O: the clock and the random draw are the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "model/scenario.hpp"
#include "policies/adaptive_throttle.hpp"
#include "policies/circuit_breaker.hpp"

namespace retrystorm {

class ClientGuards {
 public:
  explicit ClientGuards(const Scenario& s);

  bool on() const { return on_; }                   // any of them is set
  static bool wanted(const Scenario& s);            // on() for a guard built from s
  bool pool_on() const { return !pools_.empty(); }  // client.max_connections
  size_t clients() const { return clients_; }       // client.budget.clients, at least 1

  // ---- the connection pool (Envoy's conn_pool_base.cc, newStream and
  // onUpstreamReady; HTTP/1: one attempt per connection) ----
  // An attempt of `client` asks for a connection: `go` takes one (marked in
  // its ticket); `wait` queues it as `waiter` (FIFO) until one is free, its
  // per-try timer not yet running (Envoy arms it in onPoolReady); `overflow`
  // when the pending queue is full (upstream_rq_pending_overflow: answered
  // 503 at once, never retried).
  enum class PoolAnswer { go, wait, overflow };
  PoolAnswer ask_connection(size_t client, uint64_t waiter, uint32_t& ticket);
  // A waiter left the queue without a connection (its request ended).
  void left_pending(size_t client) {
    pools_[client].pending -= 1;
    waiting_ -= 1;
  }
  // Attempts waiting for a connection, all clients together.
  long waiting() const { return waiting_; }
  // The connection handed to a waiter that release() returned.
  static void hand_connection(uint32_t& ticket) { ticket |= kHoldsConnection; }
  static bool holds_connection(uint32_t ticket) { return ticket & kHoldsConnection; }

  // An attempt of `client` asks to go at now_s. False: refused. True: it
  // goes with `ticket`, which it hands back when it is heard and when it
  // ends. `uniform` is drawn only when the throttle decides (so that a run
  // without one keeps its random stream).
  template <class Uniform>
  bool admit(size_t client, double now_s, Uniform&& uniform, uint32_t& ticket) {
    ticket &= kHoldsConnection;
    if (!in_flight_.empty() && in_flight_[client] >= max_requests_) return false;
    if (!breakers_.empty()) {
      uint32_t breaker = breakers_[client].admit(now_s);
      if (breaker == 0) return false;
      ticket |= breaker;
    }
    if (!throttles_.empty() && throttles_[client].throttles(now_s, uniform())) return false;
    if (!in_flight_.empty()) {
      in_flight_[client] += 1;
      ticket |= kHoldsSlot;
    }
    return true;
  }
  // The attempt's answer (ok: answered well) or its timeout, heard at now_s:
  // the breaker and the throttle count it.
  void heard(size_t client, double now_s, bool ok, uint32_t ticket) {
    if (!breakers_.empty()) breakers_[client].on_outcome(now_s, ok, ticket & kBreakerBits);
    if (!throttles_.empty()) throttles_[client].on_answer(now_s, ok);
  }
  // The attempt is no longer in flight: its max_requests slot is free, and
  // its connection goes to the oldest waiter that `live(waiter)` still
  // accepts, returned (the caller hands it over), or is idle again.
  template <class Live>
  std::optional<uint64_t> release(size_t client, uint32_t& ticket, Live&& live) {
    if (ticket & kHoldsSlot) in_flight_[client] -= 1;
    bool connection = ticket & kHoldsConnection;
    ticket &= kBreakerBits;
    if (!connection) return std::nullopt;
    Pool& pool = pools_[client];
    while (!pool.waiters.empty()) {
      uint64_t next = pool.waiters.front();
      pool.waiters.pop_front();
      if (!live(next)) continue;  // it left, and was counted out then
      pool.pending -= 1;
      waiting_ -= 1;
      return next;
    }
    pool.busy -= 1;
    return std::nullopt;
  }

  const std::vector<CircuitBreaker>& breakers() const { return breakers_; }

 private:
  // A ticket's top bit: the attempt holds one of its client's max_requests;
  // the next, one of its connections; the others are the breaker's ticket.
  static constexpr uint32_t kHoldsSlot = uint32_t{1} << 31;
  static constexpr uint32_t kHoldsConnection = uint32_t{1} << 30;
  static constexpr uint32_t kBreakerBits = kHoldsConnection - 1;

  // One client's connections: in use, and the attempts waiting for one
  // (dead entries stay in the queue until they reach its front).
  struct Pool {
    long busy = 0, pending = 0;
    std::deque<uint64_t> waiters;
  };

  size_t clients_ = 1;
  long max_requests_ = 0;
  long max_connections_ = 0, max_pending_ = 0;
  std::vector<Pool> pools_;  // client.max_connections
  long waiting_ = 0;         // the pools' pending, summed
  bool on_ = false;
  std::vector<CircuitBreaker> breakers_;     // client.breaker
  std::vector<AdaptiveThrottle> throttles_;  // client.throttle_k
  std::vector<long> in_flight_;              // client.max_requests: attempts in flight
};

}  // namespace retrystorm
