#include "cli/merge_command.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "analysis/cost.hpp"
#include "io/input_text.hpp"
#include "io/result_json.hpp"
#include "io/scenario_io.hpp"
#include "io/text_report.hpp"
#include "text/number.hpp"

namespace retrystorm::cli {

namespace {

using nlohmann::json;

constexpr const char* kShardFormat = "retrystorm-sweep-shard";
// A shard holds its rows twice (JSON and CSV): far above one scenario file.
constexpr std::uintmax_t kMaxShardBytes = std::uintmax_t{1} << 30;

// FNV-1a (64 bits) of the scenario's JSON: shards of different scenarios differ.
std::string scenario_hash(const Scenario& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : scenario_to_json(s).dump()) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

json grid_json(const std::vector<SweepAxis>& axes, size_t points) {
  json vary = json::array();
  for (const SweepAxis& a : axes)
    vary.push_back({{"path", a.path}, {"from", a.from}, {"to", a.to}, {"step", a.step}});
  return {{"vary", vary}, {"points", points}};
}

// A sweep CSV's lines without their newlines.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t parse_count(const std::string& part, const std::string& text) {
  double v = 0;
  if (parse_decimal(part, v) != NumberText::ok || v < 1 || v > 1e9 || v != std::floor(v))
    throw InputError("--shard: '" + text + "' must be K/N with whole numbers 1 <= K <= N");
  return static_cast<size_t>(v);
}

}  // namespace

ShardSpec parse_shard(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos)
    throw InputError("--shard: '" + text + "' must be K/N with whole numbers 1 <= K <= N");
  ShardSpec shard{parse_count(text.substr(0, slash), text),
                  parse_count(text.substr(slash + 1), text)};
  if (shard.index > shard.of)
    throw InputError("--shard: '" + text + "': shard " + std::to_string(shard.index) +
                     " is above the " + std::to_string(shard.of) + " shards (K counts from 1)");
  return shard;
}

void select_shard(size_t points, const ShardSpec& shard, SweepOptions& options) {
  options.first = (shard.index - 1) * points / shard.of;
  options.count = shard.index * points / shard.of - options.first;
}

std::string shard_text(const Scenario& base, const std::vector<SweepAxis>& axes,
                       const SweepOptions& options, size_t points, const ShardSpec& shard,
                       const std::vector<SweepRow>& rows, const std::string& format) {
  std::vector<std::string> csv = lines_of(sweep_csv(axes, rows));
  json j = {{"format", kShardFormat},
            {"version", 1},
            {"shard",
             {{"index", shard.index},
              {"of", shard.of},
              {"first", options.first},
              {"count", options.count}}},
            {"grid", grid_json(axes, points)},
            {"runs", options.runs},
            {"seed", options.seed ? json(*options.seed) : json(nullptr)},
            {"scenario_fnv1a64", scenario_hash(base)},
            {"scenario", scenario_to_json(base)},
            {"output", format},
            {"csv_header", csv.front()},
            {"csv_rows", std::vector<std::string>(csv.begin() + 1, csv.end())},
            {"rows", sweep_json(axes, rows)["rows"]}};
  return j.dump() + "\n";
}

namespace {

struct Shard {
  std::string path;
  json body;
  size_t index = 0, of = 0;
};

struct MergeCommand {
  std::vector<std::string> files;
  std::string format, out;
  bool allow_large = false;
};

// The file's bytes, bounded (a shard of a large grid is beyond kMaxInputBytes).
std::string read_shard_bytes(const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec || !std::filesystem::is_regular_file(path))
    throw InputError("merge: " + path + ": no such shard file");
  if (size > kMaxShardBytes)
    throw InputError("merge: " + path + ": larger than 1 GiB; cut the sweep into more shards");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw InputError("merge: " + path + ": cannot be read");
  return bytes.str();
}

// A whole number field of the shard's "shard" object.
size_t whole_field(const Shard& s, const char* field) {
  const json& v = s.body.at("shard").at(field);
  if (!v.is_number_unsigned())
    throw InputError("merge: " + s.path + ": shard." + field + " is " + v.dump() +
                     "; a shard file holds whole numbers there");
  return v.get<size_t>();
}

// The CSV lines are written out as they are: one line each, no control
// characters (a newline would add a row, an escape would reach a terminal).
void check_csv_rows(const Shard& s) {
  for (const json& line : s.body.at("csv_rows")) {
    const auto& text = line.get_ref<const std::string&>();
    for (unsigned char c : text)
      if (c < 0x20 || c == 0x7F)
        throw InputError("merge: " + s.path + ": a CSV row holds the control character " +
                         fmt::format("0x{:02X}", c) + "; a shard file never does");
  }
}

Shard read_shard(const std::string& path) {
  Shard s{path, {}, 0, 0};
  try {
    // Nesting and duplicate keys bounded as in every input (io/input_text.hpp).
    s.body = parse_json_text(read_shard_bytes(path), "merge: " + path, kMaxShardBytes);
    if (!s.body.is_object() || s.body.value("format", "") != kShardFormat ||
        s.body.value("version", 0) != 1)
      throw InputError("merge: " + path + ": not a retrystorm sweep shard (`sweep --shard K/N`)");
    s.index = whole_field(s, "index");
    s.of = whole_field(s, "of");
    check_csv_rows(s);
  } catch (const json::exception& e) {
    throw InputError("merge: " + path + ": not a retrystorm sweep shard (" + e.what() + ")");
  }
  return s;
}

