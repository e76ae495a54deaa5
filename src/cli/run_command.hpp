// The `run` subcommand: one scenario's verdict, metrics, chart and table, its
// Monte Carlo, and optionally its logs and OpenMetrics series.
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

void add_run_command(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
