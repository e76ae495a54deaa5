// An open queue for the agent engine's queueing-theory tests and its
// benchmark: Poisson arrivals at `lambda` per second, exponential service at
// `mu` per second in all, no incident and no retries; the default timeout
// never fires. Callers set what differs, then validate().
#pragma once

#include "model/scenario.hpp"

namespace retrystorm::testing {

inline Scenario open_queue(double lambda, double mu, double horizon_s, double timeout_s = 1e6) {
  Scenario s;
  s.engine = Engine::agent;
  s.horizon_s = horizon_s;
  s.demand.rate_per_s = lambda;
  s.demand.process = DemandProcess::poisson;
  s.server.capacity_per_s = mu;
  s.server.service = ServiceDist::exponential;
  s.incident.duration_s = 0;
  s.client.timeout_s = timeout_s;
  s.client.retries = 0;
  return s;
}

}  // namespace retrystorm::testing
