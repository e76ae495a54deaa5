// The `analyze` subcommand: incident logs in, queue figures and a ranked
// diagnosis out (docs/analyze.md).
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

// Registers `analyze` on `app` and its action in `table`.
void add_analyze_command(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
