#include "cli/common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <utility>

#include "app/scenario_request.hpp"
#include "formats/input_text.hpp"
#include "logs/atomic_file.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "text/printable.hpp"

namespace retrystorm::cli {

namespace fs = std::filesystem;

void CommandTable::add(CLI::App* command, std::function<int()> action) {
  actions_.emplace_back(command, std::move(action));
}

namespace {

// The options that name a file a command writes when it is done.
constexpr const char* kOutputOptions[] = {"--out", "--metrics-out", "--emit-scenario"};

void check_outputs_apart(const CLI::App& command);

// Every output file's directory is checked before the command runs: a bad
// path fails at once, not after minutes of work, and never after another
// output (a log, the metrics) has been written.
// `--out -` is standard output, as without --out; a side output (the
// metrics, the scenario) would be mixed into the main one there, so `-` is
// refused for those.
void check_outputs(const CLI::App& command) {
  for (const char* name : kOutputOptions) {
    const CLI::Option* option = command.get_option_no_throw(name);
    if (!option || option->count() == 0) continue;
    const std::string path = option->as<std::string>();
    if (path.empty())
      throw InputError(std::string(name) + ": an empty file name; give a file, or '-' for " +
                       "standard output where the option allows it");
    if (path == kStandardOutput && std::string_view(name) != "--out")
      throw InputError(std::string(name) +
                       ": '-' (standard output) is where the command's own output goes; "
                       "give a file name");
    check_output(path, name);
  }
  check_outputs_apart(command);
}

bool is_output_option(const CLI::Option& option) {
  return std::any_of(std::begin(kOutputOptions), std::end(kOutputOptions),
                     [&](const char* name) { return option.check_lname(name + 2); });
}

// The file `path` names, when it is a regular file (not standard output).
std::optional<FileIdentity> file_id(const std::string& path) {
  if (path == kStandardOutput) return std::nullopt;
  return regular_file_identity(path);
}

// An output that names a file the command reads (`analyze in.log --out
// in.log`) would replace it with the report; two outputs that name one file
// would leave only the last. Both refused before any work, naming the options.
void check_outputs_apart(const CLI::App& command) {
  std::vector<std::pair<std::string, std::string>> outputs;  // option, path
  for (const char* name : kOutputOptions) {
    const CLI::Option* option = command.get_option_no_throw(name);
    if (option && option->count() > 0) outputs.emplace_back(name, option->as<std::string>());
  }
  // --log DIR writes the logs of docs/log-formats.md there.
  const CLI::Option* log = command.get_option_no_throw("--log");
  if (log && log->count() > 0)
    for (const char* file : {"requests.csv", "sessions.csv", "events.jsonl"})
      outputs.emplace_back("--log", (fs::path(log->as<std::string>()) / file).string());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [name, path] = outputs[i];
    const fs::path where = fs::absolute(path).lexically_normal();
    for (size_t j = 0; j < i; ++j)
      if (path != kStandardOutput &&
          (where == fs::absolute(outputs[j].second).lexically_normal() ||
           (file_id(path) && file_id(path) == file_id(outputs[j].second))))
        throw InputError(name + ": '" + printable(path) + "' is also where " + outputs[j].first +
                         " writes; give each output a file of its own");
    const auto id = file_id(path);
    if (!id) continue;
    for (const CLI::Option* input : command.get_options()) {
      if (input->count() == 0 || is_output_option(*input)) continue;
      for (const std::string& value : input->results())
        if (file_id(value) == id)
          throw InputError(name + ": '" + printable(path) + "' is a file this command reads (" +
                           (input->get_name().empty() ? "an input" : input->get_name()) +
                           "); writing there would replace it, so give another file");
    }
  }
}

}  // namespace

std::optional<int> CommandTable::run_parsed() const {
  for (const auto& [command, action] : actions_) {
    if (!command->parsed()) continue;
    check_outputs(*command);
    return action();
  }
  return std::nullopt;
}

