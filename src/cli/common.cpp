#include "cli/common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "app/scenario_request.hpp"
#include "logs/atomic_file.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

void CommandTable::add(CLI::App* command, std::function<int()> action) {
  actions_.emplace_back(command, std::move(action));
}

std::optional<int> CommandTable::run_parsed() const {
  for (const auto& [command, action] : actions_)
    if (command->parsed()) return action();
  return std::nullopt;
}

Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback) {
  if (!preset.empty() && !file.empty())
    throw InputError("--preset and --scenario: give one of them, not both");
  app::ScenarioRequest request;
  request.preset = preset;
  request.file = file;
  request.fallback = fallback;
  for (const std::string& kv : sets) request.sets.push_back({kv, std::nullopt});
  app::AssembledScenario assembled = app::assemble_scenario(request);
  for (const std::string& w : assembled.warnings) std::cerr << "retrystorm: warning: " << w << "\n";
  return assembled.scenario;
}

void ScenarioOptions::add_source_to(CLI::App& cmd) {
  cmd.add_option("--preset", preset, "a preset name (see `retrystorm presets`)");
  cmd.add_option("--scenario", file, "a scenario file, YAML or JSON");
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
  check_output_path(out, option);
}

void finish_stdout() {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::cout.fail() || std::ferror(stdout))
    throw std::runtime_error(std::string("cannot write the output to stdout: ") +
                             std::strerror(errno ? errno : EIO));
}

void emit(const std::string& text, const std::string& out, const std::string& option) {
  if (out.empty()) {
    std::cout << text << std::flush;
    return;
  }
  write_files({{out, text}}, option);
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
