// The guard in front of every request (docs/http-api.md, "Security model"):
// the Host and Origin a request must name, the method its route takes, and
// what a POST's headers must say before its body is read.
#pragma once

#include <httplib.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/server.hpp"

namespace retrystorm::http {

// The Host and Origin values that name this server: the bound address,
// localhost and 127.0.0.1 with the server's port, and --allow-host.
class HostRules {
 public:
  HostRules(const std::string& bound, int port, const std::vector<std::string>& extra);
  // A Host header; without a port it means ours.
  bool host_ok(const std::string& host) const;
  // An Origin header: http://HOST[:PORT], nothing after; no port means 80.
  bool origin_ok(const std::string& origin) const;
  // "127.0.0.1:8080, localhost:8080, ...": for the refusal's message.
  std::string allowed() const;

 private:
  bool matches(const std::string& name, const std::string& port) const;
  std::string port_;
  std::set<std::string> names_, with_port_;
};

struct Refusal {
  int status;
  std::string message;
  std::string allow;  // the Allow header of a 405
};

// Checked before routing, so that nothing is read or run for a request this
// server does not take.
std::optional<Refusal> refusal_of(const httplib::Request& req, const HostRules& hosts,
                                  const ServerLimits& limits);

// The body of a POST, refused with 413 as soon as it passes the limit (the
// answer written into `res`; false then).
// `content_length`: the request's header, empty for a chunked body.
bool read_body(const httplib::ContentReader& reader, size_t max, std::string& body,
               httplib::Response& res, const std::string& content_length = "");

}  // namespace retrystorm::http
