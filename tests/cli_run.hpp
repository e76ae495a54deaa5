// Running the built `retrystorm` binary from a test: a temporary directory,
// the command's exit status and both output streams.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace retrystorm::testing {

namespace fs = std::filesystem;

struct Outcome {
  int status = -1;  // exit status, or -1 when the process did not exit normally
  std::string out;
  std::string err;
};

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ =
        fs::temp_directory_path() / ("retrystorm_cli_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs the built binary in `dir` with `args`; standard output and error are
// captured in files. `timeout` keeps a case that wrongly starts serving from
// hanging the suite.
inline Outcome run_cli(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd " + shell_quote(dir.string()) + " && timeout 30 " + RETRYSTORM_BIN;
  for (const auto& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  cmd += " > .stdout 2> .stderr < /dev/null";
  int raw = std::system(cmd.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.out = read_all(dir / ".stdout");
  o.err = read_all(dir / ".stderr");
  fs::remove(dir / ".stdout");
  fs::remove(dir / ".stderr");
  return o;
}

}  // namespace retrystorm::testing
