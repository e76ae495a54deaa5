// The client-side defenses in front of each client instance's innermost
// attempts (docs/policies.md, "Circuit breakers", "Client-side throttling",
// "Bulkheads"): Envoy's max_requests overflow first, then the circuit
// breaker, then adaptive throttling, one of each per client
// (client.budget.clients). An attempt they refuse fails at once and is not
// retried. The agent engine and the lab's caller both ask this class, so the
// engine's prediction and the lab's measurement run the same rules. No I/O:
// the clock and the random draw are the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/scenario.hpp"
#include "policies/adaptive_throttle.hpp"
#include "policies/circuit_breaker.hpp"

namespace retrystorm {

class ClientGuards {
 public:
  explicit ClientGuards(const Scenario& s);

  bool on() const { return on_; }              // any of the three is set
  size_t clients() const { return clients_; }  // client.budget.clients, at least 1

  // An attempt of `client` asks to go at now_s. False: refused. True: it
  // goes with `ticket`, which it hands back when it is heard and when it
  // ends. `uniform` is drawn only when the throttle decides (so that a run
  // without one keeps its random stream).
  template <class Uniform>
  bool admit(size_t client, double now_s, Uniform&& uniform, uint32_t& ticket) {
    ticket = 0;
    if (!in_flight_.empty() && in_flight_[client] >= max_requests_) return false;
    if (!breakers_.empty()) {
      ticket = breakers_[client].admit(now_s);
      if (ticket == 0) return false;
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
    if (!breakers_.empty()) breakers_[client].on_outcome(now_s, ok, ticket & ~kHoldsSlot);
    if (!throttles_.empty()) throttles_[client].on_answer(now_s, ok);
  }
  // The attempt is no longer in flight: its max_requests slot is free.
  void release(size_t client, uint32_t& ticket) {
    if (!(ticket & kHoldsSlot)) return;
    in_flight_[client] -= 1;
    ticket &= ~kHoldsSlot;
  }

  const std::vector<CircuitBreaker>& breakers() const { return breakers_; }

 private:
  // A ticket's top bit: the attempt holds one of its client's max_requests;
  // the other bits are the breaker's ticket.
  static constexpr uint32_t kHoldsSlot = uint32_t{1} << 31;

  size_t clients_ = 1;
  long max_requests_ = 0;
  bool on_ = false;
  std::vector<CircuitBreaker> breakers_;     // client.breaker
  std::vector<AdaptiveThrottle> throttles_;  // client.throttle_k
  std::vector<long> in_flight_;              // client.max_requests: attempts in flight
};

}  // namespace retrystorm
