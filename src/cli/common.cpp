#include "cli/common.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "app/scenario_request.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

namespace fs = std::filesystem;

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

app::Budget ScenarioOptions::budget() const {
  if (allow_large) return {large_cost_limits(), "", {}};
  return {CostLimits{}, "; --allow-large allows more", {}};
}

namespace {

// Where one output goes: straight into an existing device-like file, or into
// a temporary file renamed over a regular (or absent) one.
struct Pending {
  std::string path;  // the file written in the end (a symlink's target)
  std::string temp;  // empty: written straight into `path`
};

[[noreturn]] void cannot(const std::string& option, const std::string& path,
                         const std::string& why) {
  throw InputError(option + ": cannot write '" + path + "': " + why);
}

void write_all(int fd, const std::string& text, const std::string& option,
               const std::string& path) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cannot(option, path, std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// The permissions a new file gets from the shell: 0666 less the umask.
mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// A temporary file beside `path` made with mkstemp (O_EXCL: a planted name or
// symlink cannot be followed), holding `text`, with the mode `path` has or
// would get.
std::string write_temp(const std::string& path, const std::string& text, const std::string& option,
                       mode_t mode) {
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string temp = (dir / ("." + p.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0) cannot(option, path, std::strerror(errno));
  try {
    if (::fchmod(fd, mode) != 0) cannot(option, path, std::strerror(errno));
    write_all(fd, text, option, path);
    if (::close(fd) != 0) {
      fd = -1;
      cannot(option, path, std::strerror(errno));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  return temp;
}

// Decides how `out` is written and, for regular files, writes the temporary.
// Where `out` writes (a link's target), refused when it cannot be a file.
std::string output_path(const std::string& out, const std::string& option) {
  std::string path = out;
  struct stat st {};
  if (::lstat(out.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    path = fs::canonical(out, ec).string();  // write where the link points, keep the link
    if (ec) cannot(option, out, "a symbolic link to nothing");
  }
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    throw InputError(option + ": '" + out + "' is a directory; name a file");
  if (exists && S_ISBLK(st.st_mode))
    throw InputError(option + ": '" + out + "' is a block device; name a file");
  return path;
}

Pending prepare(const std::string& out, const std::string& text, const std::string& option) {
  std::string path = output_path(out, option);
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) return {path, ""};  // /dev/null, a FIFO, a terminal
  return {path, write_temp(path, text, option, exists ? (st.st_mode & 07777) : new_file_mode())};
}

void write_direct(const Pending& p, const std::string& text, const std::string& option) {
  int fd = ::open(p.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) cannot(option, p.path, std::strerror(errno));
  try {
    write_all(fd, text, option, p.path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace

void emit_all(const std::vector<OutputFile>& files, const std::string& option) {
  std::vector<Pending> pending;
  try {
    for (const OutputFile& f : files) pending.push_back(prepare(f.path, f.text, option));
    for (size_t i = 0; i < files.size(); ++i) {
      if (pending[i].temp.empty()) {
        write_direct(pending[i], files[i].text, option);
      } else if (::rename(pending[i].temp.c_str(), pending[i].path.c_str()) != 0) {
        cannot(option, files[i].path, std::strerror(errno));
      } else {
        pending[i].temp.clear();
      }
    }
  } catch (...) {
    for (const Pending& p : pending)
      if (!p.temp.empty()) ::unlink(p.temp.c_str());
    throw;
  }
}

void check_output(const std::string& out, const std::string& option) {
  if (out.empty()) return;
  fs::path path = output_path(out, option);
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (::access(dir.c_str(), W_OK) != 0)
    cannot(option, out,
           "its directory cannot be written to (" + std::string(std::strerror(errno)) + ")");
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
  emit_all({{out, text}}, option);
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
