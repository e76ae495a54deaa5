// The shard files of `risk --shard K/N` (docs/distributed.md): replications
// [first, first + count) of every load (and knob value) as evidence, with
// what `merge` needs to finish the answer: the scenario, the options and the
// output format. Merged, the shards give the unsharded answer byte for byte.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/risk.hpp"
#include "analysis/sweep.hpp"

namespace retrystorm {

inline constexpr const char* kRiskShardFormat = "retrystorm-risk-shard";

// The evidence as JSON and back: a passage is [enter_s, left_after_enter_s,
// stuck_at_push_end (0 or 1), leave_s, end_s], a missing time null.
// evidence_of checks every figure (outside input) and names `where`.
nlohmann::json evidence_json(const std::vector<RiskEvidence>& per_load);
std::vector<RiskEvidence> evidence_of(const nlohmann::json& j, const std::string& where);
// What a part of known range holds per load: `runs` passages (and as many
// after a push, or none), `splits` splitting replicas, times within the horizon.
struct PartShape {
  size_t runs = 0, splits = 0;
  double horizon_s = 0;
};
// Appends one part's evidence (a list per cell of evidence_json) to `cells`,
// load by load, after the parts before it; a part with other cells or loads
// than the first, or (given its `shape`) another shape, is refused, naming `where`.
void append_risk_cells(std::vector<std::vector<RiskEvidence>>& cells, const nlohmann::json& part,
                       const std::string& where, const PartShape* shape = nullptr);

// What a risk answer is computed from: the scenario, the options, the map's
// knob when there is one.
struct RiskRequest {
  Scenario scenario;
  RiskOptions options;
  std::optional<SweepAxis> knob;
};

// Replications [first, first + count) of shard `index` of `of`.
struct ShardRange {
  size_t index = 1, of = 1, first = 0, count = 0;
  bool operator==(const ShardRange&) const = default;
};
// Shard K of N's replications: an even cut of the runs.
ShardRange risk_shard_range(size_t index, size_t of, size_t runs);

// The evidence of one shard, gathered.
std::vector<std::vector<RiskEvidence>> gather_risk_cells(const RiskRequest& r, size_t first,
                                                         size_t count);
// The answer from every replication's evidence, per cell: as `risk
// --format json` answers, or as text ("text") or JSON text ("json").
nlohmann::json risk_answer_json(const RiskRequest& r,
                                const std::vector<std::vector<RiskEvidence>>& cells);
std::string risk_answer_text(const RiskRequest& r,
                             const std::vector<std::vector<RiskEvidence>>& cells,
                             const std::string& format);

std::string risk_shard_text(const RiskRequest& r, const ShardRange& range,
                            const std::vector<std::vector<RiskEvidence>>& cells,
                            const std::string& output);

// Reads the shard files' texts (path, text), checks that they are the
// shards of one risk, each once, none missing, and answers as the
// unsharded `risk` would (format "" = the one the shards were cut with).
// `check` is shown the request before any estimate (merge prices it).
std::string merged_risk_text(const std::vector<std::pair<std::string, std::string>>& files,
                             const std::string& format,
                             const std::function<void(const RiskRequest&)>& check = {});

// Whether a parsed file is a risk shard (merge reads both kinds).
bool is_risk_shard(const nlohmann::json& body);

}  // namespace retrystorm
