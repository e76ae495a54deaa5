// The HTTP API's routes (docs/http-api.md): one table of method, path,
// whether the request runs engines (and so holds a slot of the server's work
// budget) and its handler. The allow-lists of the guard, the expensive set of
// the work budget and handle_api all read this table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/server.hpp"

namespace retrystorm::http {

enum class Method { get, post };

struct Route {
  Method method;
  std::string path;
  bool expensive;  // runs engines: holds a work slot (and a sweep the idle ones)
  nlohmann::json (*handle)(const std::string& path, const nlohmann::json& body,
                           const ServerLimits& limits);
};

// Every route, GETs first; one POST /api/export/NAME per system we write.
const std::vector<Route>& routes();
// The route of exactly `path`, or null.
const Route* route_of(const std::string& path);

// Seconds a client is told to wait (Retry-After) before sending again a
// request that ran out of memory: memory comes free as other requests end.
inline constexpr int kOutOfMemoryRetryAfterS = 5;

// handle_api's answer, and whether the same request is worth sending again.
// retry_after_s > 0 only when it failed for want of what comes free (memory);
// 0 when it would fail the same way again (a run over the deadline, a client
// that has gone, every 4xx), so that no Retry-After invites the repeat.
struct RoutedAnswer {
  ApiAnswer answer;
  int retry_after_s = 0;
};
RoutedAnswer answer_call(const std::string& path, const std::string& body,
                         const ServerLimits& limits);

}  // namespace retrystorm::http
