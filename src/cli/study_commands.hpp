// The subcommands that study a scenario over many runs: `ladder` (the
// defenses one at a time), `tipping` (the shortest incident that does not
// recover), `risk` (how likely randomness tips it, and how long it stays)
// and `sweep` (a grid of runs over numeric keys).
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

void add_ladder_command(CLI::App& app, CommandTable& table);
void add_tipping_command(CLI::App& app, CommandTable& table);
void add_risk_command(CLI::App& app, CommandTable& table);
void add_step_down_command(CLI::App& app, CommandTable& table);
void add_sweep_command(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
