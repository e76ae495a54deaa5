#include "server/guard.hpp"

#include <algorithm>

#include "server/json_answer.hpp"
#include "server/routes.hpp"

namespace retrystorm::http {

namespace {

bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// What a POST's headers must say before its body is read.
std::optional<Refusal> body_refusal(const httplib::Request& req, const ServerLimits& limits) {
  std::string type = lower(req.get_header_value("Content-Type"));
  type = type.substr(0, type.find(';'));
  type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
  if (type != "application/json")
    return Refusal{415,
                   "Content-Type: '" + clip(req.get_header_value("Content-Type")) +
                       "' is not accepted; send the body as JSON with Content-Type: "
                       "application/json",
                   ""};
  std::string encoding = lower(req.get_header_value("Content-Encoding"));
  if (!encoding.empty() && encoding != "identity")
    return Refusal{
        415, "Content-Encoding: '" + clip(encoding) + "' is not accepted; send plain JSON", ""};
  std::string length = req.get_header_value("Content-Length");
  for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i)
    if (req.get_header_value("Content-Length", i) != length)  // RFC 9112, 6.3
      return Refusal{400, "Content-Length: given twice with different values", ""};
  if (req.has_header("Transfer-Encoding")) {
    // httplib reads the first of several: a second coding would go unread.
    if (req.get_header_value_count("Transfer-Encoding") > 1)
      return Refusal{400, "Transfer-Encoding: given more than once; send one, 'chunked'", ""};
    if (lower(req.get_header_value("Transfer-Encoding")) != "chunked" || !length.empty())
      return Refusal{400, "Transfer-Encoding: only 'chunked', and without Content-Length", ""};
    return std::nullopt;  // the limit is checked while reading (read_body)
  }
  if (length.empty())
    return Refusal{411, "Content-Length: missing; send the length or a chunked body", ""};
  if (length.empty() || length.size() > 18 || !all_digits(length))
    return Refusal{400, "Content-Length: '" + clip(length) + "' is not a number of bytes", ""};
  if (std::stoull(length) > limits.max_body_bytes)
    return Refusal{413,
                   "body: " + length + " bytes; the limit is " +
                       std::to_string(limits.max_body_bytes) + " bytes",
                   ""};
  return std::nullopt;
}

// "name:port", "[::1]:port" or "name" into name and port ("" when none or
// not a number, which then matches nothing).
std::pair<std::string, std::string> split_host(const std::string& h) {
  size_t colon = h.rfind(':');
  if (colon == std::string::npos || (h.front() == '[' && h.back() == ']')) return {h, ""};
  std::string p = h.substr(colon + 1);
  return {h.substr(0, colon), !p.empty() && p.size() <= 5 && all_digits(p) ? p : "x"};
}

}  // namespace

HostRules::HostRules(const std::string& bound, int port, const std::vector<std::string>& extra)
    : port_(std::to_string(port)) {
  for (std::string name : {bound, std::string("localhost"), std::string("127.0.0.1")}) {
    if (name.find(':') != std::string::npos && name.front() != '[') name = "[" + name + "]";
    names_.insert(lower(name));
  }
  for (const auto& e : extra) {
    if (e.empty()) continue;
    auto [name, p] = split_host(lower(e));
    if (p.empty())
      names_.insert(name);
    else
      with_port_.insert(name + ":" + p);
  }
}

bool HostRules::host_ok(const std::string& host) const {
  if (host.empty()) return false;
  auto [name, p] = split_host(lower(host));
  return matches(name, p.empty() ? port_ : p);
}

bool HostRules::origin_ok(const std::string& origin) const {
  std::string o = lower(origin);
  if (o.rfind("http://", 0) != 0 || o.find('/', 7) != std::string::npos) return false;
  if (o.size() == 7) return false;
  auto [name, p] = split_host(o.substr(7));
  return matches(name, p.empty() ? "80" : p);
}

std::string HostRules::allowed() const {
  std::string text;
  for (const auto& n : names_) text += (text.empty() ? "" : ", ") + n + ":" + port_;
  for (const auto& h : with_port_) text += ", " + h;
  return text;
}

bool HostRules::matches(const std::string& name, const std::string& p) const {
  return (names_.count(name) && p == port_) || with_port_.count(name + ":" + p);
}

std::optional<Refusal> refusal_of(const httplib::Request& req, const HostRules& hosts,
                                  const ServerLimits& limits) {
  std::string host = req.get_header_value("Host");
  if (req.get_header_value_count("Host") != 1 || !hosts.host_ok(host))
    return Refusal{403,
                   "Host: '" + clip(host) + "' is not this server; allowed: " + hosts.allowed() +
                       " (serve --allow-host NAME adds one)",
                   ""};
  if (req.has_header("Origin") && (req.get_header_value_count("Origin") != 1 ||
                                   !hosts.origin_ok(req.get_header_value("Origin"))))
    return Refusal{403,
                   "Origin: '" + clip(req.get_header_value("Origin")) +
                       "' is not this server's page; requests from other sites are refused",
                   ""};
  const Route* route = route_of(req.path);
  bool get = route && route->method == Method::get, post = route && route->method == Method::post;
  bool reading = req.method == "GET" || req.method == "HEAD";
  // Known API paths with the wrong method answer 405, not 404.
  if (get && !reading) return Refusal{405, req.method + " is not allowed here", "GET"};
  if (post && req.method != "POST")
    return Refusal{405, req.method + " is not allowed here", "POST"};
  if (!get && !post && !reading) {  // only the page's files remain, and they are GETs
    bool api = req.path == "/api" || req.path.rfind("/api/", 0) == 0;
    if (api) return Refusal{404, "no such path: " + clip(req.path), ""};
    return Refusal{405, req.method + " is not allowed here: the page's files are read with GET",
                   "GET"};
  }
  return post ? body_refusal(req, limits) : std::nullopt;
}

// cpp-httplib 0.11.4 checks payload_max_length against Content-Length only,
// and reads a chunked body whole: the limit is checked here as the body comes.
bool read_body(const httplib::ContentReader& reader, size_t max, std::string& body,
               httplib::Response& res, const std::string& content_length) {
  bool too_big = false;
  bool ok = reader([&](const char* data, size_t n) {
    if (n > max - body.size()) {
      too_big = true;
      return false;  // stops reading
    }
    body.append(data, n);
    return true;
  });
  if (ok) return true;
  if (too_big)
    send_json(res, 413,
              {{"error", "body: larger than the limit of " + std::to_string(max) + " bytes"}});
  else if (!content_length.empty())
    send_json(res, 400,
              {{"error", "body: shorter than its Content-Length (" + clip(content_length, 20) +
                             " bytes): the connection ended or stalled after " +
                             std::to_string(body.size()) + " bytes"}});
  else
    send_json(res, 400, {{"error", "body: incomplete or malformed chunked encoding"}});
  return false;
}

}  // namespace retrystorm::http
