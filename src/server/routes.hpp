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

}  // namespace retrystorm::http
