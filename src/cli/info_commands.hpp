// The subcommands that run no scenario of the user's: `presets`, `keys`,
// `calibrate` and `serve`.
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

void add_presets_command(CLI::App& app, CommandTable& table);
void add_keys_command(CLI::App& app, CommandTable& table);
void add_calibrate_command(CLI::App& app, CommandTable& table);
void add_serve_command(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
