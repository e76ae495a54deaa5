// Rare tipping on the agent engine by fixed-effort splitting (docs/risk.md,
// "Rare tipping"). The engine's state cannot be copied mid-run, so a walk is
// a path: the seeds it restarted its generator with and after which event.
// Continuing from an entry replays its path to that event and goes on with
// a fresh seed; a replay costs no more than the walk it repeats, and walks
// that fail run to the horizon anyway.
#include <atomic>
#include <cmath>

#include "analysis/markov/splitting.hpp"
#include "analysis/risk.hpp"
#include "engines/agent/agent.hpp"
#include "model/keys.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

namespace {

struct Walk {
  std::vector<Reseed> path;
  uint64_t entered_after = 0;  // the event that reached the stage's level
};

// One walk of stage k from `from`: to the stage's level, or, with a rule,
// at the last stage to the horizon, judged by the stuck rule.
std::optional<Walk> climb(const Scenario& s, const StuckRule* rule,
                          const std::vector<int64_t>& levels, const Walk& from, size_t k, Rng& rng,
                          const CancelCheck& cancelled) {
  throw_if_cancelled(cancelled);
  SplitControl walk;
  walk.reseeds = from.path;
  walk.reseeds.push_back({from.entered_after, rng.next()});
  const bool judged = k == levels.size();
  walk.stop_at_backlog = judged ? 0 : levels[k];
  const RunResult run = run_agent(s, {.split = &walk});
  if (judged) {
    if (!read_passage(run, *rule).enter_s) return std::nullopt;
    return Walk{std::move(walk.reseeds), 0};
  }
  if (!walk.stopped_after_events) return std::nullopt;
  return Walk{std::move(walk.reseeds), *walk.stopped_after_events};
}

// Fixed effort up `levels`, then (with a rule) the rule's own stage.
RareTip split_agent(const Scenario& quiet, const std::vector<int64_t>& levels,
                    const StuckRule* rule, const RiskOptions& o) {
  RareTip tip;
  tip.levels = levels;
  tip.effort = o.split_effort;
  tip.runs = o.split_runs;
  const markov::SplitPlan plan{levels.size() + (rule ? 1 : 0), o.split_effort, o.split_runs,
                               static_cast<uint64_t>(quiet.seed), o.threads};
  std::vector<Walk> reached;
  std::atomic<long> walks{0};
  const markov::RareEstimate e = markov::split_fixed_effort(
      Walk{}, plan,
      [&](const Walk& from, size_t k, Rng& rng) {
        walks.fetch_add(1, std::memory_order_relaxed);
        return climb(quiet, rule, levels, from, k, rng, o.cancelled);
      },
      &reached);
  tip.p = e.p, tip.low = e.low, tip.high = e.high;
  tip.factors = e.factors;
  tip.engine_runs = walks.load();
  tip.enter = waiting_time_from_chance(tip.p, tip.low, tip.high, quiet.horizon_s);
  if (!reached.empty()) tip.tipped_path = reached.front().path;
  return tip;
}

}  // namespace

std::vector<int64_t> split_levels(const StuckRule& rule, int count) {
  const auto deep = static_cast<int64_t>(std::floor(rule.backlog_above)) + 1;
  std::vector<int64_t> levels;
  for (int k = 1; k <= count; ++k) {
    const auto level = static_cast<int64_t>(std::ceil(double(deep) * k / count));
    if (level >= 1 && (levels.empty() || level > levels.back())) levels.push_back(level);
  }
  return levels;
}

double split_engine_runs(const RiskOptions& o) {
  return double(o.split_runs) * o.split_effort * (o.split_levels + 1);
}

WaitingTime waiting_time_from_chance(double p, double low, double high, double horizon_s) {
  // The mean of a memoryless wait with P(within horizon) = q.
  auto mean_for = [&](double q) { return horizon_s / -std::log1p(-std::min(q, 1 - 1e-12)); };
  WaitingTime w;
  if (p > 0) w.mean_s = mean_for(p);
  w.low_s = high > 0 ? mean_for(high) : horizon_s;
  if (low > 0) w.high_s = mean_for(low);
  return w;
}

RareTip split_tipping(const Scenario& quiet, const StuckRule& rule, const RiskOptions& o) {
  return split_agent(quiet, split_levels(rule, o.split_levels), &rule, o);
}

RareTip split_backlog(const Scenario& quiet, const std::vector<int64_t>& levels,
                      const RiskOptions& o) {
  if (levels.empty()) throw InputError("splitting: at least one level");
  return split_agent(quiet, levels, nullptr, o);
}

}  // namespace retrystorm
