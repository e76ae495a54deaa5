// `retrystorm lab`: the lab runs in retrystorm-lab, built beside this
// program (cli/lab_command.hpp says why).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/lab_command.hpp"
#include "lab/process.hpp"

namespace retrystorm::cli {

namespace {
constexpr const char* kLabProgram = "retrystorm-lab";
}  // namespace

bool names_lab(int argc, char** argv) {
  return argc > 1 &&
         (std::string_view(argv[1]) == "lab" || std::string_view(argv[1]) == "lab-backend");
}

int lab_program(char** argv) {
#if RETRYSTORM_WITH_LAB
  const std::string path =
      (std::filesystem::path(lab::self_executable()).parent_path() / kLabProgram).string();
  ::execv(path.c_str(), argv);  // returns only on failure; argv[0] stays, for messages
  std::cerr << "retrystorm: lab: cannot start " << path << " (" << std::strerror(errno)
            << "); it is built beside retrystorm (docs/lab.md)\n";
  return kExitFailure;
#else
  (void)argv;
  std::cerr << "retrystorm: lab: this build has no lab (configured with -DRETRYSTORM_LAB=OFF, "
               "without grpc++); build with the default options to run scenarios on real "
               "processes (docs/lab.md)\n";
  return kExitBadInput;
#endif
}

// Listed only: main() hands a command line naming `lab` to lab_program()
// before parsing, so the subcommand has no action here.
void add_lab_launcher(CLI::App& app) {
#if RETRYSTORM_WITH_LAB
  app.add_subcommand("lab", kLabSummary);
#else
  app.add_subcommand("lab", "not in this build (configured with -DRETRYSTORM_LAB=OFF)");
#endif
}

}  // namespace retrystorm::cli
