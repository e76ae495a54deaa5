// Rare tipping on the agent engine by fixed-effort splitting (docs/risk.md,
// "Rare tipping"). The engine's state cannot be copied mid-run, so a walk is
// a path: the seeds it restarted its generator with and after which event.
// Continuing from an entry replays its path to that event and goes on with
// a fresh seed; a replay costs no more than the walk it repeats, and walks
// that fail run to the horizon anyway.
#include <fmt/format.h>

#include <algorithm>
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

// Fixed effort up `levels`, then (with a rule) the rule's own stage:
// replicas [first, first + count).
std::vector<SplitEvidence> split_agent(const Scenario& quiet, const std::vector<int64_t>& levels,
                                       const StuckRule* rule, const RiskOptions& o, int first,
                                       int count) {
  std::vector<SplitEvidence> out;
  for (auto& one :
       markov::split_replicas(Walk{}, split_plan(quiet, levels.size(), rule != nullptr, o), first,
                              count, [&](const Walk&from, size_t k, Rng&rng) {
                                return climb(quiet, rule, levels, from, k, rng, o.cancelled);
                              })) {
    SplitEvidence e{one.product, std::move(one.factors), one.walks, {}};
    if (!one.reached.empty()) e.tipped_path = std::move(one.reached.front().path);
    out.push_back(std::move(e));
  }
  return out;
}

RareTip tip_of(const std::vector<SplitEvidence>& replicas, std::vector<int64_t> levels,
               const RiskOptions& o, double horizon_s) {
  if (replicas.size() != size_t(o.split_runs))
    throw InputError(fmt::format("risk: splitting evidence of {} replicas, not {}", replicas.size(),
                                 o.split_runs));
  RareTip tip;
  tip.levels = std::move(levels);
  tip.effort = o.split_effort;
  tip.runs = o.split_runs;
  std::vector<double> products;
  std::vector<std::vector<double>> factors;
  for (const SplitEvidence& r : replicas) {
    products.push_back(r.product);
    factors.push_back(r.factors);
    tip.engine_runs += r.walks;
    if (tip.tipped_path.empty()) tip.tipped_path = r.tipped_path;
  }
  // Replicas that all agree (every product 1, say) give an interval of no
  // width, left so: it is Student's interval over their spread, which is
  // none, and the effort and runs printed beside it say how little that is.
  const markov::RareEstimate e = markov::combine_replicas(products, factors);
  tip.p = e.p, tip.low = e.low, tip.high = e.high;
  tip.factors = e.factors;
  tip.reached = std::any_of(products.begin(), products.end(), [](double p) { return p > 0; });
  // A stage's mean factor is above 0 when some walk passed it.
  size_t passed = 0;
  while (passed < tip.factors.size() && tip.factors[passed] > 0) ++passed;
  tip.stages_passed = static_cast<int>(passed);
  tip.enter = waiting_time_from_chance(tip.p, tip.low, tip.high, horizon_s);
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

markov::SplitPlan split_plan(const Scenario& quiet, size_t levels, bool judged,
                             const RiskOptions& o) {
  // A stage's walks side by side are runs as the replications are: as many as
  // fit in the memory the request was priced at.
  return {levels + (judged ? 1 : 0), o.split_effort, o.split_runs,
          static_cast<uint64_t>(quiet.seed), risk_threads(quiet, o)};
}

WaitingTime waiting_time_from_chance(double p, double low, double high, double horizon_s) {
  // The mean of a memoryless wait with P(within horizon) = q, for q below 1.
  // At 1 the formula says 0 s, and a clamp below 1 made a mean up from the
  // clamp (horizon / 27.6 from 1 - 1e-12): a chance of 1 has no mean.
  auto mean_for = [&](double q) { return horizon_s / -std::log1p(-q); };
  WaitingTime w;
  if (p > 0 && p < 1) w.mean_s = mean_for(p);
  // A chance of 1 within the horizon bounds the mean by nothing above 0.
  w.low_s = high >= 1 ? 0 : high > 0 ? mean_for(high) : horizon_s;
  if (low > 0 && low < 1) w.high_s = mean_for(low);
  // Every walk tipped: no mean, only that it tips within the horizon.
  w.certain = p >= 1;
  return w;
}

std::vector<SplitEvidence> split_tipping_replicas(const Scenario& quiet, const StuckRule& rule,
                                                  const RiskOptions& o, int first, int count) {
  return split_agent(quiet, split_levels(rule, o.split_levels), &rule, o, first, count);
}

RareTip rare_tip_of(const std::vector<SplitEvidence>& replicas, const StuckRule& rule,
                    const RiskOptions& o, double horizon_s) {
  return tip_of(replicas, split_levels(rule, o.split_levels), o, horizon_s);
}

RareTip split_tipping(const Scenario& quiet, const StuckRule& rule, const RiskOptions& o) {
  return rare_tip_of(split_tipping_replicas(quiet, rule, o, 0, o.split_runs), rule, o,
                     quiet.horizon_s);
}

RareTip split_backlog(const Scenario& quiet, const std::vector<int64_t>& levels,
                      const RiskOptions& o) {
  if (levels.empty()) throw InputError("splitting: at least one level");
  return tip_of(split_agent(quiet, levels, nullptr, o, 0, o.split_runs), levels, o,
                quiet.horizon_s);
}

std::pair<int, int> split_range(size_t first, size_t count, size_t runs, int split_runs) {
  const auto at = [&](size_t r) { return static_cast<int>(r * size_t(split_runs) / runs); };
  return {at(first), at(first + count) - at(first)};
}

}  // namespace retrystorm
