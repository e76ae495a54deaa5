// The `lab` subcommand (docs/lab.md): a scenario run for real on 127.0.0.1
// next to its prediction; and the hidden `lab-backend` it starts as its
// backend process.
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

// Registers `lab` and `lab-backend` on `app` and their actions in `table`.
void add_lab_commands(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
