#include "server/server.hpp"

#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "server/guard.hpp"
#include "server/json_answer.hpp"
#include "server/routes.hpp"
#include "server/transport.hpp"
#include "server/web_assets.hpp"

namespace retrystorm {

using http::clip;
using http::send_json;
using nlohmann::json;

namespace {

std::string content_type(const std::string& file) {
  static const std::map<std::string, std::string> types = {
      {".html", "text/html; charset=utf-8"},
      {".js", "application/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".json", "application/json"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"}};
  auto dot = file.rfind('.');
  auto it = dot == std::string::npos ? types.end() : types.find(file.substr(dot));
  return it == types.end() ? "application/octet-stream" : it->second;
}

int work_slots(const ServerLimits& limits) {
  return limits.max_work > 0 ? limits.max_work
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// One API call under the work budget: a slot (a sweep takes the idle ones
// too, as threads), or 503 with Retry-After when none comes free in time.
void answer_api(const std::string& path, const std::string& body, const ServerLimits& limits,
                WorkBudget& budget, httplib::Response& res) {
  http::mark_busy();
  int held = 0;
  ServerLimits l = limits;
  const http::Route* route = http::route_of(path);
  if (route && route->expensive) {  // runs engines: holds a slot of the work budget
    auto wait = std::chrono::milliseconds(static_cast<long>(limits.work_wait_s * 1000));
    if (!budget.acquire(wait)) {
      res.set_header("Retry-After", "2");
      return send_json(res, 503,
                       {{"error", "busy: " + std::to_string(work_slots(limits)) +
                                      " runs are in progress, the server's limit; retry in a "
                                      "few seconds"},
                        {"busy", true}});
    }
    held = 1 + (path == "/api/sweep" ? budget.acquire_more(work_slots(limits) - 1) : 0);
    l.sweep_threads = static_cast<unsigned>(held);
    if (int sock = http::t_client_socket; sock >= 0)
      l.cancelled = [sock] { return http::client_gone(sock); };
  }
  struct Release {
    WorkBudget& b;
    int& n;
    ~Release() {
      if (n > 0) b.release(n);
    }
  } release{budget, held};
  // Retry-After only where the same request may pass later: a 503 for a run
  // over the deadline (or a client gone) would fail again the same way.
  http::RoutedAnswer a = http::answer_call(path, body, l);
  if (a.retry_after_s > 0) res.set_header("Retry-After", std::to_string(a.retry_after_s));
  send_json(res, a.answer.status, a.answer.body);
  http::t_trim_after = held > 0;
}

// The page: only files embedded at build time; no file system access, so a
// path such as /../etc/passwd can only miss.
void serve_page(const httplib::Request& req, httplib::Response& res) {
  http::mark_busy();
  std::string file = req.path == "/" ? "index.html" : req.path.substr(1);
  const auto& assets = web_assets();
  auto it = assets.find(file);
  if (it == assets.end()) {
    if (req.path.rfind("/api/", 0) == 0 || file.find('.') != std::string::npos || assets.empty())
      return send_json(res, 404, {{"error", "no such path: " + clip(req.path)}});
    it = assets.find("index.html");  // client-side routes fall back to the page
    if (it == assets.end()) return send_json(res, 404, {{"error", "no page built"}});
  }
  res.set_content(std::string(it->second), content_type(it->first));
}

// Errors nobody answered yet, the request deadline, and closing after errors.
void set_error_handlers(httplib::Server& server, const ServerLimits& limits) {
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // What the transport refused before any route saw the request, in words.
    std::string reason = res.status == 413   ? "body: larger than the limit"
                         : res.status == 414 ? "the URI is longer than this server reads"
                         : req.path.empty()
                             ? "the request line is not one this server reads (method " +
                                   clip(req.method, 20) + "; GET and POST are served)"
                             : "HTTP " + std::to_string(res.status);
    send_json(res, res.status,
              {{"error", reason + (req.path.empty() ? "" : " (" + clip(req.path) + ")")}});
  });
  server.set_post_routing_handler([&limits](const httplib::Request& req, httplib::Response& res) {
    if (http::t_late) {
      send_json(res, 408, {{"error", http::late_message(limits)}});
      // The transport's answer had its length set already: this body's it is now.
      if (res.has_header("Content-Length")) {
        res.headers.erase("Content-Length");
        res.set_header("Content-Length", std::to_string(res.body.size()));
      }
    }
    // httplib does not check the CR LF after each chunk of a chunked body:
    // what follows one is not read as the next request.
    if (res.status < 400 && !req.has_header("Transfer-Encoding")) return;
    http::t_close_after = true;
    res.headers.erase("Keep-Alive");
    if (res.get_header_value("Connection") != "close") res.set_header("Connection", "close");
  });
  // Details go to the log, not to the client.
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        auto quoted = [](const std::string& s) {
          return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
        };
        try {
          std::rethrow_exception(ep);
        } catch (const std::bad_alloc&) {
          res.set_header("Retry-After", std::to_string(http::kOutOfMemoryRetryAfterS));
          return send_json(res, 503, {{"error", "out of memory for this request"}});
        } catch (const std::exception& e) {
          std::cerr << "retrystorm: internal error on " << quoted(req.path) << ": "
                    << quoted(e.what()) << std::endl;
        } catch (...) {
          std::cerr << "retrystorm: internal error on " << quoted(req.path) << std::endl;
        }
        send_json(res, 500, {{"error", "internal error (details in the server's log)"}});
      });
}

}  // namespace

