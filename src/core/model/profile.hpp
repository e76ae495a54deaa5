// A load profile (docs/scenario-keys.md, demand.profile and
// server.capacity_profile): a multiplier of demand or capacity over time,
// given as points "T:F,T:F,..." (seconds, factor) joined by straight lines
// (two points at one time make a step), flat before the first point and
// after the last, repeated every `period_s` when that is above 0. An empty
// text is the constant 1: today's model. The scripted incident multiplies
// on top.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace retrystorm {

struct Profile {
  std::vector<std::pair<double, double>> points;  // (t_s, factor), t_s non-decreasing
  double period_s = 0;
  bool empty() const { return points.empty(); }
  double at(double t_s) const;  // the factor at t_s
  double highest() const;       // the largest factor (1 when empty)
};

constexpr size_t kProfilePoints = 10000;

// Reads `text`; InputError names `key`, the point and what is allowed.
Profile parse_profile(const std::string& text, double period_s, const std::string& key);

}  // namespace retrystorm
