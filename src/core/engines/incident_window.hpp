// The incident as whole steps, computed once for every engine that steps
// through time (fluid, agent): the steps Scenario::in_incident names; and
// the load profiles per step.
#pragma once

#include "model/scenario.hpp"

namespace retrystorm {

// Steps [first, end) of the run; empty when the incident misses the horizon.
struct IncidentWindow {
  int first = 0, end = 0;
  bool contains(int step) const { return first <= step && step < end; }
  bool empty() const { return first >= end; }
};

// Step t's span of time, [start, end): the last step ends at the horizon.
struct StepSpan {
  double start, end;
};
inline StepSpan step_span(const Scenario& s, int t, int steps) {
  return {t * s.step_s, t + 1 == steps ? s.horizon_s : (t + 1) * s.step_s};
}

// The load profiles' multipliers of a step (model/profile.hpp), read at the
// step's middle so that a ramp's step gets its mean; 1 without a profile.
// Without a profile no step pays for one: `any` is checked first.
struct StepProfiles {
  Profile demand, capacity;
  bool any;
  explicit StepProfiles(const Scenario& s)
      : demand(s.demand_profile()),
        capacity(s.capacity_profile_over_time()),
        any(!demand.empty() || !capacity.empty()) {}
  double demand_at(StepSpan span) const { return demand.at((span.start + span.end) / 2); }
  double capacity_at(StepSpan span) const { return capacity.at((span.start + span.end) / 2); }
};

inline IncidentWindow steps_of(const Scenario& s) {
  IncidentWindow w;
  const int steps = s.steps();
  while (w.first < steps && !s.in_incident(w.first)) ++w.first;
  w.end = w.first;
  while (w.end < steps && s.in_incident(w.end)) ++w.end;
  return w;
}

}  // namespace retrystorm
