// Child processes of the lab (the backend, a proxy) and of the conformance
// suite (tests/conformance/harness.hpp): started with an argv, their
// `listening PORT` line read with a timeout, and stopped by pid when the
// owner goes (SIGTERM, then SIGKILL after a grace period). A child also
// gets SIGTERM when the lab itself dies (PR_SET_DEATHSIG), so a crash or
// SIGKILL of the lab leaves nothing running.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace retrystorm::lab {

class ChildProcess {
 public:
  ChildProcess() = default;
  // Starts argv[0] (looked up in PATH) with `env` added to the environment.
  // Stdout is a pipe (read_line); stderr goes to `stderr_path` when given,
  // else is discarded; stdin is /dev/null.
  ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path = "",
               const std::map<std::string, std::string>& env = {});
  ~ChildProcess() { stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }
  ChildProcess& operator=(ChildProcess&& o) noexcept;

  pid_t pid() const { return pid_; }
  bool running();
  // The exit code once running() or wait() saw the child exit (-1: killed by a signal).
  std::optional<int> exit_status() const { return exit_status_; }
  // Waits for the child to exit by itself: its exit status, nothing on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // One line of stdout (without the newline), or nothing by the deadline.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // All of stdout until the child closes it (or the deadline).
  std::string read_all(std::chrono::milliseconds timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL; reaps the child. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  std::optional<int> exit_status_;
};

// The path of the running program (to start it again as the backend).
std::string self_executable();

// Whether a TCP connect to 127.0.0.1:port succeeds within `timeout`.
bool port_accepts(int port, std::chrono::milliseconds timeout);

// A port free right now on 127.0.0.1 (bound to 0 and read back).
int free_port();

// While one lives, SIGINT, SIGTERM, SIGHUP and SIGQUIT only note that the run must end
// (interrupted()); the lab polls it, stops its processes by pid and reports
// what it measured. One handler for the whole run: no window where a second
// signal (`timeout` sends one to the process and one to its group) meets the
// default action.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction* old_ = nullptr;
};
bool interrupted();

// Makes this process the reaper of its descendants: a program that a proxy
// started and left behind comes here when its parent exits, not to init.
void adopt_orphans();
// Children of this process other than `known` (found in /proc): stopped with
// SIGKILL and reaped. Their pids; empty when nothing was left.
std::vector<pid_t> stop_strays(const std::vector<pid_t>& known);

}  // namespace retrystorm::lab
