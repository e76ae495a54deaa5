#include "analysis/markov/splitting.hpp"

#include <algorithm>
#include <cmath>

#include "engines/montecarlo.hpp"
#include "model/keys.hpp"

namespace retrystorm::markov {

namespace {

struct Entry {
  int state;
  double t_s;
};

// Walks from `from` until the importance reaches `level` (its entry) or the
// horizon passes (none).
std::optional<Entry> climb(const Walker& walker, Entry from, const std::vector<int>& importance,
                           int level, double horizon_s, Rng& rng, long& moves) {
  Entry at = from;
  while (importance[at.state] < level) {
    at.state = walker.step(at.state, at.t_s, rng);
    ++moves;
    if (at.t_s > horizon_s) return std::nullopt;
  }
  return at;
}

// Monte Carlo's rule for a share of a whole (engines/montecarlo.hpp): the
// mean within the values, the interval within [0, 1]. Products and factors
// are chances, and Student's interval over spread-out replicas (or nine
// means of 1 summed as ninths, 1.0000000000000002) would pass 1.
MetricSummary chance_summary(const std::vector<double>& values) {
  return summarize(values, 0, 1);
}

// Stage k's factor in each replica; 0 where a replica stopped before it.
std::vector<double> stage_factors(const std::vector<std::vector<double>>& factors, size_t k) {
  std::vector<double> out;
  out.reserve(factors.size());
  for (const auto& f : factors) out.push_back(k < f.size() ? f[k] : 0.0);
  return out;
}

}  // namespace

uint64_t walk_seed(uint64_t seed, uint64_t replica, uint64_t stage, uint64_t walk) {
  uint64_t h = seed;
  for (uint64_t part : {replica, stage, walk}) {
    uint64_t state = h ^ part;
    h = splitmix64(state);
  }
  return h;
}

RareEstimate combine_replicas(const std::vector<double>& products,
                              const std::vector<std::vector<double>>& factors) {
  RareEstimate e;
  size_t stages = 0;
  for (const auto& f : factors) stages = std::max(stages, f.size());
  for (size_t k = 0; k < stages; ++k)
    e.factors.push_back(chance_summary(stage_factors(factors, k)).mean);
  const MetricSummary m = chance_summary(products);
  e.p = m.mean, e.low = m.low, e.high = m.high;
  return e;
}

RareEstimate split_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         const std::vector<int>& levels, double horizon_s, int effort, int replicas,
                         uint64_t seed) {
  long moves = 0;  // one thread: the walks of a stage one after the other
  RareEstimate e =
      split_fixed_effort(Entry{start, 0.0}, SplitPlan{levels.size(), effort, replicas, seed, 1},
                         [&](const Entry& from, size_t k, Rng& rng) {
                           return climb(walker, from, importance, levels[k], horizon_s, rng, moves);
                         });
  e.moves = moves;
  return e;
}

RareEstimate plain_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         int level, double horizon_s, int runs, uint64_t seed) {
  RareEstimate e;
  int hits = 0;
  for (int i = 0; i < runs; ++i) {
    Rng rng(walk_seed(seed, 0, 0, static_cast<uint64_t>(i)));
    hits += climb(walker, {start, 0.0}, importance, level, horizon_s, rng, e.moves).has_value();
  }
  const Share s = share_of(hits, runs);
  e.p = s.p, e.low = s.low, e.high = s.high;
  e.factors = {s.p};
  return e;
}

}  // namespace retrystorm::markov
