// Answers as JSON, and client text quoted in them, for every part of the
// server (the guard, the transport's refusals, the handlers).
#pragma once

#include <httplib.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

#include "text/ascii.hpp"
#include "text/printable.hpp"

namespace retrystorm::http {

// Every JSON answer goes through here. Paths and headers can carry any bytes
// (%FF): the replacement handler writes invalid UTF-8 as U+FFFD, so dumping
// never throws.
inline void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Not "application/json": cpp-httplib would brotli-compress it, which costs
  // seconds for a 1 MB answer and nothing is gained on loopback.
  // Moved into the body: set_content would copy it (a run of 200,000 steps
  // answers 90 MB).
  res.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  res.headers.erase("Content-Type");
  res.set_header("Content-Type", "application/json; charset=utf-8");
}

// At most `n` bytes of client text for a message (send_json escapes them).
using retrystorm::clip;  // text/printable.hpp

inline std::string lower(std::string_view s) {
  return text::lower_ascii(s);
}

}  // namespace retrystorm::http
