// The HTTP side of the scripted server: every request is an attempt, answered
// from the schedule (status, headers, body, delay or hang) and recorded.
// cpp-httplib 0.11 does not tell a handler when its client goes away, so the
// handler finds its own connection's socket (by the two ends' ports) and
// watches it for the peer's close while it delays or hangs.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "scripted_schedule.hpp"

namespace retrystorm::conformance {

namespace {

int socket_port(int fd, bool peer) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0 || addr.sin_family != AF_INET) return -1;
  return ntohs(addr.sin_port);
}

// The accepted socket serving `req`: the one whose local port is ours and whose
// peer port is the client's (unique among live connections on loopback).
int connection_fd(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    if (socket_port(fd, false) == req.local_port && socket_port(fd, true) == req.remote_port)
      return fd;
  }
  return -1;
}

// At stop: cpp-httplib joins its workers, and a worker waiting on an idle
// keep-alive connection (a proxy's pooled connection) would hold the exit for
// its keep-alive timeout. Shutting those sockets down ends the wait at once.
void shut_connections(int local_port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    if (socket_port(fd, false) == local_port && socket_port(fd, true) > 0)
      ::shutdown(fd, SHUT_RDWR);
  }
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// Waits `ms` (forever when negative) unless the client goes away or the
// server stops first.
void wait_answer(double ms, int fd, const std::atomic<bool>& stop) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (ms < 0 || std::chrono::steady_clock::now() < until) {
    if (stop.load() || peer_closed(fd)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Arrival arrival_of(const httplib::Request& req) {
  Arrival a;
  if (req.has_header("x-rs-request")) a.request = req.get_header_value("x-rs-request");
  if (req.has_header("x-rs-attempt"))
    a.announced = req.get_header_value("x-rs-attempt");
  else if (req.has_header("amz-sdk-request"))
    a.announced = req.get_header_value("amz-sdk-request");
  a.method = req.method;
  a.path = req.path;
  return a;
}

void answer(const Answer& a, httplib::Response& res) {
  res.status = a.http_status();
  for (const auto& [name, value] : a.headers) res.set_header(name, value);
  res.set_content(a.body, a.content_type.empty() ? "text/plain" : a.content_type);
}

}  // namespace

// The recorder picks each answer from the schedule (Recorder::begin).
int serve_http(const Schedule& /*schedule*/, Recorder& recorder, int port,
               std::atomic<bool>& stop) {
  httplib::Server server;
  // Hanging attempts hold a worker each; proxies under test open a few dozen at most.
  server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  server.set_keep_alive_max_count(1000);
  auto handle = [&](const httplib::Request& req, httplib::Response& res) {
    Ticket t = recorder.begin(arrival_of(req));
    const Answer& a = *t.answer;
    if (a.hang || a.delay_ms > 0) {
      int fd = connection_fd(req);
      wait_answer(a.hang ? -1 : a.delay_ms, fd, stop);
    }
    answer(a, res);
    recorder.end(t);
  };
  server.Get(".*", handle);
  server.Post(".*", handle);
  server.Put(".*", handle);
  server.Delete(".*", handle);
  server.Patch(".*", handle);
  server.Options(".*", handle);
  int bound = port == 0 ? server.bind_to_any_port("127.0.0.1")
                        : (server.bind_to_port("127.0.0.1", port) ? port : -1);
  if (bound <= 0) {
    std::cerr << "rs_scripted_server: cannot listen on 127.0.0.1:" << port << "\n";
    return 1;
  }
  std::thread watcher([&] {
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    server.stop();
    shut_connections(bound);
  });
  announce_listening(bound);
  server.listen_after_bind();
  stop = true;
  watcher.join();
  return 0;
}

}  // namespace retrystorm::conformance
