// A Monte Carlo answered in batches (POST /api/montecarlo, docs/http-api.md):
// the page draws replication 0 at once, then asks for the band batch by
// batch, each answer the summary of every replication done so far. Kept
// replications are not run again, so the whole band costs what one
// `runs = N` run costs; replication i has seed + i whatever N, so the last
// batch's summary is the Monte Carlo of POST /api/run, byte for byte.
#pragma once

#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/run_montecarlo.hpp"
#include "app/commands.hpp"

namespace retrystorm::app {

// Replications of the scenarios asked for lately, by scenario (its `runs`
// aside) and replication index; the least recently used scenario goes
// first once more than `max_values` numbers (32 MB, the keys' bytes
// included) are kept.
class ReplicationCache {
 public:
  explicit ReplicationCache(size_t max_values = 4'000'000) : max_values_(max_values) {}
  // Replications 0 .. count - 1 of a validated scenario: those kept, the
  // others run now (on every core) and kept. Those below `asked_from` (the
  // caller has them; another request may be running them, as the page's
  // POST /api/run runs replication 0 beside its first batch) are run last,
  // and only if they are still not kept by then.
  std::vector<Replication> prefix(const Scenario& s, size_t count, const CancelCheck& cancelled,
                                  size_t asked_from = 0);
  // Keeps replication i of s, run elsewhere (POST /api/run's single run).
  void keep(const Scenario& s, size_t i, Replication r);
  // How many of replications 0 .. count - 1 of s are kept, from 0 without a gap.
  size_t kept(const Scenario& s, size_t count) const;
  size_t values() const;

 private:
  struct Entry {
    std::string key;
    std::map<size_t, Replication> runs;
  };
  static std::string key_of(const Scenario& s);
  static size_t values_of(const Replication& r) { return r.figures.size() + r.band.size(); }
  // A scenario's key counts too, as the numbers its bytes would hold: a
  // thousand one-step runs of large scenarios held their keys unbounded.
  static size_t key_values(const std::string& key) { return key.size() / sizeof(double) + 1; }
  void keep_locked(const std::string& key, size_t i, Replication r);
  size_t kept_prefix(const std::string& key, std::vector<Replication>& out);
  void run_and_keep(const Scenario& s, const std::string& key, std::vector<Replication>& out,
                    size_t from, size_t to);
  size_t max_values_;
  size_t values_ = 0;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recent first
};

struct MonteCarloBatch {
  int runs = 0;  // the scenario's replications
  int done = 0;  // replications summarised in `montecarlo`
  MonteCarloResult montecarlo;
};

// The next batches after `done` replications (two runs per core, at least
// up to two; batches follow in the same answer until about
// 250 ms have passed) and the summary of all done so far. The scenario must be the
// agent engine's with runs > 1; `max_runs` as in RunOptions.
MonteCarloBatch montecarlo_batch(const Scenario& s, int done, int max_runs, ReplicationCache& cache,
                                 const CostBudget& budget);
nlohmann::json montecarlo_batch_json(const MonteCarloBatch& b);

}  // namespace retrystorm::app
