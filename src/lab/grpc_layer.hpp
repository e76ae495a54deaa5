// The lab's gRPC layer (`--through grpc`, docs/lab.md): the backend's gRPC
// listener and the load generator's gRPC client. The retries are done by the
// real gRPC C-core client (grpc++ from Debian) on a channel configured with
// the scenario's service config (`retrystorm export --to grpc`, or --config):
// the generator issues each user request once as a unary call, the channel's
// retryPolicy (and retryThrottling) retries it. Both sides use the callback
// API (no thread per call) and hand every event to their Boost.Asio loop, so
// the backend's FIFO and the generator's counts stay on one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "lab/asio.hpp"

// clang-format off
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/server.h>
// clang-format on

namespace retrystorm::lab {

// One method for every call; its name means nothing to either side.
inline constexpr const char* kGrpcMethod = "/retrystorm.Lab/Call";

// gRPC status codes the lab answers with (grpc::StatusCode values).
inline constexpr int kGrpcOk = 0;
inline constexpr int kGrpcDeadlineExceeded = 4;
inline constexpr int kGrpcUnavailable = 14;

class GrpcReactor;

// An attempt that reached the backend over gRPC. Touched only on the
// backend's Asio thread: answer() finishes the call once (later calls do
// nothing); a cancelled call (the caller gave up: perAttemptRecvTimeout or
// the deadline) is answered at once, so it holds no gRPC resources while
// its work stays queued, as the model's server does not know the caller left.
class GrpcAttempt {
 public:
  std::string request_id;    // metadata x-rs-request (retries of one call share it)
  double timeout_ms = 0;     // metadata x-rs-timeout-ms: the per-attempt timeout
  double deadline_in_s = 0;  // the call's gRPC deadline, seconds from arrival (0: none)
  // When gRPC handed it over (on its thread): the arrival, without the hop
  // to the backend's loop.
  std::chrono::steady_clock::time_point arrived;
  // Since the caller started the call (x-rs-sent-unix-us); `retry`: C-core
  // announced earlier attempts (grpc-previous-rpc-attempts).
  double transit_s = 0;
  bool retry = false;
  bool cancelled = false;
  // Set by the backend: when it counts the caller as gone (its deadline on
  // the lab's clock, seconds); and when gRPC told it the caller cancelled.
  double give_up_s = 0;
  std::chrono::steady_clock::time_point cancelled_at;
  void answer(int code);
  bool answered() const { return reactor_ == nullptr; }

 private:
  friend class GrpcReactor;
  GrpcReactor* reactor_ = nullptr;  // null once finished
};
using GrpcAttemptPtr = std::shared_ptr<GrpcAttempt>;

// A gRPC server on 127.0.0.1 (port 0: chosen by the system, read back).
// `on_attempt` runs on `io`'s thread for every incoming call.
class GrpcListener {
 public:
  // `on_cancel` runs there when a caller cancels a call not yet answered.
  GrpcListener(boost::asio::io_context& io, std::function<void(GrpcAttemptPtr)> on_attempt,
               std::function<void(GrpcAttemptPtr)> on_cancel);
  ~GrpcListener();
  int port() const { return port_; }
  // From now on every new call is answered UNAVAILABLE at once.
  void close();
  // Stops accepting and cancels what is left (every call must be answered first).
  void shutdown();

 private:
  struct Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// The generator's side: one channel to 127.0.0.1:port with the service
// config and the channel arguments C-core needs to run it as configured.
class GrpcCaller {
 public:
  GrpcCaller(boost::asio::io_context& io, int port, const std::string& service_config);
  ~GrpcCaller();
  // Connects before the run starts (false: not connected by `deadline`).
  bool connect(std::chrono::system_clock::time_point deadline);
  // One unary call with a deadline; `done(code, answer_transit_s)` runs on
  // `io`'s thread (the second: the backend's answer to its arrival here,
  // NaN when unknown). The
  // completion functions stay here, on that thread: they hold the
  // generator's Asio objects, which gRPC's threads must never destroy.
  void call(const std::string& request_id, long long timeout_ms,
            std::chrono::system_clock::time_point deadline, std::function<void(int, double)> done);

 private:
  // Where completions go: the generator's loop while this caller lives;
  // `completed`: calls whose callback ran and the loop has not yet seen.
  struct Sink {
    std::mutex mutex;
    std::condition_variable changed;
    boost::asio::io_context* io = nullptr;
    std::unordered_set<uint64_t> completed;
  };
  struct CallState;
  void complete(uint64_t key, int code, double answer_transit_s);
  // Declared first, destroyed last: the calls' contexts hold the channel.
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::shared_ptr<Sink> sink_;
  std::unordered_map<uint64_t, std::unique_ptr<CallState>> calls_;  // open, by key
  uint64_t next_key_ = 0;
};

// Nothing if gRPC accepts the service config, else its error.
std::string grpc_config_error(const std::string& service_config);

}  // namespace retrystorm::lab
