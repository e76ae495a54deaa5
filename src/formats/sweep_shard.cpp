#include "formats/sweep_shard.hpp"

#include <fmt/format.h>

#include <map>

#include "formats/input_text.hpp"
#include "model/keys.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

// A whole number field of the shard's "shard" object.
// (A float read as a size_t is undefined when out of range: found by fuzz_logs.)
size_t whole_field(const SweepShard& s, const char* object, const char* field) {
  // Named, not the JSON library's words: `"shard": null` said "cannot use at() with null".
  const json* parent = s.body.contains(object) ? &s.body.at(object) : nullptr;
  if (!parent || !parent->is_object() || !parent->contains(field))
    throw InputError("merge: " + s.path + ": " + object + "." + field +
                     " is missing; a shard file holds a whole number there");
  const json& v = parent->at(field);
  if (!v.is_number_unsigned())
    throw InputError("merge: " + s.path + ": " + object + "." + field + " is " +
                     v.dump().substr(0, 40) + "; a shard file holds whole numbers there");
  return v.get<size_t>();
}

// The CSV lines are written out as they are: one line each, no control
// characters (a newline would add a row, an escape would reach a terminal).
void check_csv_line(const SweepShard& s, const json& line) {
  for (unsigned char c : line.get_ref<const std::string&>())
    if (c < 0x20 || c == 0x7F)
      throw InputError("merge: " + s.path + ": a CSV row holds the control character " +
                       fmt::format("0x{:02X}", c) + "; a shard file never does");
}

void check_csv_rows(const SweepShard& s) {
  check_csv_line(s, s.body.at("csv_header"));
  for (const json& line : s.body.at("csv_rows")) check_csv_line(s, line);
  // The JSON rows are written back by the JSON writer, which escapes every
  // control character but DEL (found by fuzz_logs, FUZZ_FORMAT=shard).
  if (s.body.at("rows").dump().find('\x7F') != std::string::npos)
    throw InputError("merge: " + s.path +
                     ": a row holds the control character 0x7F; a shard file never does");
}

// Shards of one sweep agree on everything but their range.
void check_same_sweep(const SweepShard& s, const SweepShard& first) {
  for (const char* field : {"grid", "runs", "seed", "scenario_fnv1a64", "csv_header"})
    if (s.body.at(field) != first.body.at(field))
      throw InputError("merge: " + s.path + ": its " + field + " differs from " + first.path +
                       "'s; merge only the shards of one sweep");
  if (s.of != first.of)
    throw InputError("merge: " + s.path + ": shard of " + std::to_string(s.of) + ", but " +
                     first.path + " is a shard of " + std::to_string(first.of));
}

// The shard's own range: within the grid, one row per point of it.
void check_range(SweepShard& s, size_t points) {
  if (s.index < 1 || s.index > s.of)
    throw InputError("merge: " + s.path + ": shard " + std::to_string(s.index) + " of " +
                     std::to_string(s.of) + " (K counts from 1)");
  s.first = whole_field(s, "shard", "first");
  s.count = whole_field(s, "shard", "count");
  if (s.first > points || s.count > points - s.first || s.body.at("rows").size() != s.count ||
      s.body.at("csv_rows").size() != s.count)
    throw InputError("merge: " + s.path + ": points " + std::to_string(s.first) + " to " +
                     std::to_string(s.first + s.count) + " are not a range of rows of the " +
                     std::to_string(points) + "-point grid");
}

// Shard k starts where shard k - 1 ends; the last ends at the grid's end.
void check_contiguous(const std::vector<SweepShard>& shards) {
  size_t next = 0;
  for (const SweepShard& s : shards) {
    if (s.first != next)
      throw InputError("merge: " + s.path + ": points " + std::to_string(s.first) + " to " +
                       std::to_string(s.first + s.count) + " overlap or leave a gap: shard " +
                       std::to_string(s.index) + "/" + std::to_string(s.of) +
                       " must start at point " + std::to_string(next) +
                       ", where the shard before it ends");
    next = s.first + s.count;
  }
  size_t points = whole_field(shards.back(), "grid", "points");
  if (next != points)
    throw InputError("merge: " + shards.back().path + ": the shards end at point " +
                     std::to_string(next) + " of " + std::to_string(points));
}

}  // namespace

SweepShard parse_sweep_shard(const std::string& text, const std::string& path) {
  SweepShard s{path, {}, 0, 0};
  try {
    // Nesting and duplicate keys bounded as in every input (formats/input_text.hpp).
    s.body = parse_json_text(text, "merge: " + path, kMaxShardBytes);
    // Compared as JSON: a version of another type is another file, not a type error.
    if (!s.body.is_object() || !s.body.contains("format") || s.body["format"] != kShardFormat ||
        !s.body.contains("version") || s.body["version"] != 1)
      throw InputError("merge: " + path + ": not a retrystorm sweep shard (`sweep --shard K/N`)");
    s.index = whole_field(s, "shard", "index");
    s.of = whole_field(s, "shard", "of");
    check_csv_rows(s);
    check_range(s, whole_field(s, "grid", "points"));
  } catch (const json::exception& e) {
    throw InputError("merge: " + path + ": not a retrystorm sweep shard (" + e.what() + ")");
  }
  return s;
}

std::vector<SweepShard> order_sweep_shards(std::vector<SweepShard> shards) {
  std::map<size_t, SweepShard> by_index;
  for (SweepShard& s : shards) {
    try {
      if (!by_index.empty()) check_same_sweep(s, by_index.begin()->second);
    } catch (const json::exception& e) {
      throw InputError("merge: " + s.path + ": not a retrystorm sweep shard (" + e.what() + ")");
    }
    std::string path = s.path;
    auto [at, added] = by_index.emplace(s.index, std::move(s));
    if (!added)
      throw InputError("merge: " + path + ": shard " + std::to_string(at->second.index) + "/" +
                       std::to_string(at->second.of) + " again (also " + at->second.path + ")");
  }
  std::vector<SweepShard> out;
  size_t of = by_index.empty() ? 0 : by_index.begin()->second.of;
  for (size_t k = 1; k <= of; ++k) {
    auto it = by_index.find(k);
    if (it == by_index.end())
      throw InputError("merge: shard " + std::to_string(k) + "/" + std::to_string(of) +
                       " is missing (" + std::to_string(by_index.size()) + " of " +
                       std::to_string(of) + " given)");
    out.push_back(std::move(it->second));
  }
  if (!out.empty()) check_contiguous(out);
  return out;
}

// The rows in shard order, as the unsharded sweep writes them.
std::string merged_sweep_text(const std::vector<SweepShard>& shards, const std::string& format) {
  if (format == "json") {
    json rows = json::array();
    for (const SweepShard& s : shards)
      for (const json& row : s.body.at("rows")) rows.push_back(row);
    return json{{"rows", rows}}.dump(2) + "\n";
  }
  std::string out = shards.front().body.at("csv_header").get<std::string>() + "\n";
  for (const SweepShard& s : shards)
    for (const json& line : s.body.at("csv_rows")) out += line.get<std::string>() + "\n";
  return out;
}

}  // namespace retrystorm
