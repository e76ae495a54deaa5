// The `lab` subcommand (docs/lab.md): a scenario run for real on 127.0.0.1
// next to its prediction; and the hidden `lab-backend` it starts as its
// backend process. Both live in a program of their own, retrystorm-lab,
// built beside retrystorm: only the lab needs grpc++, whose sixty shared
// libraries would otherwise load with every command.
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

inline constexpr const char* kLabSummary =
    "run a scenario for real on 127.0.0.1 (a backend process, optionally HAProxy, nginx or a "
    "gRPC channel retrying, a load generator; a chain of services: one backend per service, "
    "each calling the next) next to the engines' prediction (docs/lab.md)";

// retrystorm-lab: registers `lab` and `lab-backend` on `app` and their actions in `table`.
void add_lab_commands(CLI::App& app, CommandTable& table);

// retrystorm: `lab` in --help and among the known commands, and whether argv
// names it (then main() hands the whole command line to lab_program()).
void add_lab_launcher(CLI::App& app);
bool names_lab(int argc, char** argv);
// Replaces this process with retrystorm-lab beside it, with the same
// arguments; returns an exit status only when that program cannot start.
int lab_program(char** argv);

}  // namespace retrystorm::cli
