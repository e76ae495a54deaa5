// The incident as whole steps, computed once for every engine that steps
// through time (fluid, agent): the steps Scenario::in_incident names; and
// the load profiles per step.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <iterator>
#include <utility>
#include <vector>

#include "model/scenario.hpp"
#include "random/rng.hpp"

namespace retrystorm {

// Steps [first, end) of the run; empty when the incident misses the horizon.
// Incidents at random (incident.random_per_h) are several such windows, in
// order and apart; first and end are then the first one's.
struct IncidentWindow {
  int first = 0, end = 0;
  std::vector<std::pair<int, int>> more;  // the windows after the first
  bool contains(int step) const {
    if (first <= step && step < end) return true;
    if (more.empty() || step < end) return false;
    auto after = std::upper_bound(more.begin(), more.end(), std::pair{step, INT_MAX});
    return after != more.begin() && step < std::prev(after)->second;
  }
  bool empty() const { return first >= end; }
  bool several() const { return !more.empty(); }
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

// Incidents at random: starts of a Poisson process of incident.random_per_h
// over the run, each lasting incident.duration_s, from the run's seed (a
// stream of their own, so the arrivals' stream keeps its numbers); windows
// that touch are one.
inline IncidentWindow random_steps_of(const Scenario& s) {
  IncidentWindow w;
  const int steps = s.steps();
  const double per_step = s.incident.random_per_h / 3600 * s.step_s;
  const double length = s.incident.duration_s / s.step_s;
  Rng rng(static_cast<uint64_t>(s.seed) ^ 0x5ca1ab1e0ddba11ULL);
  std::vector<std::pair<int, int>> windows;
  for (double at = rng.exponential(1 / per_step); at < steps; at += rng.exponential(1 / per_step)) {
    const int from = static_cast<int>(std::floor(at));
    const int to = std::min(steps, static_cast<int>(std::ceil(at + length)));
    if (!windows.empty() && from <= windows.back().second)
      windows.back().second = std::max(windows.back().second, to);
    else
      windows.emplace_back(from, to);
  }
  if (windows.empty()) return w;
  w.first = windows[0].first;
  w.end = windows[0].second;
  w.more.assign(windows.begin() + 1, windows.end());
  return w;
}

inline IncidentWindow steps_of(const Scenario& s) {
  if (s.incident.random_per_h > 0) return random_steps_of(s);
  IncidentWindow w;
  const int steps = s.steps();
  while (w.first < steps && !s.in_incident(w.first)) ++w.first;
  w.end = w.first;
  while (w.end < steps && s.in_incident(w.end)) ++w.end;
  return w;
}

}  // namespace retrystorm