// Every address of the host as its loopback one, and an IPv6 literal in
// brackets (RFC 3986), so that the banner's address opens.
std::string page_url(const std::string& host, int port) {
  std::string shown = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host;
  if (size_t zone = shown.find('%'); zone != std::string::npos)
    shown.replace(zone, 1, "%25");  // a zone's "%" written as RFC 6874 asks
  if (shown.find(':') != std::string::npos) shown = "[" + shown + "]";
  return "http://" + shown + ":" + std::to_string(port) + "/";
}

int serve(const std::string& host, int port, const ServerLimits& limits) {
  // Every open connection is a descriptor: take all the system allows, so a
  // flood meets the connection caps, not the descriptor limit.
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  std::unique_ptr<httplib::Server> hardened = http::hardened_server(limits);
  httplib::Server& server = *hardened;
  server.set_payload_max_length(limits.max_body_bytes);
  http::HostRules hosts(host, port, limits.allowed_hosts);
  WorkBudget budget(work_slots(limits));

  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    auto refusal = http::refusal_of(req, hosts, limits);
    if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
    if (!refusal->allow.empty()) res.set_header("Allow", refusal->allow);
    send_json(res, refusal->status, {{"error", refusal->message}});
    return httplib::Server::HandlerResponse::Handled;
  });
  for (const http::Route& r : http::routes()) {
    if (r.method == http::Method::get)
      server.Get(r.path, [&](const httplib::Request& req, httplib::Response& res) {
        answer_api(req.path, "", limits, budget, res);
      });
    else
      server.Post(r.path, [&](const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader) {
        std::string body;
        if (http::read_body(reader, limits.max_body_bytes, body, res,
                            req.get_header_value("Content-Length")))
          answer_api(req.path, body, limits, budget, res);
      });
  }
  server.Get(R"(/.*)", serve_page);
  set_error_handlers(server, limits);

  if (!server.bind_to_port(host, port)) {
    std::cerr << "retrystorm: cannot listen on " << host << ":" << port << "\n";
    return 1;
  }
  http::widen_backlog(server);
  std::cout << "retrystorm explorer: " << page_url(host, port) << std::endl;
  server.listen_after_bind();
  return 0;
}

}  // namespace retrystorm
