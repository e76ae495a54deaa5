// The scripted server's shared part (docs/conformance.md): a schedule that
// says how each attempt is answered, and a recorder that writes one JSON line
// per attempt. Both protocols (HTTP in scripted_http.cpp, gRPC in
// scripted_grpc.cpp) answer from the same Schedule and write to the same
// Recorder, so the tests read one record format.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace retrystorm::conformance {

// How one attempt is answered. `status` is an HTTP code ("503") or a gRPC
// code name ("UNAVAILABLE"); kept as text so one type serves both protocols.
struct Answer {
  std::string status = "200";
  double delay_ms = 0;  // wait before answering
  bool hang = false;    // never answer, until the client goes away or the server stops
  std::map<std::string, std::string> headers;  // response headers / trailing metadata
  std::string body;
  std::string content_type;
  nlohmann::json raw;  // the answer as written in the schedule, recorded as is

  int http_status() const;  // status as an HTTP code (500 when not a number)
};

class Schedule {
 public:
  enum class Mode { per_request, global };

  // Throws std::runtime_error with a readable message on a malformed schedule.
  static Schedule parse(const nlohmann::json& doc);
  static Schedule load(const std::string& path);

  // The answer for the `attempt`-th arrival of a request id (1-based) that is
  // the `arrival`-th arrival overall (1-based).
  const Answer& answer_for(int attempt, int arrival) const;

  Mode mode = Mode::per_request;
  std::vector<Answer> answers;
  Answer then;
};

// What the server learnt from one arriving attempt.
struct Arrival {
  std::string request = "-";             // x-rs-request, "-" when missing
  std::optional<std::string> announced;  // attempt number announced by the client, raw
  std::string method;
  std::string path;
};

// A ticket for one attempt in progress: which answer to use and where the
// record line goes once the attempt ends.
struct Ticket {
  int attempt = 0;
  int arrival = 0;
  double t_ms = 0;
  Arrival what;
  const Answer* answer = nullptr;
};

// Numbers attempts and writes the JSON Lines record, one line per attempt,
// flushed per line, in arrival order (a line is written once its attempt and
// every earlier arrival have ended).
class Recorder {
 public:
  Recorder(const Schedule& schedule, const std::string& record_path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Ticket begin(const Arrival& what);  // numbers the attempt and picks its answer
  void end(const Ticket& ticket);     // writes the record line with end_ms = now
  double now_ms() const;              // ms since server start, steady clock

 private:
  void write_line(const std::string& text);

  const Schedule& schedule_;
  std::FILE* out_ = nullptr;
  std::map<int, std::string> pending_;  // finished lines by arrival, not yet written
  int written_ = 0;
  std::mutex mutex_;
  std::map<std::string, int> attempts_by_request_;
  int arrivals_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Waits up to `ms` for the answer's delay; returns early (false) when `stop`
// is set. True when the full delay elapsed.
bool sleep_unless_stopped(double ms, const std::atomic<bool>& stop);

// The protocol loops: serve until `stop` is set; return the exit status.
// Each prints `listening PORT` (the bound port) to stdout once it accepts.
int serve_http(const Schedule& schedule, Recorder& recorder, int port, std::atomic<bool>& stop);
int serve_grpc(const Schedule& schedule, Recorder& recorder, int port, std::atomic<bool>& stop);

// Prints the ready line exactly once and flushes: `listening PORT\n`.
void announce_listening(int port);

}  // namespace retrystorm::conformance
