#include "engines/sessions/timeline.hpp"

#include <algorithm>
#include <sstream>

#include "engines/sessions/clock.hpp"
#include "model/keys.hpp"
#include "text/list.hpp"

namespace retrystorm::sessions {

namespace {

const char* kKey = "api.timeline";

ApiPhase parse_entry(const std::string& entry) {
  std::istringstream in(entry);
  std::string when, state, extra;
  in >> when >> state >> extra;
  if (when.empty() || state.empty() || !extra.empty())
    throw InputError(std::string(kKey) + ": '" + entry +
                     "' must be WHEN STATE, like '1d09:40 429:0.55'");
  ApiPhase phase{parse_clock(when, kKey), ApiState::healthy, 0};
  if (state == "healthy") return phase;
  if (state == "dead") return {phase.from_s, ApiState::dead, 1};
  if (state == "401") return {phase.from_s, ApiState::auth_fail, 1};
  if (state.rfind("429:", 0) == 0) {
    try {
      size_t used = 0;
      double p = std::stod(state.substr(4), &used);
      if (used == state.size() - 4 && p >= 0 && p <= 1)
        return {phase.from_s, ApiState::rate_limited, p};
    } catch (const std::exception&) {
    }
  }
  throw InputError(std::string(kKey) + ": state '" + state +
                   "' is not allowed; choose healthy, dead, 429:P (P from 0 to 1) or 401");
}

}  // namespace

ApiTimeline::ApiTimeline(const std::string& text) {
  for (std::string_view item : text::list_items(text)) {
    std::string entry(item);
    if (entry.find_first_not_of(" \t\n") == std::string::npos) continue;
    ApiPhase phase = parse_entry(entry);
    if (phase.from_s < phases_.back().from_s)
      throw InputError(std::string(kKey) + ": '" + entry + "' comes before the entry above it");
    phases_.push_back(phase);
  }
}

const ApiPhase& ApiTimeline::at(double t_s) const {
  auto after = std::upper_bound(phases_.begin(), phases_.end(), t_s,
                                [](double t, const ApiPhase& p) { return t < p.from_s; });
  return *(after - 1);
}

}  // namespace retrystorm::sessions
