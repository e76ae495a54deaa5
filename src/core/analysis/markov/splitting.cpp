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
  for (const auto& f : factors) {
    if (e.factors.size() < f.size()) e.factors.resize(f.size(), 0.0);
    for (size_t k = 0; k < f.size(); ++k)
      e.factors[k] += f[k] / static_cast<double>(factors.size());
  }
  // A chance: the mean's interval is cut to [0, 1] (a few spread-out
  // replicas make Student's interval wider than that).
  const MetricSummary m = summarize(products, 0);
  e.p = m.mean, e.low = std::min(m.low, 1.0), e.high = std::min(m.high, 1.0);
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
