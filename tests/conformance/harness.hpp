// Test helpers of the conformance suite (docs/conformance.md): start a child
// process (the scripted server, a proxy, a client driver) with its argv and
// environment, read its `listening PORT` line with a timeout, stop it by pid
// when the test ends (also when it fails), read the scripted server's record.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "free_port.hpp"

namespace retrystorm::conformance {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A child process, killed and reaped when this goes out of scope: SIGTERM,
// up to 3 s to exit, then SIGKILL. Stdout is a pipe (read_line); stderr goes
// to `stderr_path` when given (else inherited).
class Child {
 public:
  Child() = default;
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
        const fs::path& stderr_path = {}) {
    start(argv, env, stderr_path);
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept { *this = std::move(o); }
  Child& operator=(Child&& o) noexcept {
    if (this != &o) {
      stop();
      std::swap(pid_, o.pid_);
      std::swap(out_, o.out_);
      std::swap(exit_status_, o.exit_status_);
      buffer_.swap(o.buffer_);
    }
    return *this;
  }

  pid_t pid() const { return pid_; }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return false;
    }
    return true;
  }
  std::optional<int> exit_status() const { return exit_status_; }

  // One line of stdout (without the newline), or nullopt after `timeout` / EOF.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto until = Clock::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (left.count() <= 0 || out_ < 0) return std::nullopt;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        ::close(out_);
        out_ = -1;
        continue;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // All of stdout until the child closes it (or `timeout`).
  std::string read_all(std::chrono::milliseconds timeout) {
    auto until = Clock::now() + timeout;
    std::string all;
    while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
               std::max(until - Clock::now(), Clock::duration::zero()))))
      all += *line + "\n";
    all += buffer_;
    buffer_.clear();
    return all;
  }

  // Waits for the child to exit by itself; returns its status (nullopt on timeout).
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      if (!running()) return exit_status_;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::nullopt;
  }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      if (!wait(std::chrono::milliseconds(3000)) && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
      }
    }
    if (out_ >= 0) ::close(out_);
    out_ = -1;
  }

 private:
  void start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const fs::path& stderr_path) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      if (!stderr_path.empty()) {
        int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err >= 0) ::dup2(err, 2);
      }
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  std::optional<int> exit_status_;
};

// Reads `listening PORT` from a started server; 0 when it did not come in time.
inline int read_listening_port(Child& child,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto line = child.read_line(timeout);
  if (!line || line->rfind("listening ", 0) != 0) return 0;
  try {
    return std::stoi(line->substr(10));
  } catch (const std::exception&) {
    return 0;
  }
}

// True once something accepts TCP connections on 127.0.0.1:port (a proxy
// that prints no ready line), false after `timeout`.
inline bool wait_for_tcp_port(int port,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// One line of the scripted server's record.
struct Attempt {
  std::string request;
  int attempt = 0;
  int arrival = 0;
  double t_ms = 0;
  std::optional<std::string> announced;
  std::string method;
  std::string path;
  nlohmann::json answer;
  double end_ms = 0;
};

// The record file, ordered by arrival (lines that are not JSON are skipped:
// the last one may be half-written while the server still runs).
inline std::vector<Attempt> read_record(const fs::path& path) {
  std::vector<Attempt> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    Attempt a;
    a.request = j.value("request", "-");
    a.attempt = j.value("attempt", 0);
    a.arrival = j.value("arrival", 0);
    a.t_ms = j.value("t_ms", 0.0);
    if (j.contains("announced") && j["announced"].is_string())
      a.announced = j["announced"].get<std::string>();
    a.method = j.value("method", "");
    a.path = j.value("path", "");
    a.answer = j.value("answer", nlohmann::json::object());
    a.end_ms = j.value("end_ms", 0.0);
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(),
            [](const Attempt& x, const Attempt& y) { return x.arrival < y.arrival; });
  return out;
}

// The attempts of one request id, in arrival order.
inline std::vector<Attempt> attempts_of(const std::vector<Attempt>& all, const std::string& id) {
  std::vector<Attempt> out;
  for (const auto& a : all)
    if (a.request == id) out.push_back(a);
  return out;
}

// A running scripted server: the schedule written to `dir`, the record read
// back with record(). Stopped (SIGTERM, by pid) when destroyed.
class ScriptedServer {
 public:
  ScriptedServer(const fs::path& dir, const std::string& name, const nlohmann::json& schedule,
                 const std::string& protocol = "http", double max_seconds = 60)
      : schedule_(dir / (name + ".schedule.json")), record_(dir / (name + ".record.jsonl")) {
    std::ofstream(schedule_) << schedule.dump(2);
    child_ =
        Child({RS_SCRIPTED_SERVER_BIN, "--protocol", protocol, "--schedule", schedule_.string(),
               "--record", record_.string(), "--max-seconds", std::to_string(max_seconds)},
              {}, dir / (name + ".stderr"));
    port_ = read_listening_port(child_);
  }
  int port() const { return port_; }
  std::vector<Attempt> record() const { return read_record(record_); }
  // Stops the server, so hanging answers end and every line is written.
  std::vector<Attempt> stop_and_record() {
    child_.stop();
    return record();
  }

 private:
  fs::path schedule_, record_;
  Child child_;
  int port_ = 0;
};

}  // namespace retrystorm::conformance
