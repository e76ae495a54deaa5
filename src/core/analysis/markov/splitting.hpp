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
#include <optional>
#include <vector>

#include "analysis/markov/chain.hpp"
#include "engines/montecarlo.hpp"
#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"
#include "random/rng.hpp"

namespace retrystorm::markov {

struct RareEstimate {
  double p = 0;    // the chance
  double low = 0;  // 95% interval
  double high = 0;
  std::vector<double> factors;  // per level, the mean share that made it
  long moves = 0;               // the work: moves walked in all (chain walks)
};

// One walk's seed: its own stream, whatever order the walks run in (each
// number hashed in turn, so that no two walks share a stream).
uint64_t walk_seed(uint64_t seed, uint64_t replica, uint64_t stage, uint64_t walk);

struct SplitPlan {
  size_t stages = 1;
  int effort = 2;    // walks per stage
  int replicas = 2;  // independent splitting runs: the interval is their spread
  uint64_t seed = 1;
  unsigned threads = 1;  // the walks of one stage side by side
};

// The mean and interval of the replicas' products (each one unbiased; the
// stages of one replica share their walks' entries, so the interval comes
// from the replicas, not from the factors), and each stage's mean factor:
// chances all, within [0, 1] with low <= p <= high.
RareEstimate combine_replicas(const std::vector<double>& products,
                              const std::vector<std::vector<double>>& factors);

// What one replica of a splitting run found: its product of factors, the
// factors, the walks it took and the last stage's entries when it got there.
// Replicas are independent (each on its own seeds), so a range of them can
// run anywhere and the estimate be taken over all (docs/distributed.md).
template <class Entry>
struct SplitReplica {
  double product = 0;
  std::vector<double> factors;
  long walks = 0;
  std::vector<Entry> reached;
};

// Replicas [first, first + count) of fixed-effort splitting over any walk:
// climb(from, stage, rng) walks from an entry of the stage before (or
// `start`) and answers its entry into this stage's level, or none when the
// horizon passed first. The same plan gives the same replicas whatever the
// threads and however the range is cut.
template <class Entry, class Climb>
std::vector<SplitReplica<Entry>> split_replicas(const Entry& start, const SplitPlan& plan,
                                                int first, int count, Climb&& climb) {
  if (plan.effort < 2 || plan.replicas < 2 || plan.stages == 0)
    throw InputError("splitting: at least 2 walks per level, 2 replicas and one level");
  std::vector<SplitReplica<Entry>> out;
  for (int r = first; r < first + count; ++r) {
    SplitReplica<Entry> one;
    std::vector<Entry> entries = {start};
    double p = 1;
    for (size_t k = 0; k < plan.stages && p > 0; ++k) {
      std::vector<std::optional<Entry>> walks(static_cast<size_t>(plan.effort));
      auto walk = [&](size_t i) {
        Rng rng(walk_seed(plan.seed, static_cast<uint64_t>(r), k, i));
        const Entry& from = entries[static_cast<size_t>(rng.uniform() * entries.size())];
        walks[i] = climb(from, k, rng);
      };
      PoolOptions pool;
      pool.threads = plan.threads;
      for_each_index(walks.size(), walk, pool);
      std::vector<Entry> next;
      for (auto& w : walks)
        if (w) next.push_back(std::move(*w));
      one.factors.push_back(static_cast<double>(next.size()) / plan.effort);
      one.walks += plan.effort;
      p *= one.factors.back();
      entries = std::move(next);
    }
    one.product = p;
    if (p > 0) one.reached = std::move(entries);
    out.push_back(std::move(one));
  }
  return out;
}

// The estimate over every replica of `plan`. `reached`, when given, gets the
// last stage's entries of the first replica that had any.
template <class Entry, class Climb>
RareEstimate split_fixed_effort(const Entry& start, const SplitPlan& plan, Climb&& climb,
                                std::vector<Entry>* reached = nullptr) {
  std::vector<double> products;
  std::vector<std::vector<double>> factors;
  for (auto& one : split_replicas(start, plan, 0, plan.replicas, climb)) {
    if (reached && reached->empty() && one.product > 0) *reached = std::move(one.reached);
    products.push_back(one.product);
    factors.push_back(std::move(one.factors));
  }
  return combine_replicas(products, factors);
}

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
