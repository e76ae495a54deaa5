#include "formats/risk_shard.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "formats/input_text.hpp"
#include "formats/risk_report.hpp"
#include "formats/scenario_io.hpp"
#include "formats/sweep_shard.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

enum PassageField { kEnter, kLeftAfterEnter, kStuckAtPushEnd, kLeave, kEnd, kFields };

json time_json(const std::optional<double>& t) {
  return t ? json(*t) : json(nullptr);
}

std::optional<double> time_of(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw InputError(where + ": " + v.dump().substr(0, 40) +
                     " is not a time; a passage holds seconds (0 or more) or null");
  return v.get<double>();
}

json passages_json(const std::vector<Passage>& ps) {
  json out = json::array();
  for (const Passage& p : ps)
    out.push_back({time_json(p.enter_s), time_json(p.left_after_enter_s), p.stuck_at_from ? 1 : 0,
                   time_json(p.leave_s), p.end_s});
  return out;
}

std::vector<Passage> passages_of(const json& j, const std::string& where) {
  if (!j.is_array()) throw InputError(where + ": not a list of passages");
  std::vector<Passage> out;
  for (const json& row : j) {
    if (!row.is_array() || row.size() != kFields)
      throw InputError(where + ": a passage is a list of " + std::to_string(kFields) + " figures");
    Passage p;
    p.enter_s = time_of(row[kEnter], where);
    p.left_after_enter_s = time_of(row[kLeftAfterEnter], where);
    const std::optional<double> stuck = time_of(row[kStuckAtPushEnd], where);
    if (!stuck || (*stuck != 0 && *stuck != 1))
      throw InputError(where + ": stuck at the push's end must be 0 or 1");
    p.stuck_at_from = *stuck == 1;
    p.leave_s = time_of(row[kLeave], where);
    const std::optional<double> end = time_of(row[kEnd], where);
    if (!end) throw InputError(where + ": a passage's end is a time, not null");
    p.end_s = *end;
    out.push_back(p);
  }
  return out;
}

// A splitting replica: [product, [factors], walks, [[after_events, seed], ...]].
json splits_json(const std::vector<SplitEvidence>& replicas) {
  json out = json::array();
  for (const SplitEvidence& r : replicas) {
    json path = json::array();
    for (const Reseed& step : r.tipped_path) path.push_back({step.after_events, step.seed});
    out.push_back({r.product, r.factors, r.walks, std::move(path)});
  }
  return out;
}

double share_of_walks(const json& v, const std::string& where) {
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
    throw InputError(where + ": a splitting share is a number from 0 to 1, not " +
                     v.dump().substr(0, 40));
  return v.get<double>();
}

// A whole number of 0 or more, however the JSON holds it (a round trip
// through Python gives signed integers).
bool whole_number(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

std::vector<SplitEvidence> splits_of(const json& j, const std::string& where) {
  if (!j.is_array()) throw InputError(where + ": the splitting evidence is a list of replicas");
  std::vector<SplitEvidence> out;
  for (const json& row : j) {
    if (!row.is_array() || row.size() != 4 || !row[1].is_array() || !row[3].is_array() ||
        !whole_number(row[2]))
      throw InputError(where + ": a splitting replica is [product, [factors], walks, [path]]");
    SplitEvidence r;
    r.product = share_of_walks(row[0], where);
    for (const json& f : row[1]) r.factors.push_back(share_of_walks(f, where));
    r.walks = row[2].get<long>();
    for (const json& step : row[3]) {
      if (!step.is_array() || step.size() != 2 || !whole_number(step[0]) || !whole_number(step[1]))
        throw InputError(where + ": a tipped path's step is [after_events, seed]");
      r.tipped_path.push_back({step[0].get<uint64_t>(), step[1].get<uint64_t>()});
    }
    out.push_back(std::move(r));
  }
  return out;
}

json request_json(const RiskRequest& r) {
  const RiskOptions& o = r.options;
  json knob = nullptr;
  if (r.knob) knob = {{"path", r.knob->path}, {"values", r.knob->values()}};
  json splitting = nullptr;
  if (o.splitting)
    splitting = {{"effort", o.split_effort}, {"runs", o.split_runs}, {"levels", o.split_levels}};
  return {{"loads", o.loads},
          {"runs", risk_runs(r.scenario, o)},
          {"horizon_s", o.horizon_s},
          {"exact", o.exact},
          {"knob", knob},
          {"splitting", splitting},
          {"scenario", scenario_to_json(r.scenario)}};
}

// A count of the request (runs, splitting's effort): a whole number, not
// one JSON would round.
int request_count(const json& v, const char* key, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000000)
    throw InputError(where + ": request." + key + ": " + v.dump().substr(0, 40) +
                     " is not a whole number of 0 or more");
  return static_cast<int>(v.get<int64_t>());
}

