// The lab's load generator (docs/lab.md): open-loop user requests at the
// scenario's arrivals (deterministic or Poisson, the incident's demand
// factor applied), each sent over HTTP/1.1 to 127.0.0.1:port. With
// `retries` the generator is the client (HttpCaller, caller.hpp): per-attempt
// timeout, then the scenario's policy. Without, a layer in front (a proxy)
// retries and the generator waits for its one answer. Event-driven on one
// thread (Boost.Asio): thousands of open requests, no thread per request.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "histogram/latency_histogram.hpp"
#include "lab/clock.hpp"
#include "model/scenario.hpp"

namespace retrystorm::lab {

struct GeneratorOptions {
  int port = 0;
  Scenario scenario;      // scaled; its demand, incident, client
  bool retries = true;    // false: one attempt per request (a proxy retries)
  double patience_s = 5;  // without retries: how long the caller waits
  long long t0_unix_ms = 0;
  double bin_s = 0.5;
  // Called about once a second with the time and the counts so far.
  std::function<void(double t_s, double requests, double succeeded, double failed)> progress;
  // Non-empty: each request is one gRPC call to 127.0.0.1:port on a channel
  // with this service config, whose retryPolicy retries (grpc_layer.hpp).
  std::string grpc_service_config;
};

struct GeneratorResult {
  std::vector<double> failed, gave_up, budget_denied, first_sent, retries_sent;  // per bin
  std::vector<double> refused, refused_retries;  // per bin: by the client's guards
  std::vector<double> succeeded_per_bin;
  double user_requests = 0, succeeded = 0, failed_total = 0, in_flight = 0;
  double connection_errors = 0;
  LatencyHistogram success_latency;
  TimingError arrival_error;  // how late arrivals left
  // From the backend sending an answer to its arrival here (all answers that
  // arrived, through whatever layer): the answer's way back.
  TimingError answer_transit;
  std::vector<double> lateness_max_s;  // per bin: the worst lateness (BinLateness)
  bool interrupted = false;            // SIGINT/SIGTERM: stopped early
  double interrupted_at_s = 0;         // when, from time zero
};

// Runs from time zero to the horizon (blocks); SIGINT/SIGTERM end it early.
GeneratorResult run_generator(const GeneratorOptions& o);

}  // namespace retrystorm::lab
