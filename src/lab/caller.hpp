// The lab's retrying client for one call (docs/lab.md): each call sends
// HTTP/1.1 attempts to 127.0.0.1:port, with the per-attempt timeout, and
// after a failed attempt the scenario's policy decides through ClientPolicy
// and RetryState (the same code the engines use). The load generator holds
// one for the users' calls; in a graph, each backend that calls the next
// service holds one for its call. Without `retries`, a layer in front (a
// proxy, gRPC's channel) retries and the call waits for its one answer.
// Event-driven on the owner's Asio loop: no thread per call.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lab/asio.hpp"
#include "lab/clock.hpp"
#include "model/scenario.hpp"

namespace retrystorm::lab {

struct CallerOptions {
  int port = 0;
  Scenario scenario;      // the call's client (and its budget's demand and step)
  bool retries = true;    // false: one attempt per call (a layer in front retries)
  double patience_s = 5;  // without retries: how long the caller waits
  Clock::time_point t0;
  double bin_s = 0.5;
  uint64_t seed = 1;  // the backoff's draws
  // Non-empty: each call is one gRPC call on a channel with this service
  // config, whose retryPolicy retries (grpc_layer.hpp).
  std::string grpc_service_config;
};

// What the caller counted, per bin (from the instant it happened).
struct CallerSeries {
  std::vector<double> first_sent, retries_sent, gave_up, failed, budget_denied;
  // Attempts the client's guards refused (max_requests, breaker, throttle),
  // and the retries among them.
  std::vector<double> refused, refused_retries;
};

// A call, as the caller's owner sees it: where it came from on the path of
// its user request (docs/lab.md, "A chain of services").
struct CallContext {
  unsigned long long id = 0;      // retries of one call share it (kRequestHeader)
  double start_s = 0;             // the user request's arrival (the deadline counts from it)
  bool path_first = true;         // every call above is on its first attempt
  double path_give_up_s = 1e300;  // the earliest instant a caller above gives up
};

class HttpCaller {
 public:
  // Called once per call: whether it succeeded, at the instant it ended.
  using Done = std::function<void(bool ok)>;
  HttpCaller(boost::asio::io_context& io, const CallerOptions& o);
  ~HttpCaller();
  HttpCaller(const HttpCaller&) = delete;
  HttpCaller& operator=(const HttpCaller&) = delete;

  // Over gRPC: waits for the channel to connect (false if it did not by `by`).
  bool connect_grpc(std::chrono::system_clock::time_point by);
  void call(const CallContext& c, Done done);
  // Budgets count steps: each begins with its expected first attempts.
  void begin_step(double first_attempts);
  bool budget_enabled() const;

  const CallerSeries& series() const;
  double connection_errors() const;
  // From the callee sending an answer to its arrival here.
  TimingError answer_transit() const;

 private:
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace retrystorm::lab