RiskRequest request_of(const json& j, const std::string& where) {
  RiskRequest r;
  r.scenario = scenario_from_json(j.at("scenario"));
  r.options.loads = j.at("loads").get<std::vector<double>>();
  r.options.runs = request_count(j.at("runs"), "runs", where);
  r.options.horizon_s = j.at("horizon_s").get<double>();
  r.options.exact = j.at("exact").get<bool>();
  if (const json split = j.value("splitting", json()); !split.is_null()) {
    r.options.splitting = true;
    r.options.split_effort = request_count(split.at("effort"), "splitting.effort", where);
    r.options.split_runs = request_count(split.at("runs"), "splitting.runs", where);
    r.options.split_levels = request_count(split.at("levels"), "splitting.levels", where);
  }
  if (!j.at("knob").is_null())
    r.knob = SweepAxis(j["knob"].at("path").get<std::string>(), 0, 0, 1,
                       j["knob"].at("values").get<std::vector<double>>());
  risk_scenario(r.scenario, r.options);  // the same checks as `risk` makes
  if (r.knob) risk_map_values(*r.knob, r.options);
  return r;
}

struct RiskShard {
  std::string path;
  json body;
  ShardRange range;
};

size_t whole(const json& v, const std::string& where) {
  if (!v.is_number_unsigned()) throw InputError(where + ": not a whole number");
  return v.get<size_t>();
}

RiskShard parse_risk_shard(const std::string& path, const std::string& text) {
  RiskShard s{path, parse_json_text(text, "merge: " + path, kMaxShardBytes), {}};
  const std::string where = "merge: " + path;
  try {
    if (!is_risk_shard(s.body) || s.body.value("version", 0) != 1)
      throw InputError(where + ": not a retrystorm risk shard (`risk --shard K/N`)");
    const json& shard = s.body.at("shard");
    s.range = {whole(shard.at("index"), where), whole(shard.at("of"), where),
               whole(shard.at("first"), where), whole(shard.at("count"), where)};
  } catch (const json::exception& e) {
    throw InputError(where + ": not a retrystorm risk shard (" + e.what() + ")");
  }
  if (s.range.index < 1 || s.range.index > s.range.of)
    throw InputError(
        fmt::format("{}: shard {} of {} (K counts from 1 to N)", where, s.range.index, s.range.of));
  return s;
}

// The shards in index order, of one risk, each once, none missing, their
// replications one after the other from the first to the last.
std::vector<RiskShard> order_risk_shards(std::vector<RiskShard> shards) {
  std::map<size_t, RiskShard> by_index;
  for (RiskShard& s : shards) {
    const RiskShard* first = by_index.empty() ? nullptr : &by_index.begin()->second;
    if (first &&
        (s.body.at("request") != first->body.at("request") || s.range.of != first->range.of))
      throw InputError("merge: " + s.path + ": its request or shard count differs from " +
                       first->path + "'s; merge only the shards of one risk");
    const std::string path = s.path;
    auto [at, added] = by_index.emplace(s.range.index, std::move(s));
    if (!added)
      throw InputError("merge: " + path + ": shard " + std::to_string(at->second.range.index) +
                       " again (also " + at->second.path + ")");
  }
  std::vector<RiskShard> out;
  const size_t of = by_index.begin()->second.range.of;
  for (size_t k = 1; k <= of; ++k) {
    auto it = by_index.find(k);
    if (it == by_index.end())
      throw InputError(fmt::format("merge: risk shard {}/{} is missing ({} of {} given)", k, of,
                                   by_index.size(), of));
    out.push_back(std::move(it->second));
  }
  return out;
}

}  // namespace

