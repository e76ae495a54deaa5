// retrystorm-lab: the lab's commands (`lab`, and the hidden `lab-backend`
// it starts), a program of their own so that only they load grpc++.
// `retrystorm lab ...` replaces itself with `retrystorm-lab lab ...`, the
// same arguments (cli/lab_command.hpp; docs/lab.md).

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "cli/lab_command.hpp"

using namespace retrystorm::cli;

int main(int argc, char** argv) {
  CLI::App app{"retrystorm lab: a scenario on real processes, next to its prediction."};
  app.require_subcommand(1);
  app.set_version_flag("--version", RETRYSTORM_VERSION);
  CommandTable table;
  add_lab_commands(app, table);
  return run_command_line(app, table, argc, argv);
}
