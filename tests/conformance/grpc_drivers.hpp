// Drivers of the gRPC conformance tests (docs/conformance.md, "gRPC"): the
// real gRPC C-core client (grpc++ 1.51, rs_grpc_client) and gRPC for Node
// (@grpc/grpc-js, node/grpc_client.js) run as child processes against the
// scripted server; the model is the same service config read by `import`.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <sstream>

#include "cli_run.hpp"
#include "harness.hpp"
#include "ks.hpp"
#include "policies/budget.hpp"
#include "policies/client_policy.hpp"
#include "systems/import.hpp"

namespace retrystorm::conformance {

using nlohmann::json;

enum class Client { c_core, node };

// How far a measured delay may land outside the model's range: scheduling
// noise on a loaded shared machine (2 cores, several builds). Far below what
// tells the jitter kinds apart (full jitter's low end is 0).
constexpr double kSchedulingToleranceMs = 10;

inline std::string client_name(const ::testing::TestParamInfo<Client>& info) {
  return info.param == Client::c_core ? "CCore" : "GrpcJs";
}

inline fs::path node_dir() {
  return fs::path(RETRYSTORM_SOURCE_DIR) / "tests/conformance/node";
}

inline bool node_ready() {
  static const bool ready = fs::exists(node_dir() / "node_modules/@grpc/grpc-js/package.json") &&
                            std::system("node --version >/dev/null 2>&1") == 0;
  return ready;
}

struct CallResult {
  std::string request, status, message;
  double start_ms = 0, elapsed_ms = 0;
};

struct ClientRun {
  std::optional<int> exit;
  std::vector<CallResult> calls;  // in call order
  const CallResult& call(const std::string& id) const {
    for (const auto& c : calls)
      if (c.request == id) return c;
    throw std::runtime_error("no result for " + id);
  }
};

// Starts one client process; its stderr goes to a file in `dir`.
inline Child start_client(Client client, const fs::path& dir, int port, const std::string& config,
                          const std::vector<std::string>& extra) {
  static int runs = 0;
  ++runs;
  fs::path config_file = dir / ("service-config-" + std::to_string(runs) + ".json");
  testing::write_file(config_file, config);
  std::vector<std::string> argv = {RS_GRPC_CLIENT_BIN};
  if (client == Client::node) argv = {"node", (node_dir() / "grpc_client.js").string()};
  argv.push_back("--target");
  argv.push_back("127.0.0.1:" + std::to_string(port));
  argv.push_back("--service-config");
  argv.push_back(config_file.string());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Child(argv, {}, dir / ("client-" + std::to_string(runs) + ".stderr"));
}

// Reads a started client's JSON lines until it exits (bounded by `timeout_s`).
inline ClientRun collect(Child& child, int timeout_s = 30) {
  std::string out = child.read_all(std::chrono::seconds(timeout_s));
  ClientRun run;
  run.exit = child.wait(std::chrono::seconds(5));
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    run.calls.push_back({j.value("request", ""), j.value("status", ""), j.value("message", ""),
                         j.value("start_ms", 0.0), j.value("elapsed_ms", 0.0)});
  }
  std::sort(run.calls.begin(), run.calls.end(),
            [](const CallResult& a, const CallResult& b) { return a.start_ms < b.start_ms; });
  return run;
}

inline ClientRun run_client(Client client, const fs::path& dir, int port, const std::string& config,
                            const std::vector<std::string>& extra) {
  Child child = start_client(client, dir, port, config, extra);
  return collect(child);
}

// The model: the same service config through the project's gRPC import, as
// one client process (retryThrottling's tokens are per channel: clients = 1).
inline ClientPolicy model_of(const std::string& config) {
  auto r = configs::import_configs({{"service-config.json", config}}, false);
  ClientPolicy::Settings p = r.layers.at(0).policy().settings();
  p.budget.clients = 1;
  return ClientPolicy(std::move(p));
}

inline std::string service_config(const json& retry_policy, const json& extra = json::object()) {
  json mc = {{"name", json::array({{{"service", "rs.Scripted"}}})}, {"retryPolicy", retry_policy}};
  json doc = {{"methodConfig", json::array({mc})}};
  for (const auto& [k, v] : extra.items()) {
    if (k == "timeout")
      doc["methodConfig"][0]["timeout"] = v;
    else
      doc[k] = v;
  }
  return doc.dump();
}

inline json retry_policy(int max_attempts, const std::string& initial, const std::string& max,
                         double multiplier, json codes = json::array({"UNAVAILABLE"})) {
  return {{"maxAttempts", max_attempts},
          {"initialBackoff", initial},
          {"maxBackoff", max},
          {"backoffMultiplier", multiplier},
          {"retryableStatusCodes", codes}};
}

// The model's attempts for a request whose first `failures` attempts fail
// with a retryable answer (INT_MAX: every attempt fails).
inline int model_attempts(const ClientPolicy& p, int failures) {
  for (int a = 1;; ++a) {
    if (a > failures) return a;
    Failure f;
    f.attempt = a;
    if (!p.decide(f).retries()) return a;
  }
}

// Per request id: the gaps between an attempt's answer and the next
// attempt's arrival (ms), by retry number (1 = before attempt 2). Calls
// r-1 .. r-`skip` are left out (a client's first wave, while it warms up).
inline std::map<int, std::vector<double>> retry_gaps(const std::vector<Attempt>& record,
                                                     int skip = 0) {
  std::map<std::string, std::vector<Attempt>> by_request;
  for (const auto& a : record) {
    auto dash = a.request.rfind('-');
    if (dash != std::string::npos && std::atoi(a.request.c_str() + dash + 1) <= skip) continue;
    by_request[a.request].push_back(a);
  }
  std::map<int, std::vector<double>> gaps;
  for (auto& [id, attempts] : by_request)
    for (size_t k = 1; k < attempts.size(); ++k)
      gaps[static_cast<int>(k)].push_back(attempts[k].t_ms - attempts[k - 1].end_ms);
  return gaps;
}

// The q-quantile of a sample (nearest rank), 0 when empty.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}
inline double median(const std::vector<double>& v) {
  return quantile(v, 0.5);
}

class GrpcConformance : public ::testing::TestWithParam<Client> {
 public:
  void SetUp() override {
    if (GetParam() == Client::node && !node_ready())
      GTEST_SKIP() << "no node or no tests/conformance/node/node_modules (scripts/setup.sh)";
  }
  ClientRun run(const fs::path& dir, int port, const std::string& config,
                std::vector<std::string> extra) {
    return run_client(GetParam(), dir, port, config, std::move(extra));
  }
};

}  // namespace retrystorm::conformance
