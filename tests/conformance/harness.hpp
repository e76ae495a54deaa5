// Test helpers of the conformance suite (docs/conformance.md): start a child
// process (the scripted server, a proxy, a client driver) with its argv and
// environment, read its `listening PORT` line with a timeout, stop it by pid
// when the test ends (also when it fails), read the scripted server's record.
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "free_port.hpp"
#include "lab/process.hpp"

namespace retrystorm::conformance {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A child process (src/lab/process.hpp), killed and reaped when this goes
// out of scope: SIGTERM, up to 3 s to exit, then SIGKILL. Stdout is a pipe
// (read_line, read_all); stderr goes to `stderr_path` (else discarded).
class Child : public lab::ChildProcess {
 public:
  Child() = default;
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
        const fs::path& stderr_path = {})
      : ChildProcess(argv, stderr_path.string(), env) {}
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
  return lab::port_accepts(port, timeout);
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
