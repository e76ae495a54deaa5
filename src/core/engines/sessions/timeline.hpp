// The API's state over time (api.timeline): healthy, dead (every call 429),
// rate limited (429 with probability p) or refusing credentials (401).
#pragma once

#include <string>
#include <vector>

namespace retrystorm::sessions {

enum class ApiState { healthy, dead, rate_limited, auth_fail };

struct ApiPhase {
  double from_s;
  ApiState state;
  double p;  // rate_limited: chance of a 429
};

class ApiTimeline {
 public:
  ApiTimeline() = default;
  // Parses "WHEN STATE, ..." (see sessions_scenario.hpp); throws InputError
  // naming api.timeline. Entries must be in time order.
  explicit ApiTimeline(const std::string& text);

  const ApiPhase& at(double t_s) const;
  const std::vector<ApiPhase>& phases() const { return phases_; }

 private:
  std::vector<ApiPhase> phases_{{0, ApiState::healthy, 0}};
};

}  // namespace retrystorm::sessions