// Shards of one sweep agree on everything but their range.
void check_same_sweep(const Shard& s, const Shard& first) {
  for (const char* field : {"grid", "runs", "seed", "scenario_fnv1a64", "csv_header"})
    if (s.body.at(field) != first.body.at(field))
      throw InputError("merge: " + s.path + ": its " + field + " differs from " + first.path +
                       "'s; merge only the shards of one sweep");
  if (s.of != first.of)
    throw InputError("merge: " + s.path + ": shard of " + std::to_string(s.of) + ", but " +
                     first.path + " is a shard of " + std::to_string(first.of));
}

// The shard holds exactly the points `sweep --shard K/N` gives K.
void check_range(const Shard& s, size_t points) {
  if (s.index < 1 || s.index > s.of)
    throw InputError("merge: " + s.path + ": shard " + std::to_string(s.index) + " of " +
                     std::to_string(s.of) + " (K counts from 1)");
  SweepOptions expected;
  select_shard(points, {s.index, s.of}, expected);
  const json& shard = s.body.at("shard");
  size_t first = shard.at("first").get<size_t>(), count = shard.at("count").get<size_t>();
  if (first != expected.first || count != expected.count || s.body.at("rows").size() != count ||
      s.body.at("csv_rows").size() != count)
    throw InputError("merge: " + s.path + ": points " + std::to_string(first) + " to " +
                     std::to_string(first + count) + " overlap or leave a gap: shard " +
                     std::to_string(s.index) + "/" + std::to_string(s.of) + " of " +
                     std::to_string(points) + " points holds " + std::to_string(expected.first) +
                     " to " + std::to_string(expected.first + expected.count));
}

// A shard's parsed form takes about this many times its bytes.
constexpr double kMemoryPerShardByte = 12;

// Refuses, before reading, a merge whose shards would need more memory than
// the budget allows.
void check_merge_memory(const std::vector<std::string>& files, const CostLimits& limits,
                        const std::string& hint) {
  double bytes = 0;
  for (const std::string& path : files) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    if (!ec) bytes += static_cast<double>(size);
  }
  double needed = bytes * kMemoryPerShardByte;
  if (needed > limits.max_bytes)
    throw InputError(fmt::format(
        "merge: the shards hold {:.0f} MiB and merging them needs about {:.1f} GiB of memory; the "
        "limit is {:.1f} GiB{}; cut the sweep into fewer points per merge",
        bytes / (1 << 20), needed / (1 << 30), limits.max_bytes / (1 << 30), hint));
}

// The shards by index, checked: one sweep, each shard once, none missing.
std::vector<Shard> load_shards(const std::vector<std::string>& files) {
  std::map<size_t, Shard> by_index;
  for (const std::string& path : files) {
    Shard s = read_shard(path);
    try {
      if (!by_index.empty()) check_same_sweep(s, by_index.begin()->second);
      check_range(s, s.body.at("grid").at("points").get<size_t>());
    } catch (const json::exception& e) {
      throw InputError("merge: " + path + ": not a retrystorm sweep shard (" + e.what() + ")");
    }
    auto [at, added] = by_index.emplace(s.index, s);
    if (!added)
      throw InputError("merge: " + path + ": shard " + std::to_string(s.index) + "/" +
                       std::to_string(s.of) + " again (also " + at->second.path + ")");
  }
  std::vector<Shard> out;
  size_t of = by_index.begin()->second.of;
  for (size_t k = 1; k <= of; ++k) {
    auto it = by_index.find(k);
    if (it == by_index.end())
      throw InputError("merge: shard " + std::to_string(k) + "/" + std::to_string(of) +
                       " is missing (" + std::to_string(by_index.size()) + " of " +
                       std::to_string(of) + " given)");
    out.push_back(std::move(it->second));
  }
  return out;
}

// The rows in shard order, as the unsharded sweep writes them.
std::string merged_text(const std::vector<Shard>& shards, const std::string& format) {
  if (format == "json") {
    json rows = json::array();
    for (const Shard& s : shards)
      for (const json& row : s.body.at("rows")) rows.push_back(row);
    return json{{"rows", rows}}.dump(2) + "\n";
  }
  std::string out = shards.front().body.at("csv_header").get<std::string>() + "\n";
  for (const Shard& s : shards)
    for (const json& line : s.body.at("csv_rows")) out += line.get<std::string>() + "\n";
  return out;
}

int merge(const MergeCommand& c) {
  if (!c.format.empty()) check_format(c.format, {"csv", "json"});
  if (c.allow_large)
    check_merge_memory(c.files, large_cost_limits(), "");
  else
    check_merge_memory(c.files, CostLimits{}, "; --allow-large allows more");
  std::vector<Shard> shards = load_shards(c.files);
  std::string format = c.format;
  if (format.empty()) format = shards.front().body.value("output", "csv");
  if (format != "json") format = "csv";
  try {
    emit(merged_text(shards, format), c.out);
  } catch (const json::exception& e) {
    throw InputError("merge: a shard's rows are malformed (" + std::string(e.what()) + ")");
  }
  return 0;
}

}  // namespace

void add_merge_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<MergeCommand>();
  auto* cmd = app.add_subcommand(
      "merge", "join the shards of `sweep --shard K/N` into the unsharded sweep's output");
  cmd->add_option("files", c->files, "shard files, any order")->required();
  cmd->add_option("--format", c->format, "csv | json (default: the sweep's --format)");
  cmd->add_option("--out", c->out, "write to FILE (atomically)");
  cmd->add_flag("--allow-large", c->allow_large,
                "merge shards that need more than 1 GiB of memory (about 12 times their size), "
                "up to 8 GiB");
  table.add(cmd, [c] { return merge(*c); });
}

}  // namespace retrystorm::cli
