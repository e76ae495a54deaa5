#include "analysis/markov/splitting.hpp"

#include <cmath>

#include "engines/montecarlo.hpp"
#include "model/keys.hpp"

namespace retrystorm::markov {

namespace {

struct Entry {
  int state;
  double t_s;
};

// One walk's generator: its own stream, whatever order the walks run in
// (each number hashed in turn, so that no two walks share a stream).
Rng walk_rng(uint64_t seed, uint64_t replica, uint64_t stage, uint64_t walk) {
  uint64_t h = seed;
  for (uint64_t part : {replica, stage, walk}) {
    uint64_t state = h ^ part;
    h = splitmix64(state);
  }
  return Rng(h);
}

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

RareEstimate split_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         const std::vector<int>& levels, double horizon_s, int effort, int replicas,
                         uint64_t seed) {
  if (effort < 2 || replicas < 2 || levels.empty())
    throw InputError("splitting: at least 2 walks per level, 2 replicas and one level");
  RareEstimate e;
  e.factors.assign(levels.size(), 0.0);
  std::vector<double> estimates;
  for (int r = 0; r < replicas; ++r) {
    std::vector<Entry> entries = {{start, 0.0}};
    double p = 1;
    for (size_t k = 0; k < levels.size() && p > 0; ++k) {
      std::vector<Entry> next;
      for (int i = 0; i < effort; ++i) {
        Rng rng = walk_rng(seed, static_cast<uint64_t>(r), k, static_cast<uint64_t>(i));
        const Entry& from = entries[static_cast<size_t>(rng.uniform() * entries.size())];
        if (auto at = climb(walker, from, importance, levels[k], horizon_s, rng, e.moves))
          next.push_back(*at);
      }
      const double factor = static_cast<double>(next.size()) / effort;
      e.factors[k] += factor / replicas;
      p *= factor;
      entries = std::move(next);
    }
    estimates.push_back(p);
  }
  // Each replica's product is an unbiased estimate; their spread is the
  // interval (the stages of one replica share their walks' entries).
  const MetricSummary m = summarize(estimates, 0);
  e.p = m.mean, e.low = m.low, e.high = m.high;
  return e;
}

RareEstimate plain_reach(const Walker& walker, int start, const std::vector<int>& importance,
                         int level, double horizon_s, int runs, uint64_t seed) {
  RareEstimate e;
  int hits = 0;
  for (int i = 0; i < runs; ++i) {
    Rng rng = walk_rng(seed, 0, 0, static_cast<uint64_t>(i));
    hits += climb(walker, {start, 0.0}, importance, level, horizon_s, rng, e.moves).has_value();
  }
  const Share s = share_of(hits, runs);
  e.p = s.p, e.low = s.low, e.high = s.high;
  e.factors = {s.p};
  return e;
}

}  // namespace retrystorm::markov
