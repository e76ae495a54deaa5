// What every subcommand shares: reading the scenario its options name, and
// writing its output whole or not at all.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "logs/atomic_file.hpp"
#include "model/scenario.hpp"

namespace retrystorm::cli {

// Exit statuses (docs/cli.md): bad input, and a failure of the program itself.
constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

// The subcommands and what each does once parsed; main() runs the parsed one.
// An action returns its exit status and throws InputError for bad input.
class CommandTable {
 public:
  void add(CLI::App* command, std::function<int()> action);
  // The parsed command's status, or nothing when none was parsed.
  std::optional<int> run_parsed() const;

 private:
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions_;
};

// Parses the command line and runs the command it names: its exit status;
// unknown commands, bad options and errors reported on standard error.
int run_command_line(CLI::App& app, const CommandTable& table, int argc, char** argv);

// Refuses an empty value of an option that names `what` (a preset, a file):
// read as none given, it ran the default.
CLI::Validator not_empty(const std::string& what);

// The scenario of --preset or --scenario (default: the `fallback` preset),
// then every --set PATH=VALUE, validated; warnings on standard error for the
// keys its engine ignores (`runs_as`, when given: the engine the command
// runs instead of the scenario's). Throws InputError.
Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback,
                        std::optional<Engine> runs_as = std::nullopt);

// --preset, --scenario, --set and --allow-large of the commands that run
// scenarios (run, ladder, tipping, sweep).
struct ScenarioOptions {
  std::string preset;
  std::string file;
  std::vector<std::string> sets;
  bool allow_large = false;

  void add_to(CLI::App& cmd);
  // Only --preset, --scenario and --set (commands with their own limits).
  void add_source_to(CLI::App& cmd);
  // The scenario to run: preset or file (default: order-status), then --set;
  // `runs_as` as build_scenario's.
  Scenario build(std::optional<Engine> runs_as = std::nullopt) const {
    return build_scenario(preset, file, sets, "order-status", runs_as);
  }
  // The cost limits: the server's, or the larger ones of --allow-large.
  app::CostBudget budget() const;
};

// A JSON answer as the command line writes it: indented by 2, one newline
// at the end (the text is built once: answers of 100,000 steps are 40 MB).
std::string dump(const nlohmann::json& j);

// `--out -`: standard output, as without --out.
inline constexpr const char* kStandardOutput = "-";

// Writes to standard output (`out` empty or "-"), or to the file `out`: a regular file (or a new
// one) is written to a fresh temporary file beside it and renamed into place,
// so a failure leaves what was there; a terminal, pipe, FIFO or socket is
// written straight into. `option` names the flag in messages. Throws InputError.
void emit(const std::string& text, const std::string& out, const std::string& option = "--out");
// Refuses, before any work, an `out` that emit() could not write.
void check_output(const std::string& out, const std::string& option = "--out");
// Throws when what went to stdout was not all written (a full disk, a closed
// stdout): the command then fails instead of exiting 0 with its output lost.
void finish_stdout();

// Several files written as one: write_files (logs/atomic_file.hpp).

// CLI11's IsMember with a message that names the value and what is allowed:
// "--format: 'xml' is not allowed here; choose one of text, json, csv".
CLI::Validator one_of(const std::vector<std::string>& allowed);

// InputError with the same message unless `format` is one of `allowed` (where
// what is allowed depends on other options).
void check_format(const std::string& format, const std::vector<std::string>& allowed);

}  // namespace retrystorm::cli
