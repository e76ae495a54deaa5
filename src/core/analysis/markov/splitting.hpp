// Rare tipping by multilevel splitting (docs/risk.md, "Rare tipping"): the
// chance of reaching a set of states within a horizon, when it is too small
// for plain Monte Carlo to see. The way up is cut into levels of an
// importance function (attempts at the server); fixed effort: at each level
// `effort` walks start from where the walks that made it to this level
// entered it, with the time they had used, and the share that reaches the
// next level before the horizon is that stage's factor. The chance is the
// product of the factors.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/markov/chain.hpp"

namespace retrystorm::markov {

struct RareEstimate {
  double p = 0;    // the chance
  double low = 0;  // 95% interval
  double high = 0;
  std::vector<double> factors;  // per level, the mean share that made it
  long moves = 0;               // the work: moves walked in all
};

// P(importance reaches levels.back() within horizon_s, from `start`), with
// levels increasing and above importance[start]: the mean of `replicas`
// independent splitting runs, with Student's interval over them. The same
// seed gives the same estimate.
RareEstimate split_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         const std::vector<int>& levels, double horizon_s, int effort, int replicas,
                         uint64_t seed);

// The same chance by plain Monte Carlo: `runs` walks, Wilson's interval.
RareEstimate plain_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         int level, double horizon_s, int runs, uint64_t seed);

}  // namespace retrystorm::markov
