// `retrystorm serve`: the page (embedded) and the JSON API of docs/http-api.md,
// over the application layer. In parts: the routes (routes.hpp: one table of
// method, path, cost and handler), the guard (guard.hpp: Host, Origin,
// methods, body headers), the transport (transport.hpp: deadlines and
// connection caps), the work budget (work_budget.hpp), and serve() here.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "parallel/cancel.hpp"
#include "server/work_budget.hpp"

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
  // What one request may cost (CPU, memory): the same estimate and limits as
  // the command line without --allow-large (analysis/cost.hpp).
  CostLimits cost;
  // Threads one /api/sweep may use (0: every core); serve() sets it to the
  // slots of the work budget the request holds.
  unsigned sweep_threads = 0;
  // Per request, set by the server: true once the client has gone away; ladders,
  // tipping points and sweeps poll it between runs and stop.
  CancelCheck cancelled;
  // Any one request ends by then: its runs are stopped and it answers 503 with
  // the reason (0: no deadline). Well above what the cost limits let a
  // request cost, so only a run far beyond its estimate meets it.
  double run_deadline_s = 180;

  // Connections and hosts: docs/http-api.md, "Security model".
  double request_deadline_s = 10;       // the whole request, headers and body
  double response_deadline_s = 30;      // the whole answer, however slowly it is read
  double idle_timeout_s = 5;            // an open connection waiting for a request
  int max_connections = 128;            // open at once; more are answered 503
  int max_connections_per_client = 64;  // from one address
  int max_work = 0;                     // expensive requests at once; 0: hardware threads
  double work_wait_s = 3;               // wait for a slot, then 503 with Retry-After
  // Host names accepted besides the bound address, localhost and 127.0.0.1
  // ("NAME" with the server's port, or "NAME:PORT").
  std::vector<std::string> allowed_hosts;
};

// Blocks serving until the process ends. Returns 1 when it cannot bind.
int serve(const std::string& host, int port, const ServerLimits& limits = {});

// The address the banner gives for the page: "http://[::1]:8080/" for an
// IPv6 host, a loopback address for 0.0.0.0 and ::.
std::string page_url(const std::string& host, int port);

// One API call, without HTTP: method path and body in, status and JSON out.
// The server and its tests both use it.
struct ApiAnswer {
  int status;
  nlohmann::json body;
};
ApiAnswer handle_api(const std::string& path, const std::string& body,
                     const ServerLimits& limits = {});

}  // namespace retrystorm
