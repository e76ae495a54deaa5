// `retrystorm serve`: the page (embedded) and the JSON API of contract.md
// ("HTTP API"), over the core library.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace retrystorm {

struct ServerLimits {
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  int max_steps = 200'000;          // per run
  size_t max_sweep_runs = 10'000;
  // Steps a tipping point may run in all (grid points x steps per run):
  // /api/tipping refuses more, so one request cannot hold a thread for long.
  double max_tipping_steps = 50e6;
  int max_session_runs = 200;  // session-model replications per /api/run
  int max_agent_runs = 50;     // agent-engine replications per /api/run
};

// Blocks serving until the process ends. Returns 1 when it cannot bind.
int serve(const std::string& host, int port, const ServerLimits& limits = {});

// One API call, without HTTP: method path and body in, status and JSON out.
// The server and its tests both use it.
struct ApiAnswer {
  int status;
  nlohmann::json body;
};
ApiAnswer handle_api(const std::string& path, const std::string& body,
                     const ServerLimits& limits = {});

}  // namespace retrystorm
