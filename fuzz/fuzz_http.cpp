// libFuzzer target for the HTTP API bodies (src/server/server.cpp, handle_api):
// the first byte picks a POST path, the rest is the body. Every answer must be
// 200, 400 or 503 (out of memory) with a JSON object that can be sent; anything
// else (a crash, an exception escaping handle_api, a sanitizer report) is a bug.
// The limits are the server's, made smaller so that one input runs quickly.
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>

#include "server/server.hpp"

namespace {
const char* const kPaths[] = {"/api/run",         "/api/trace",        "/api/ladder",
                              "/api/tipping",     "/api/sweep",        "/api/export/envoy",
                              "/api/export/grpc", "/api/export/istio", "/api/export/linkerd",
                              "/api/export/aws",  "/api/import",       "/api/lint",
                              "/api/montecarlo"};

retrystorm::ServerLimits small_limits() {
  retrystorm::ServerLimits l;
  l.max_steps = 20'000;
  l.max_sweep_runs = 16;
  l.max_tipping_steps = 1e6;
  l.max_session_runs = 2;
  l.max_agent_runs = 2;
  l.sweep_threads = 1;
  return l;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const retrystorm::ServerLimits limits = small_limits();
  if (size == 0) return 0;
  const char* path = kPaths[data[0] % std::size(kPaths)];
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  retrystorm::ApiAnswer a = retrystorm::handle_api(path, body, limits);
  if ((a.status != 200 && a.status != 400 && a.status != 503) || !a.body.is_object()) std::abort();
  a.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // as send_json
  return 0;
}
