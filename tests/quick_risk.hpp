// A few replications of `risk` at the given loads, without the exact chain:
// the options of the risk tests that read the agent engine's estimates.
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "analysis/risk.hpp"

namespace retrystorm::testing {

inline RiskOptions quick_risk(std::vector<double> loads, int runs) {
  RiskOptions o;
  o.loads = std::move(loads);
  o.runs = runs;
  o.exact = false;
  return o;
}

// The same estimates from 8 replications on one thread and on two.
inline void expect_same_risk_on_any_threads(const Scenario& s, double load) {
  RiskOptions one = quick_risk({load}, 8), two = one;
  one.threads = 1, two.threads = 2;
  const RiskLevel a = assess_risk(s, one).levels[0], b = assess_risk(s, two).levels[0];
  EXPECT_EQ(a.enter.exposure_s, b.enter.exposure_s);
  EXPECT_EQ(a.enter.events, b.enter.events);
  EXPECT_EQ(a.tipped_seed, b.tipped_seed);
  EXPECT_EQ(a.leave.exposure_s, b.leave.exposure_s);
}

}  // namespace retrystorm::testing
