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

// A preset's own words (its description, its ladder rows') tell of its own
// scenario: the keys `s` sets otherwise than `preset`, "path = value, ..."
// (name and description aside), which those words may no longer hold for;
// empty when none or when `preset` is null (a scenario of its own).
std::string left_preset_by(const Scenario& s, const Scenario* preset);

// The scenario of the preset `s` still is by name and description, among
// `all` (formats' presets(): core reads none), or null.
template <class Presets>
const Scenario* preset_behind(const Scenario& s, const Presets& all) {
  for (const auto& p : all)
    if (p.name == s.name && p.description == s.description) return &p.scenario;
  return nullptr;
}

// Each row's change in words, for every view of a ladder (text, JSON): its
// own description while the rows run on their preset's scenario (`preset`,
// preset_behind the rows' scenario), else the keys it sets and those the
// scenario left the preset by, as `run` says of the description.
std::vector<std::string> row_changes(const std::vector<LadderResult>& rows, const Scenario* preset);
template <class Presets>
std::vector<std::string> row_changes(const std::vector<LadderResult>& rows, const Presets& all) {
  return row_changes(rows, rows.empty() ? nullptr : preset_behind(rows.front().scenario, all));
}

}  // namespace retrystorm
