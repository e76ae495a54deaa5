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
#include "app/commands.hpp"
#include "formats/input_text.hpp"
#include "formats/result_json.hpp"
#include "formats/risk_shard.hpp"
#include "formats/scenario_io.hpp"
#include "formats/sweep_shard.hpp"
#include "formats/text_report.hpp"
#include "text/number.hpp"

namespace retrystorm::cli {

namespace {

using nlohmann::json;

// FNV-1a (64 bits) of the scenario's JSON: shards of different scenarios differ.
std::string scenario_hash(const Scenario& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : scenario_to_json(s).dump()) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

json grid_json(const std::vector<SweepAxis>& axes, size_t points) {
  json vary = json::array();
  for (const SweepAxis& a : axes)
    vary.push_back(a.listed.empty()
                       ? json{{"path", a.path}, {"from", a.from}, {"to", a.to}, {"step", a.step}}
                       : json{{"path", a.path}, {"values", a.listed}});
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

void select_shard(const Scenario& base, const std::vector<SweepAxis>& axes, const ShardSpec& shard,
                  SweepOptions& options) {
  // Only shard K's range: the others' would cost memory and time in N.
  const auto [first, count] =
      cost_balanced_range(sweep_point_seconds(base, axes, options), shard.of, shard.index - 1);
  options.first = first;
  options.count = count;
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

struct MergeCommand {
  std::vector<std::string> files;
  std::string format, out;
  bool allow_large = false;
};

// The file's bytes, bounded (a shard of a large grid is beyond kMaxInputBytes).
std::string read_shard_bytes(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    throw InputError("merge: " + path + ": no such shard file");
  if (ec) throw InputError("merge: " + path + ": cannot be read (" + ec.message() + ")");
  if (std::filesystem::is_directory(status))
    throw InputError("merge: " + path + ": a directory; name the shard files in it");
  // A device or FIFO holds no shard that `sweep --shard` or `risk --shard` wrote.
  if (!std::filesystem::is_regular_file(status))
    throw InputError("merge: " + path +
                     ": not a regular file (a device, FIFO or socket); name a shard file "
                     "that `sweep --shard K/N` or `risk --shard K/N` wrote");
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError("merge: " + path + ": cannot be read (" + ec.message() + ")");
  if (size > kMaxShardBytes)
    throw InputError("merge: " + path + ": larger than 1 GiB; cut the sweep into more shards");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw InputError("merge: " + path + ": cannot be read");
  return bytes.str();
}

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

// Whether the first file names itself a risk shard (the rest must agree).
bool risk_shards(const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string& text = files.front().second;
  return text.find(kRiskShardFormat) != std::string::npos &&
         is_risk_shard(parse_json_text(text, "merge: " + files.front().first, kMaxShardBytes));
}

int merge(const MergeCommand& c) {
  if (c.allow_large)
    check_merge_memory(c.files, large_cost_limits(), "");
  else
    check_merge_memory(c.files, CostLimits{}, "; --allow-large allows more");
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : c.files) files.emplace_back(path, read_shard_bytes(path));
  if (risk_shards(files)) {
    if (!c.format.empty()) check_format(c.format, {"text", "json"});
    app::CostBudget budget;
    budget.limits = c.allow_large ? large_cost_limits() : CostLimits{};
    if (!c.allow_large) budget.hint = "; --allow-large allows more";
    emit(merged_risk_text(files, c.format,
                          [&](const RiskRequest& r) { app::check_risk_merge(r, budget); }),
         c.out);
    return 0;
  }
  if (!c.format.empty()) check_format(c.format, {"csv", "json"});
  std::vector<SweepShard> shards;
  for (const auto& [path, text] : files) shards.push_back(parse_sweep_shard(text, path));
  shards = order_sweep_shards(std::move(shards));
  std::string format = c.format;
  if (format.empty()) format = shards.front().body.value("output", "csv");
  if (format != "json") format = "csv";
  try {
    emit(merged_sweep_text(shards, format), c.out);
  } catch (const json::exception& e) {
    throw InputError("merge: a shard's rows are malformed (" + std::string(e.what()) + ")");
  }
  return 0;
}

}  // namespace

void add_merge_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<MergeCommand>();
  auto* cmd = app.add_subcommand(
      "merge",
      "join the shards of `sweep --shard K/N` or `risk --shard K/N` into the unsharded output");
  cmd->add_option("files", c->files, "shard files, any order")->required();
  // Refused before any shard is read; which ones fit is checked once the shards say what they are.
  cmd->add_option("--format", c->format,
                  "csv | json for a sweep, text | json for risk (default: the shards' --format)")
      ->check(one_of({"csv", "json", "text"}));
  cmd->add_option("--out", c->out, "write to FILE (atomically)");
  cmd->add_flag("--allow-large", c->allow_large,
                "merge shards that need more than 1 GiB of memory (about 12 times their size), "
                "up to 8 GiB");
  table.add(cmd, [c] { return merge(*c); });
}

}  // namespace retrystorm::cli
