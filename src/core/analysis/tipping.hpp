// The tipping point: the shortest incident whose run does not recover
// (fluid-model.md, "Tipping point"), on a grid and exactly by bisection.
#pragma once

#include <optional>

#include "model/scenario.hpp"

namespace retrystorm {

struct TippingResult {
  double grid_s = 0;
  std::optional<double> on_grid_s;  // first grid duration that does not recover
  std::optional<double> exact_s;    // shortest such duration, to one step
};

// grid_s <= 0 uses the scenario's tipping.grid_s, or ten steps.
TippingResult tipping_point(const Scenario& s, double grid_s = 0);
double default_grid_s(const Scenario& s);

// Whether the run with this incident length recovers (scenario's criterion).
bool recovers_with_duration(Scenario s, double duration_s);

}  // namespace retrystorm