bool is_risk_shard(const json& body) {
  return body.is_object() && body.value("format", "") == kRiskShardFormat;
}

json evidence_json(const std::vector<RiskEvidence>& per_load) {
  json out = json::array();
  for (const RiskEvidence& e : per_load) {
    json load = {{"calm", passages_json(e.calm)}, {"pushed", passages_json(e.pushed)}};
    if (!e.split.empty()) load["split"] = splits_json(e.split);
    out.push_back(std::move(load));
  }
  return out;
}

std::vector<RiskEvidence> evidence_of(const json& j, const std::string& where) {
  if (!j.is_array()) throw InputError(where + ": the evidence is a list, one entry per load");
  std::vector<RiskEvidence> out;
  for (const json& load : j) {
    if (!load.is_object()) throw InputError(where + ": a load's evidence is an object");
    out.push_back({passages_of(load.value("calm", json()), where),
                   passages_of(load.value("pushed", json()), where),
                   splits_of(load.value("split", json::array()), where)});
  }
  return out;
}

namespace {

// A passage's times lie within its run: none after the run's end, the end
// itself at most the horizon.
void check_passage_times(const Passage& p, double horizon_s, const std::string& where) {
  const double end = horizon_s * (1 + 1e-9) + 1e-9;
  auto within = [&](const std::optional<double>& t) { return !t || *t <= p.end_s; };
  if (!(p.end_s <= end) || !within(p.enter_s) || !within(p.left_after_enter_s) ||
      !within(p.leave_s))
    throw InputError(fmt::format(
        "{}: a passage ends at {} s or holds a time past its end; runs end by the horizon, {} s",
        where, number_text(p.end_s), number_text(horizon_s)));
}

// One load's evidence holds what the shard's range says: a passage per
// replication (pushed: one each, or none without a push), its replicas.
void check_part_shape(const RiskEvidence& e, const PartShape& shape, const std::string& where) {
  if (e.calm.size() != shape.runs || (!e.pushed.empty() && e.pushed.size() != shape.runs) ||
      e.split.size() != shape.splits)
    throw InputError(fmt::format(
        "{}: a load holds {} passages, {} after a push and {} splitting replicas; its range "
        "has {} replications and {} replicas",
        where, e.calm.size(), e.pushed.size(), e.split.size(), shape.runs, shape.splits));
  for (const auto* passages : {&e.calm, &e.pushed})
    for (const Passage& p : *passages) check_passage_times(p, shape.horizon_s, where);
}

}  // namespace

void append_risk_cells(std::vector<std::vector<RiskEvidence>>& cells, const json& part,
                       const std::string& where, const PartShape* shape) {
  if (!part.is_array() || (!cells.empty() && part.size() != cells.size()))
    throw InputError(where + ": its cells differ in number from the first part's");
  cells.resize(part.size());
  for (size_t c = 0; c < part.size(); ++c) {
    std::vector<RiskEvidence> loads = evidence_of(part[c], where);
    if (shape)
      for (const RiskEvidence& e : loads) check_part_shape(e, *shape, where);
    if (cells[c].empty()) cells[c].resize(loads.size());
    if (loads.size() != cells[c].size())
      throw InputError(where + ": its loads differ in number from the first part's");
    for (size_t l = 0; l < loads.size(); ++l) {
      auto& to = cells[c][l];
      to.calm.insert(to.calm.end(), loads[l].calm.begin(), loads[l].calm.end());
      to.pushed.insert(to.pushed.end(), loads[l].pushed.begin(), loads[l].pushed.end());
      to.split.insert(to.split.end(), loads[l].split.begin(), loads[l].split.end());
    }
  }
}

ShardRange risk_shard_range(size_t index, size_t of, size_t runs) {
  const size_t first = (index - 1) * runs / of, end = index * runs / of;
  return {index, of, first, end - first};
}

std::vector<std::vector<RiskEvidence>> gather_risk_cells(const RiskRequest& r, size_t first,
                                                         size_t count) {
  if (r.knob) return gather_risk_map(r.scenario, *r.knob, r.options, first, count);
  return {gather_risk(r.scenario, r.options, first, count)};
}

