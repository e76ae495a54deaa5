#include "analysis/tipping.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/metrics.hpp"
#include "analysis/risk.hpp"
#include "engines/engine.hpp"
#include "engines/incident_window.hpp"
#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"

namespace retrystorm {

namespace {
// 3 x 0.1 s is 0.30000000000000004 in binary; durations are shown rounded.
double tidy_seconds(double s) {
  return std::round(s * 1e9) / 1e9;
}
}  // namespace

double default_grid_s(const Scenario& s) {
  return s.tipping.grid_s > 0 ? s.tipping.grid_s : 10 * s.step_s;
}

double tipping_room_s(const Scenario& s) {
  return s.horizon_s - s.step_s - s.incident.start_s;
}

double tipping_steps(const Scenario& s, double grid_s) {
  double grid = grid_s > 0 ? grid_s : default_grid_s(s);
  double points = std::max(1.0, std::floor((s.horizon_s - s.incident.start_s) / grid));
  double per_step = engine_facts(s).step_cost;  // an agent step: about 30 fluid steps
  return (points + 20) * s.steps() * per_step;  // 20 runs cover any bisection
}

long tipping_grid_points(const Scenario& s, double grid_s) {
  double grid = grid_s > 0 ? grid_s : default_grid_s(s);
  // Lengths whose incident leaves a whole step after it before the horizon:
  // one that runs into the last step leaves none to judge recovery in (the
  // goodput criterion called every such run stuck, and a harmless incident
  // got a tipping point).
  const double room = tipping_room_s(s);
  return std::max(0L, static_cast<long>(std::floor(room / grid + 1e-9)));
}

bool recovers_with_duration(Scenario s, double duration_s) {
  s.incident.duration_s = duration_s;
  const RunResult run = run_engine(s);
  const Metrics m = compute_metrics(run);
  // The verdict calls a run that is no storm "not judged" (analysis/summary.cpp).
  return m.recovered || no_storm(run, m);
}

namespace {

// Whether each incident length recovers: the runs at once on every core.
std::vector<char> recover_all(const Scenario& s, const std::vector<double>& lengths_s,
                              const CancelCheck& cancelled) {
  std::vector<char> recovered(lengths_s.size());
  throw_if_cancelled(cancelled);
  PoolOptions options;
  options.threads = runs_at_once(s);
  options.stop = cancelled;  // polled before each run, as the runs themselves poll
  for_each_index(
      lengths_s.size(), [&](size_t k) { recovered[k] = recovers_with_duration(s, lengths_s[k]); },
      options);
  throw_if_cancelled(cancelled);
  return recovered;
}

// The bisection's next probes from (lo, hi) in steps, as many as the pool is
// wide: the next midpoint, then the midpoints that follow should each one not
// recover (a guess; a wrong one costs a run on a core that would be idle).
std::vector<long> bisection_batch(long lo, long hi, unsigned width) {
  std::vector<long> out;
  while (hi - lo > 1 && out.size() < width) {
    long mid = lo + (hi - lo) / 2;
    out.push_back(mid);
    hi = mid;
  }
  return out;
}

// The steps an incident of `duration_s` covers in the run.
long incident_steps(Scenario s, double duration_s) {
  s.incident.duration_s = duration_s;
  const IncidentWindow w = steps_of(s);
  return w.end - w.first;
}

}  // namespace

// The scan and the bisection ask the same questions in the same order as one
// run at a time would; a batch only adds runs the next answers may need, so
// the answer never depends on the number of cores, only the time does.
TippingResult tipping_point(const Scenario& s, double grid_s, const CancelCheck& cancelled) {
  require_scripted_incident(s, "the tipping point");
  TippingResult r;
  r.grid_s = grid_s > 0 ? grid_s : default_grid_s(s);
  const long grid_points = tipping_grid_points(s, r.grid_s);
  // With no length on the grid, "every length recovers" would be claimed untried.
  if (grid_points < 1)
    throw InputError("grid_s: " + number_text(r.grid_s) + " s is longer than the " +
                     number_text(std::max(0.0, tipping_room_s(s))) +
                     " s from incident.start_s to the last step (an incident must leave a "
                     "step after it before horizon_s, to judge recovery in); no incident "
                     "length would be tried");
  unsigned width = runs_at_once(s);
  double last_recovering = 0;
  for (long first = 1; first <= grid_points && !r.on_grid_s; first += width) {
    std::vector<double> lengths;
    for (long i = first; i <= std::min<long>(grid_points, first + width - 1); ++i)
      lengths.push_back(tidy_seconds(i * r.grid_s));
    std::vector<char> recovered = recover_all(s, lengths, cancelled);
    for (size_t k = 0; k < lengths.size() && !r.on_grid_s; ++k) {
      if (!recovered[k])
        r.on_grid_s = lengths[k];
      else
        last_recovering = lengths[k];
    }
  }
  if (!r.on_grid_s) return r;
  // Bisection in whole steps between the last grid point that recovers and
  // the first that does not (assumes one tipping point between them), each
  // counted as the steps its incident covers: on a grid of 2.8 s with 1 s
  // steps, 11.2 s covers 12 steps (rounding it to 11 named a length that
  // recovers, never run).
  long lo = incident_steps(s, last_recovering);
  long hi = incident_steps(s, *r.on_grid_s);
  std::map<long, bool> known;  // steps -> recovers
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    if (!known.count(mid)) {
      std::vector<long> batch = bisection_batch(lo, hi, width);
      std::vector<double> lengths;
      for (long n : batch) lengths.push_back(tidy_seconds(n * s.step_s));
      std::vector<char> recovered = recover_all(s, lengths, cancelled);
      for (size_t k = 0; k < batch.size(); ++k) known[batch[k]] = recovered[k];
    }
    if (known[mid])
      lo = mid;
    else
      hi = mid;
  }
  // hi steps' length covers hi steps from any start, and the bisection ran
  // it: it tips. Never longer than the grid's answer, which tips too.
  r.exact_s = std::min(*r.on_grid_s, tidy_seconds(hi * s.step_s));
  return r;
}

namespace {

// A graph's services and calls as text: they change the answer, and they are
// not keys of the table.
std::string graph_text(const Graph& g) {
  std::string out;
  auto settings = [&out](const KeySettings& kv) {
    for (const auto& [path, value] : kv) out += "," + path + "=" + to_string(value);
  };
  for (const GraphService& v : g.services) {
    out += "|service " + v.name + " " + kCallPatternNames[static_cast<int>(v.pattern)];
    settings(v.server);
  }
  for (const GraphCall& c : g.calls) {
    out += "|call " + c.from + ">" + c.to + " " + std::to_string(c.count) + " " +
           std::to_string(c.optional) + std::to_string(c.propagate_deadline);
    settings(c.client);
  }
  return out;
}

}  // namespace

TippingResult TippingCache::get(const Scenario& s, double grid_s) {
  std::string key = std::to_string(grid_s);
  for (const KeySpec& k : scenario_keys())
    if (k.path != "incident.duration_s" && k.path != "name" && k.path != "description")
      key += "|" + to_string(k.get(s));
  key += graph_text(s.graph);
  {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
  }
  TippingResult r = tipping_point(s, grid_s);  // outside the lock: it takes a while
  std::lock_guard lock(mutex_);
  key_bytes_ += key.size();
  entries_.emplace_front(std::move(key), r);
  while (entries_.size() > capacity_ || (key_bytes_ > max_key_bytes_ && entries_.size() > 1)) {
    key_bytes_ -= entries_.back().first.size();
    entries_.pop_back();
  }
  return r;
}

}  // namespace retrystorm
