// The server's transport (docs/http-api.md, "Security model"): one deadline
// for a whole request and one for its answer (DeadlineStream), caps on the
// connections open at once and from one client, eviction of idle ones, and
// refusals answered at accept time. Built on cpp-httplib's Server.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "server/server.hpp"

namespace retrystorm::http {

// An httplib::Server on this transport.
std::unique_ptr<httplib::Server> hardened_server(const ServerLimits& limits);
// httplib listens with a backlog of 5: after bind_to_port, listening again
// with a wide one (Linux only changes the backlog). `server` from hardened_server().
void widen_backlog(httplib::Server& server);

// What the transport and the handlers tell each other about the request the
// calling thread serves.
// Set on the thread that serves a request: it ended in an error whose body may
// be unread (close the connection), or its time ran out (answer 408).
extern thread_local bool t_close_after;
extern thread_local bool t_late;
extern thread_local bool t_head_too_large;  // the headers passed kMaxHeadBytes or kMaxHeadLines
extern thread_local bool t_answer_late;     // the answer passed the response deadline
// A run's memory goes back to the system once it is answered (after the answer
// is written, off the client's wait), not kept by the allocator of whichever
// of the many connection threads served it.
extern thread_local bool t_trim_after;

// The socket of the request this thread serves (-1: none).
extern thread_local int t_client_socket;

// The connection counts as busy (not idle) while its request is handled.
void mark_busy();
// True once the client of `sock` has closed its side (polled by long runs).
bool client_gone(int sock);
// The 408 answer's message for a request past its deadline.
std::string late_message(const ServerLimits& limits);

}  // namespace retrystorm::http