namespace {

template <class View>
auto risk_answer(const RiskRequest& r, const std::vector<std::vector<RiskEvidence>>& cells,
                 View&& view) {
  if (r.knob) return view(summarize_risk_map(r.scenario, *r.knob, r.options, cells));
  if (cells.size() != 1) throw InputError("risk: evidence for one scenario, not a map");
  return view(summarize_risk(r.scenario, r.options, cells.front()));
}

struct AsJson {
  json operator()(const RiskMap& m) const { return risk_map_json(m); }
  json operator()(const RiskResult& r) const { return risk_json(r); }
};
struct AsText {
  std::string operator()(const RiskMap& m) const { return risk_map_text(m); }
  std::string operator()(const RiskResult& r) const { return risk_text(r); }
};

}  // namespace

json risk_answer_json(const RiskRequest& r, const std::vector<std::vector<RiskEvidence>>& cells) {
  return risk_answer(r, cells, AsJson{});
}

std::string risk_answer_text(const RiskRequest& r,
                             const std::vector<std::vector<RiskEvidence>>& cells,
                             const std::string& format) {
  if (format == "json") return risk_answer_json(r, cells).dump(2) + "\n";
  return risk_answer(r, cells, AsText{});
}

std::string risk_shard_text(const RiskRequest& r, const ShardRange& range,
                            const std::vector<std::vector<RiskEvidence>>& cells,
                            const std::string& output) {
  json evidence = json::array();
  for (const auto& cell : cells) evidence.push_back(evidence_json(cell));
  json j = {
      {"format", kRiskShardFormat},
      {"version", 1},
      {"shard",
       {{"index", range.index}, {"of", range.of}, {"first", range.first}, {"count", range.count}}},
      {"request", request_json(r)},
      {"output", output},
      {"cells", std::move(evidence)}};
  return j.dump() + "\n";
}

std::string merged_risk_text(const std::vector<std::pair<std::string, std::string>>& files,
                             const std::string& format,
                             const std::function<void(const RiskRequest&)>& check) {
  std::vector<RiskShard> shards;
  for (const auto& [path, text] : files) shards.push_back(parse_risk_shard(path, text));
  shards = order_risk_shards(std::move(shards));
  const RiskShard& first = shards.front();
  // A JSON error names the file it was found in.
  const std::string* reading = &first.path;
  try {
    const RiskRequest r = request_of(first.body.at("request"), "merge: " + first.path);
    if (check) check(r);
    const auto runs = static_cast<size_t>(risk_runs(r.scenario, r.options));
    // A map over horizon_s runs each cell to its own: the longest bounds all.
    double horizon_s = risk_scenario(r.scenario, r.options).horizon_s;
    if (r.knob && r.knob->path == "horizon_s")
      for (double v : r.knob->values()) horizon_s = std::max(horizon_s, v);
    std::vector<std::vector<RiskEvidence>> cells;
    size_t next = 0;
    for (const RiskShard& s : shards) {
      reading = &s.path;
      const std::string where = "merge: " + s.path;
      if (s.range.first != next || s.range != risk_shard_range(s.range.index, s.range.of, runs))
        throw InputError(fmt::format("{}: replications {} to {} are not shard {}/{} of {} runs",
                                     where, s.range.first, s.range.first + s.range.count,
                                     s.range.index, s.range.of, runs));
      next += s.range.count;
      const int splits =
          r.options.splitting
              ? split_range(s.range.first, s.range.count, runs, r.options.split_runs).second
              : 0;
      const PartShape shape{s.range.count, static_cast<size_t>(splits), horizon_s};
      append_risk_cells(cells, s.body.at("cells"), where, &shape);
    }
    if (next != runs)
      throw InputError(fmt::format("merge: {}: the shards end at replication {} of {}",
                                   shards.back().path, next, runs));
    const std::string out = format.empty() ? first.body.value("output", "text") : format;
    return risk_answer_text(r, cells, out == "json" ? "json" : "text");
  } catch (const json::exception& e) {
    throw InputError("merge: " + *reading + ": not a retrystorm risk shard (" +
                     std::string(e.what()) + ")");
  }
}

}  // namespace retrystorm