namespace {

// An option before any command (`retrystorm --bogus`) that the program does
// not take: CLI11 would only say that a command is missing.
bool known_first_option(CLI::App& app, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  if (app.get_option_no_throw(name)) return true;
  std::string names;
  for (const CLI::Option* option : app.get_options())
    if (!option->get_name().empty()) names += (names.empty() ? "" : ", ") + option->get_name();
  std::cerr << "retrystorm: unknown option '" << printable(name) << "'; before a command only "
            << names << " are taken: give a command first (see --help)\n";
  return false;
}

// CLI11 reports an unknown command as a missing one: name it instead.
bool known_command(CLI::App& app, int argc, char** argv) {
  if (argc <= 1) return true;
  if (argv[1][0] == '-') return known_first_option(app, argv[1]);
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

// --help and --version print to standard output as the commands do: when
// it cannot be written they fail too, never exiting 0 with nothing shown.
int print_and_finish(const CLI::App& app, const CLI::Error& e) {
  const int status = app.exit(e);
  try {
    finish_stdout();
  } catch (const std::exception& failed) {
    std::cerr << "retrystorm: " << failed.what() << "\n";
    return kExitFailure;
  }
  return status;
}

}  // namespace

int run_command_line(CLI::App& app, const CommandTable& table, int argc, char** argv) {
  if (!known_command(app, argc, argv)) return kExitBadInput;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return print_and_finish(app, e);
  } catch (const CLI::CallForAllHelp& e) {
    return print_and_finish(app, e);
  } catch (const CLI::CallForVersion& e) {
    return print_and_finish(app, e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "retrystorm: " << e.what() << " (see --help)\n";
    return kExitBadInput;
  }
  return run_parsed(table);
}

namespace {

// Errors of a scenario file read FILE: ... (docs/limits.md). The reader names
// the file itself; the rules that tie keys together are checked once the
// scenario is whole, and the file is named when its own values break the
// rule: the same error without the --set values. A --set's own mistake, or
// one that breaks a rule the file kept, names only its key.
std::string file_error(const app::ScenarioRequest& request, const std::string& what) {
  const std::string& file = request.file;
  if (what.rfind(file + ":", 0) == 0 || what.rfind("--scenario:", 0) == 0) return what;
  if (!request.sets.empty()) {
    app::ScenarioRequest alone = request;
    alone.sets.clear();
    try {
      app::assemble_scenario(alone);
      return what;  // the file alone is whole: the --set values broke it
    } catch (const InputError& e) {
      if (what != e.what()) return what;
    }
  }
  return file + ": " + what;
}

}  // namespace

Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback,
                        std::optional<Engine> runs_as) {
  if (!preset.empty() && !file.empty())
    throw InputError("--preset and --scenario: give one of them, not both");
  app::ScenarioRequest request;
  request.preset = preset;
  request.file = file;
  // Read once: file_error assembles it again, and a pipe has no second reading.
  if (!file.empty()) request.file_text = read_input_file(file, "--scenario");
  request.fallback = fallback;
  request.warn_for_engine = runs_as;
  for (const std::string& kv : sets) request.sets.push_back({kv, std::nullopt});
  app::AssembledScenario assembled;
  try {
    assembled = app::assemble_scenario(request);
  } catch (const InputError& e) {
    if (file.empty()) throw;
    throw InputError(file_error(request, e.what()));
  }
  for (const std::string& w : assembled.warnings) std::cerr << "retrystorm: warning: " << w << "\n";
  return assembled.scenario;
}

// An empty --preset or --scenario read as none given, and ran the default.
CLI::Validator not_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& value) { return value.empty() ? "'' is empty; give " + what : ""; }, "");
}

void ScenarioOptions::add_source_to(CLI::App& cmd) {
  cmd.add_option("--preset", preset, "a preset name (see `retrystorm presets`)")
      ->check(not_empty("a preset name (`retrystorm presets` lists them)"));
  cmd.add_option("--scenario", file, "a scenario file, YAML or JSON")
      ->check(not_empty("a scenario file"));
  cmd.add_option("--set", sets, "PATH=VALUE, e.g. client.retries=0 (repeatable)")
      ->allow_extra_args(false);
}

void ScenarioOptions::add_to(CLI::App& cmd) {
  add_source_to(cmd);
  cmd.add_flag("--allow-large", allow_large,
               "run requests above the cost limits of the server (about a minute of CPU, "
               "1 GiB), up to 8 GiB of memory (docs/limits.md)");
}

app::CostBudget ScenarioOptions::budget() const {
  if (allow_large) return {large_cost_limits(), "", {}};
  return {CostLimits{}, "; --allow-large allows more", {}};
}

void check_output(const std::string& out, const std::string& option) {
  if (out != kStandardOutput) check_output_path(out, option);
}

namespace {

// Throws when standard output has failed: the cause is errno as the failed
// write left it (read at once: a later call may clear it; ENOSPC on a full disk).
void check_stdout() {
  if (std::cout.fail() || std::ferror(stdout))
    throw std::runtime_error(std::string("cannot write the output to stdout: ") +
                             std::strerror(errno ? errno : EIO));
}

}  // namespace

void finish_stdout() {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 && !errno) errno = EIO;
  check_stdout();
}

std::string dump(const nlohmann::json& j) {
  std::string text = j.dump(2);
  text += '\n';
  return text;
}

void emit(const std::string& text, const std::string& out, const std::string& option) {
  if (out.empty() || out == kStandardOutput) {
    errno = 0;
    std::cout << text << std::flush;
    check_stdout();
    return;
  }
  AtomicFile file(out, option);  // written from `text`, not from a copy of it
  file.write(text);
  file.commit();
}

namespace {

std::string not_allowed(const std::string& value, const std::vector<std::string>& allowed) {
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  return "'" + value + "' is not allowed here; choose one of " + list;
}

}  // namespace

CLI::Validator one_of(const std::vector<std::string>& allowed) {
  CLI::Validator member = CLI::IsMember(allowed);
  return CLI::Validator(
      [member, allowed](std::string& value) {
        return member(value).empty() ? std::string() : not_allowed(value, allowed);
      },
      member.get_description());
}

void check_format(const std::string& format, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), format) == allowed.end())
    throw InputError("--format: " + not_allowed(format, allowed));
}

}  // namespace retrystorm::cli
