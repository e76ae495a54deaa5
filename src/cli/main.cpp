// The retrystorm command line: one callback per subcommand (src/cli/*),
// each over the application layer (src/app) the server uses too.
// Command names, options and exit statuses: docs/cli.md.

#include <CLI/CLI.hpp>

#include "cli/analyze_command.hpp"
#include "cli/common.hpp"
#include "cli/config_commands.hpp"
#include "cli/info_commands.hpp"
#include "cli/lab_command.hpp"
#include "cli/merge_command.hpp"
#include "cli/run_command.hpp"
#include "cli/study_commands.hpp"
#include "model/keys.hpp"

using namespace retrystorm;
using namespace retrystorm::cli;

int main(int argc, char** argv) {
  if (names_lab(argc, argv)) return lab_program(argv);  // before any parsing
  CLI::App app{
      "retrystorm: how client retries turn a short incident into an outage that sustains "
      "itself, and which defenses get a system out.\nSee README.md and docs/ for the model."};
  app.require_subcommand(1);
  app.set_version_flag("--version", RETRYSTORM_VERSION);

  CommandTable table;  // in this order in --help and in the unknown-command message
  add_presets_command(app, table);
  add_keys_command(app, table);
  add_calibrate_command(app, table);
  add_run_command(app, table);
  add_ladder_command(app, table);
  add_tipping_command(app, table);
  add_risk_command(app, table);
  add_step_down_command(app, table);
  add_sweep_command(app, table);
  add_merge_command(app, table);  // joins `sweep --shard K/N` files
  add_serve_command(app, table);
  add_config_commands(app, table);  // import, export, lint
  add_analyze_command(app, table);
  add_lab_launcher(app);  // lab, run by retrystorm-lab (docs/lab.md)
  return run_command_line(app, table, argc, argv);
}
