// Sweeps cut into shards for batch schedulers (Slurm arrays, Kubernetes
// indexed Jobs): `sweep --shard K/N` writes one shard file, `merge` joins the
// shards into the bytes the unsharded sweep writes (docs/distributed.md).
#pragma once

#include <string>
#include <vector>

#include "analysis/sweep.hpp"
#include "cli/common.hpp"

namespace retrystorm::cli {

// Shard `index` of `of`, counted from 1: a contiguous range of the grid.
struct ShardSpec {
  size_t index = 1;
  size_t of = 1;
};

// Parses "K/N" (1 <= K <= N). Throws InputError naming --shard.
ShardSpec parse_shard(const std::string& text);

// Sets options.first and options.count to shard K's points: the K-th of N
// contiguous ranges of about equal estimated cost (cost_balanced_ranges over
// sweep_point_seconds), so that the shards of a grid end at about the same time.
void select_shard(const Scenario& base, const std::vector<SweepAxis>& axes, const ShardSpec& shard,
                  SweepOptions& options);

// The shard file (JSON): the grid, the base scenario and its hash, runs,
// seed, the shard and its range, and the rows in both output forms.
std::string shard_text(const Scenario& base, const std::vector<SweepAxis>& axes,
                       const SweepOptions& options, size_t points, const ShardSpec& shard,
                       const std::vector<SweepRow>& rows, const std::string& format);

void add_merge_command(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
