// The defense ladder: the same incident, one defense at a time. A preset
// carries its rows as data (scenario `ladder`); other scenarios get the
// generic ladder below. In `cumulative` mode each row keeps the changes above
// it; in `single` mode each row is one change from the scenario.
#pragma once

#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "model/scenario.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

struct LadderResult {
  LadderRow row;
  Scenario scenario;  // the scenario this row runs
  Metrics metrics;
  // On-time goodput per second, averaged over at most kLadderSparkPoints
  // buckets: the page draws one small line per row.
  std::vector<double> goodput_per_s;
};
inline constexpr size_t kLadderSparkPoints = 60;

// The rows a scenario's ladder runs: its own, or the generic ones.
Ladder ladder_of(const Scenario& s);
// Applies a row's changes (key = value) to a scenario. Throws InputError.
Scenario apply_row(Scenario s, const LadderRow& row);
// Runs every row; `cancelled` is polled before each (throws Cancelled).
std::vector<LadderResult> run_ladder(const Scenario& s, const CancelCheck& cancelled = {});

// The generic ladder: no retries; immediate retries; + backoff with jitter;
// + 10% retry budget; + shed abandoned work. Sizes follow the scenario.
Ladder generic_ladder(const Scenario& s);

}  // namespace retrystorm
