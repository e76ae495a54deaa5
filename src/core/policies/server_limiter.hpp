// The concurrency limiter in front of the server (server.adaptive_concurrency;
// docs/policies.md, "Adaptive concurrency"): Envoy's gradient controller or
// a Netflix limit, behind one face for the engine. A let-through attempt
// gets a ticket to hand back with its outcome (a Netflix limit's sample
// needs the in-flight count at acquire).
#pragma once

#include <cstdint>
#include <optional>

#include "model/scenario.hpp"
#include "policies/adaptive_concurrency.hpp"
#include "policies/concurrency_limits.hpp"

namespace retrystorm {

class ServerLimiter {
 public:
  // seed: the limiter's own stream (Envoy's minRTT jitter, Vegas's probe).
  ServerLimiter(const Scenario& s, uint64_t seed) {
    if (s.server.concurrency.kind == ConcurrencyLimiter::envoy)
      envoy_.emplace(gradient_settings(s), seed);
    else
      netflix_.emplace(netflix_limit_settings(s), seed);
  }
  // 0 refuses: the attempt is answered 503 at once.
  uint32_t admit(double now_s) {
    if (envoy_) return envoy_->admit(now_s) ? 1 : 0;
    return netflix_->admit();
  }
  // An answer (Netflix: onSuccess) at now_s to an attempt let through at sent_s.
  void on_answer(double now_s, double sent_s, uint32_t ticket) {
    if (envoy_) return envoy_->on_answer(now_s, sent_s);
    netflix_->on_outcome(now_s - sent_s, ticket, false);
  }
  // No answer (shed or lost; Netflix: onDropped, as gRPC's server interceptor
  // hears a cancel).
  void on_cancel(double now_s, double sent_s, uint32_t ticket) {
    if (envoy_) return envoy_->on_cancel(now_s);
    netflix_->on_outcome(now_s - sent_s, ticket, true);
  }
  int limit() const { return envoy_ ? envoy_->limit() : netflix_->limit(); }

 private:
  std::optional<GradientController> envoy_;
  std::optional<NetflixLimiter> netflix_;
};

}  // namespace retrystorm
