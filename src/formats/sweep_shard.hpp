// The shard files of `sweep --shard K/N` as `merge` reads them: parsed and
// checked one by one (a shard is outside input like any file), checked
// together (one sweep, each shard once, none missing), and joined into the
// bytes the unsharded sweep writes (docs/distributed.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace retrystorm {

inline constexpr const char* kShardFormat = "retrystorm-sweep-shard";
// A shard holds its rows twice (JSON and CSV): far above one scenario file.
inline constexpr std::uintmax_t kMaxShardBytes = std::uintmax_t{1} << 30;
// A shard's parsed form takes about this many times its bytes.
inline constexpr double kMemoryPerShardByte = 12;

struct SweepShard {
  std::string path;
  nlohmann::json body;
  size_t index = 0, of = 0;
  size_t first = 0, count = 0;  // its points: [first, first + count) of the grid
};

// One shard file's text, checked on its own: JSON within the limits of every
// input, the shard format, whole-number fields, its range, CSV rows without
// control characters. InputError naming `path` otherwise.
SweepShard parse_sweep_shard(const std::string& text, const std::string& path);

// The shards in index order, checked together: one sweep, each shard once,
// none missing, their ranges one after the other from the grid's first point
// to its last (the cut itself is sweep's: by cost, cli/merge_command.hpp).
std::vector<SweepShard> order_sweep_shards(std::vector<SweepShard> shards);

// The rows in shard order, as the unsharded sweep writes them: "json" or "csv".
std::string merged_sweep_text(const std::vector<SweepShard>& shards, const std::string& format);

}  // namespace retrystorm
