#include "app/montecarlo_batches.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"

namespace retrystorm::app {

namespace {
constexpr std::chrono::milliseconds kAnswerEvery{250};
}  // namespace

std::string ReplicationCache::key_of(const Scenario& s) {
  Scenario one = s;
  one.runs = 1;                               // replication i is the same run whatever the count
  one.name.clear(), one.description.clear();  // words change no number
  return scenario_to_json(one).dump();
}

size_t ReplicationCache::values() const {
  std::lock_guard lock(mutex_);
  return values_;
}

void ReplicationCache::keep_locked(const std::string& key, size_t i, Replication r) {
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it == entries_.end()) {
    entries_.push_front({key, {}});
    it = entries_.begin();
    values_ += key_values(key);
  } else {
    entries_.splice(entries_.begin(), entries_, it);
  }
  values_ += values_of(r);
  auto [at, fresh] = it->runs.try_emplace(i, std::move(r));
  if (!fresh) values_ -= values_of(r);  // kept already: the same numbers
  // The newest scenario stays, however large: its batches must make progress.
  while (values_ > max_values_ && entries_.size() > 1) {
    for (const auto& [k, old] : entries_.back().runs) values_ -= values_of(old);
    values_ -= key_values(entries_.back().key);
    entries_.pop_back();
  }
}

void ReplicationCache::keep(const Scenario& s, size_t i, Replication r) {
  std::string key = key_of(s);
  std::lock_guard lock(mutex_);
  keep_locked(key, i, std::move(r));
}

size_t ReplicationCache::kept(const Scenario& s, size_t count) const {
  const std::string key = key_of(s);
  size_t kept = 0;
  std::lock_guard lock(mutex_);
  for (const Entry& e : entries_)
    if (e.key == key)
      while (kept < count && e.runs.count(kept)) ++kept;
  return kept;
}

// Fills out[0 .. k) with the replications kept, k as far as they run
// without a gap; returns k.
size_t ReplicationCache::kept_prefix(const std::string& key, std::vector<Replication>& out) {
  size_t kept = 0;
  std::lock_guard lock(mutex_);
  for (const Entry& e : entries_)
    if (e.key == key)
      while (kept < out.size() && e.runs.count(kept)) out[kept] = e.runs.at(kept), ++kept;
  return kept;
}

// Runs replications from .. to - 1 into out, and keeps them.
void ReplicationCache::run_and_keep(const Scenario& s, const std::string& key,
                                    std::vector<Replication>& out, size_t from, size_t to) {
  if (from >= to) return;
  std::vector<Replication> fresh = montecarlo_part(s, from, to - from);
  std::lock_guard lock(mutex_);
  for (size_t k = 0; k < fresh.size(); ++k) {
    out[from + k] = fresh[k];
    keep_locked(key, from + k, std::move(fresh[k]));
  }
}

std::vector<Replication> ReplicationCache::prefix(const Scenario& s, size_t count,
                                                  const CancelCheck& cancelled, size_t asked_from) {
  std::string key = key_of(s);
  std::vector<Replication> out(count);
  size_t kept = kept_prefix(key, out);  // replications 0 .. kept - 1 are here
  if (kept == count) return out;
  throw_if_cancelled(cancelled);
  const size_t asked = std::clamp(asked_from, kept, count);
  run_and_keep(s, key, out, asked, count);
  if (kept == asked) return out;
  // The ones the caller has: kept by now, most likely, by the request that ran them.
  kept = kept_prefix(key, out);
  if (kept >= asked) return out;
  throw_if_cancelled(cancelled);
  run_and_keep(s, key, out, kept, asked);
  return out;
}

MonteCarloBatch montecarlo_batch(const Scenario& s, int done, int max_runs, ReplicationCache& cache,
                                 const CostBudget& budget) {
  if (!engine_facts(s).random || s.runs < 2)
    throw InputError("runs: " + std::to_string(s.runs) + " with engine " + engine_name(s.engine) +
                     "; a Monte Carlo in batches needs the agent engine and runs of 2 or more");
  check_runs(s, max_runs);
  check_replication_seeds(s, static_cast<size_t>(s.runs));  // every batch's, before the first
  if (done < 0 || done > s.runs)
    throw InputError("done: " + std::to_string(done) + " must be 0 to runs (" +
                     std::to_string(s.runs) + ")");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto start = std::chrono::steady_clock::now();
  MonteCarloBatch b;
  b.runs = s.runs;
  b.done = done;
  std::vector<Replication> all;
  // Quick runs are answered several batches at a time: an answer (and a
  // redraw of the page) about every kAnswerEvery, not one per batch.
  do {
    // Two runs per core: a batch waits for its slowest run, and more runs
    // per batch leave the cores less time idle. A batch ends at a multiple
    // of that, replication 0 counted: the page's first batch (done = 1) goes
    // beside the run of replication 0, and the two fill the cores together.
    // A band needs two runs.
    const int round = 2 * cores;
    const int upto = std::min(s.runs, std::max((b.done / round + 1) * round, 2));
    // Priced as the runs not kept: the caller's `done` says what it has,
    // not what this server kept (a replication it lacks is run again).
    Scenario batch = s;
    batch.runs = upto - static_cast<int>(cache.kept(s, static_cast<size_t>(upto)));
    check_run_cost(batch, budget, false);  // replications only: no report, advice or tipping
    all = cache.prefix(s, static_cast<size_t>(upto), budget.cancelled, static_cast<size_t>(b.done));
    b.done = upto;
  } while (b.done < s.runs && std::chrono::steady_clock::now() - start < kAnswerEvery);
  b.montecarlo = montecarlo_of_parts(s, all);
  return b;
}

nlohmann::json montecarlo_batch_json(const MonteCarloBatch& b) {
  return {{"runs", b.runs}, {"done", b.done}, {"montecarlo", montecarlo_json(b.montecarlo)}};
}

}  // namespace retrystorm::app
