// One server with metafor's example numbers on the agent engine (the
// scenario of `risk`'s tests and benchmarks, docs/risk.md): Poisson
// arrivals at 9.5/s, exponential service at 10/s, 99 waiting places, a 3 s
// timeout and 4 retries after a short random delay, no scripted incident.
#pragma once

#include <map>
#include <string>

namespace retrystorm::testing {

inline std::map<std::string, std::string> random_server_keys() {
  return {{"engine", "agent"},
          {"demand.rate_per_s", "9.5"},
          {"demand.process", "poisson"},
          {"server.capacity_per_s", "10"},
          {"server.service", "exponential"},
          {"server.queue_limit", "99"},
          {"client.timeout_s", "3"},
          {"client.retries", "4"},
          {"client.backoff.base_s", "0.2"},
          {"client.backoff.jitter", "full"},
          {"incident.duration_s", "0"},
          {"horizon_s", "1200"},
          {"step_s", "1"},
          {"recovery.criterion", "goodput"}};
}

}  // namespace retrystorm::testing
