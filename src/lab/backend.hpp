// The lab's backend (docs/lab.md): a real HTTP/1.1 server process with the
// scenario's server. Event-driven (one thread, Boost.Asio): `slots` workers
// each serving for slots / capacity seconds at full rate, a FIFO queue with
// an optional limit (503 when full), the incident multiplying the service
// rate between its start and end (work in service slows or freezes), and,
// with shed_abandoned, queued attempts whose caller gave up dropped unserved.
// Service runs on virtual instants (a start is the arrival or the previous
// finish, not the moment a timer fired), so timer lateness delays responses
// but never loses capacity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::lab {

struct BackendOptions {
  int port = 0;                 // 0: any free port; printed as `listening PORT`
  double capacity_per_s = 100;  // 0: a proxy (no server: it makes its call at once)
  int slots = 1;
  double queue_limit = 0;  // waiting attempts; 0 = unbounded
  bool shed_abandoned = false;
  double incident_start_s = 0;
  double incident_duration_s = 0;
  double capacity_factor = 1;
  long long t0_unix_ms = 0;  // time zero shared with the load generator
  double bin_s = 0.5;
  double horizon_s = 60;
  std::string out;  // the per-bin counts, JSON, written when stopped
  // Also a gRPC listener (`listening PORT grpc GRPC_PORT`): same queue and
  // workers, the caller's deadline from the gRPC deadline (grpc_layer.hpp).
  bool grpc = false;
  // In a chain of services (docs/lab.md, "A chain of services"): after its
  // own work each attempt calls the next service on 127.0.0.1:call_port with
  // this call's client (a scenario without a graph: the edge's keys), and
  // answers once that call ended: 200 when it succeeded, else 503.
  int call_port = 0;
  std::optional<Scenario> call;
  unsigned long long call_seed = 1;
};

// Per-bin counts the backend measures (attempts, not user requests).
struct BackendSeries {
  std::vector<double> first_attempts, retries, goodput, served_late, shed, rejected, backlog,
      capacity;
  void resize(size_t n);
};

// The one table of those counts, each named as the run's series name it
// (engines/series.hpp): the backend's report and the measured run walk it.
struct BackendField {
  const char* name;
  std::vector<double> BackendSeries::*member;
};
// Two to a line, as the series pair up (attempts, outcomes, state).
// clang-format off
inline constexpr BackendField kBackendFields[] = {
    {"first_attempts", &BackendSeries::first_attempts}, {"retries", &BackendSeries::retries},
    {"goodput", &BackendSeries::goodput}, {"served_late", &BackendSeries::served_late},
    {"shed", &BackendSeries::shed}, {"rejected", &BackendSeries::rejected},
    {"backlog", &BackendSeries::backlog}, {"capacity", &BackendSeries::capacity}};
// clang-format on

// What a service in a chain counts beside those (docs/lab.md, "A chain of
// services"): arrivals that are not the user request's very first attempt,
// completions after a caller above had given up, and failures answered.
struct ChainSeries {
  std::vector<double> path_retries, path_late, failed;
};
inline constexpr struct {
  const char* name;
  std::vector<double> ChainSeries::*member;
} kChainFields[] = {{"path_retries", &ChainSeries::path_retries},
                    {"path_late", &ChainSeries::path_late},
                    {"failed", &ChainSeries::failed}};

// Serves until SIGTERM/SIGINT or horizon + 60 s; then writes `out`. Exit status.
int run_backend(const BackendOptions& o);

// The attempt headers: the request id (retries of one request share it) and
// the caller's per-attempt timeout. Behind a layer (HAProxy, nginx, gRPC) the
// backend knows only that relative timeout, as a real server knows gRPC's
// grpc-timeout: the caller gives up at arrival + timeout, a transit later
// than the layer's own timer. The lab's own client (--through direct) also
// sends the instant its timer gives up, in microseconds from the lab's time
// zero, as systems that propagate an absolute deadline do: the backend then
// knows exactly when the caller gives up, as the model's server does
// (docs/lab.md, "Who knows when the caller gives up").
inline constexpr const char* kRequestHeader = "x-rs-request";
inline constexpr const char* kTimeoutHeader = "x-rs-timeout-ms";
inline constexpr const char* kGiveUpHeader = "x-rs-give-up-us";
// In a chain of services (docs/lab.md, "A chain of services") the lab's
// clients also send what the attempt is to the user request: the earliest
// give-up instant of any caller above (microseconds from time zero), and "1"
// when every call above is on its first attempt and this is the call's first.
inline constexpr const char* kPathGiveUpHeader = "x-rs-path-give-up-us";
inline constexpr const char* kPathFirstHeader = "x-rs-first";

}  // namespace retrystorm::lab
