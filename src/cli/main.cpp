// The retrystorm command line: one callback per subcommand (src/cli/*),
// each over the application layer (src/app) the server uses too.
// Command names, options and exit statuses: docs/cli.md.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

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

namespace {

// CLI11 reports an unknown command as a missing one: name it instead.
bool known_command(CLI::App& app, int argc, char** argv) {
  if (argc <= 1 || argv[1][0] == '-') return true;
  std::string names;
  bool known = false;
  for (const auto* sub : app.get_subcommands({})) {
    known = known || sub->get_name() == argv[1];
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (!known)
    std::cerr << "retrystorm: unknown command '" << argv[1] << "'; choose one of " << names << "\n";
  return known;
}

// The parsed command's exit status; errors on standard error.
int run_parsed(const CommandTable& table) {
  try {
    int status = table.run_parsed().value_or(0);
    finish_stdout();
    return status;
  } catch (const InputError& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "retrystorm: out of memory: the request is larger than this machine can hold; "
                 "make it smaller (see docs/limits.md)\n";
    return kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";  // names the path
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
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
  add_lab_commands(app, table);  // lab, lab-backend (docs/lab.md); a note without the lab

  if (!known_command(app, argc, argv)) return kExitBadInput;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "retrystorm: " << e.what() << " (see --help)\n";
    return kExitBadInput;
  }
  return run_parsed(table);
}
