#include "server/transport.hpp"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <thread>
#include <utility>

#include "model/keys.hpp"
#include "server/json_answer.hpp"

namespace retrystorm::http {

using nlohmann::json;

// Set on the thread that serves a request: it ended in an error whose body may
// be unread (close the connection), or its time ran out (answer 408).
thread_local bool t_close_after = false;
thread_local bool t_late = false;
thread_local bool t_head_too_large = false;  // the headers passed kMaxHeadBytes or kMaxHeadLines
thread_local bool t_answer_late = false;     // the answer passed the response deadline
// A run's memory goes back to the system once it is answered (after the answer
// is written, off the client's wait), not kept by the allocator of whichever
// of the many connection threads served it.
thread_local bool t_trim_after = false;

namespace {
// What the allocator holds from the system, in bytes.
size_t held_bytes() {
  struct mallinfo2 m = ::mallinfo2();
  return m.arena + m.hblkhd;
}

// Freed memory goes back to the system when the run took more from it than a
// small run needs, or when much lies free. Trimming after every answer made
// the next small run fault its pages in again: a redraw of the page paid
// 15 ms for it on a 0.3 MB answer.
void trim_if_grown(size_t held_before) {
  constexpr size_t kGrownBytes = size_t{2} << 20;
  constexpr size_t kFreeBytes = size_t{256} << 20;
  struct mallinfo2 m = ::mallinfo2();
  if (m.arena + m.hblkhd > held_before + kGrownBytes || m.fordblks > kFreeBytes) ::malloc_trim(0);
}
}  // namespace

thread_local int t_client_socket = -1;

namespace {

// What a request's line and headers may take: far more than any browser or
// client sends, and little enough that a flood of header lines costs nothing.
constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr int kMaxHeadLines = 200;
// httplib (Debian's, built with its default) refuses a line longer than
// this with a bare 400: the scanner refuses it first, as a 431 that says so.
constexpr size_t kMaxHeadLineBytes = CPPHTTPLIB_HEADER_MAX_LENGTH - 2;  // its CR LF aside

// Finds where a request's head ends (the empty line) in the bytes read, and
// counts the head's bytes and lines on the way.
class HeadScanner {
 public:
  void reset() { *this = HeadScanner{}; }
  // False once the head is over its limits.
  bool scan(const char* data, size_t n) {
    for (size_t i = 0; i < n && !done_; ++i) {
      ++bytes_;
      if (data[i] == '\n') {
        done_ = line_ == 0 && lines_ > 0;  // the empty line after the request line
        lines_ += line_ > 0;
        line_ = 0;
      } else if (data[i] != '\r') {
        ++line_;
        // Header lines: a long request line is httplib's 414, which says so.
        if (lines_ > 0) longest_ = std::max(longest_, line_);
      }
    }
    return bytes_ <= kMaxHeadBytes && lines_ <= kMaxHeadLines && longest_ <= kMaxHeadLineBytes;
  }

 private:
  size_t bytes_ = 0, line_ = 0, longest_ = 0;
  int lines_ = 0;
  bool done_ = false;
};

// Reads with one deadline for the whole request, headers and body, so that a
// client trickling a byte at a time cannot hold a thread longer; writes time
// out per write. Replaces httplib's SocketStream, whose timeout is per read.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int sock, int write_timeout_ms, double response_deadline_s)
      : sock_(sock), write_ms_(write_timeout_ms), response_s_(response_deadline_s) {}

  void start_request(double deadline_s) {
    written_ = 0;
    head_.reset();
    deadline_ = Clock::now() + seconds(deadline_s);
  }
  // Whether a request starts within `idle_s`.
  bool wait_for_request(double idle_s) {
    return off_ < len_ || wait(POLLIN, static_cast<int>(idle_s * 1000));
  }
  bool is_readable() const override {
    if (off_ < len_) return true;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (left > 0 && wait(POLLIN, static_cast<int>(left))) return true;
    t_late = t_late || Clock::now() >= deadline_;
    return false;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_) {
      if (!is_readable()) return -1;
      ssize_t n;
      while ((n = ::recv(sock_, buf_.data(), buf_.size(), 0)) < 0 && errno == EINTR) {
      }
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t k = std::min(size, len_ - off_);
    if (!head_.scan(buf_.data() + off_, k)) {
      t_head_too_large = true;
      return -1;
    }
    std::memcpy(ptr, buf_.data() + off_, k);
    off_ += k;
    return static_cast<ssize_t>(k);
  }
  // Each write waits at most the write timeout, and the whole answer at most
  // the response deadline, so that a client reading a byte now and then
  // cannot pin a large answer in memory.
  bool is_writable() const override {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(answer_until_ - Clock::now()).count();
    bool writable = left > 0 && wait(POLLOUT, static_cast<int>(std::min<long>(left, write_ms_)));
    // Cut off with part of the answer sent (the deadline, or a reader that
    // stopped for longer than the write timeout): reset, so that the client
    // cannot take the part for the whole, as an ordinary close would let it.
    t_answer_late = t_answer_late || (!writable && (Clock::now() >= answer_until_ || written_ > 0));
    return writable;
  }
  // All of `size` or -1: httplib writes an answer's body in one call and
  // takes any count as done. Never blocks in the kernel, where a send of a
  // large answer to a slow reader would wait for all of it, past any deadline.
  ssize_t write(const char* ptr, size_t size) override {
    if (t_head_too_large) return -1;  // answered 431 by serve_requests, not by httplib
    if (written_ == 0) answer_until_ = Clock::now() + seconds(response_s_);
    for (size_t sent = 0; sent < size;) {
      if (!is_writable()) return -1;
      ssize_t n = ::send(sock_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
      if (n > 0) {
        sent += static_cast<size_t>(n);
        written_ += static_cast<size_t>(n);
      }
    }
    return static_cast<ssize_t>(size);
  }
  // An answer of the server's own, for a request httplib could not read.
  void write_raw(const std::string& answer) {
    bool head_too_large = std::exchange(t_head_too_large, false);
    write(answer.data(), answer.size());
    t_head_too_large = head_too_large;
  }
  size_t written() const { return written_; }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  static void address_of(int sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    auto* sa = reinterpret_cast<sockaddr*>(&a);
    if ((peer ? ::getpeername(sock, sa, &len) : ::getsockname(sock, sa, &len)) != 0) return;
    char text[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  bool wait(short events, int ms) const {
    pollfd p{sock_, events, 0};
    int r;
    while ((r = ::poll(&p, 1, std::max(ms, 0))) < 0 && errno == EINTR) {
    }
    return r > 0 && !(p.revents & POLLNVAL) && (events != POLLOUT || (p.revents & POLLOUT));
  }
  int sock_;
  int write_ms_;
  double response_s_;
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point answer_until_ = Clock::now();
  HeadScanner head_;
  std::array<char, 16384> buf_{};
  size_t off_ = 0, len_ = 0;
  size_t written_ = 0;  // bytes of the current request's answer
};

// An answer written without httplib: for a request it never saw whole.
std::string raw_answer(int status, const char* reason, const std::string& message,
                       bool busy = false) {
  json answer{{"error", message}};
  if (busy) answer["busy"] = true;  // worth the same request again after Retry-After
  std::string body = answer.dump(-1, ' ', false, json::error_handler_t::replace);
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n" +
         (status == 503 ? "Retry-After: 1\r\n" : "") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Ends a connection. After an error the client may still be sending a body:
// read and drop it for a moment first, or closing with unread bytes resets
// the connection and the client never sees the answer.
void close_connection(int sock, bool linger, int linger_ms) {
  if (linger) {
    ::shutdown(sock, SHUT_WR);
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(linger_ms);
    char buf[16384];
    for (size_t total = 0; total < (16u << 20);) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{sock, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      ssize_t n = ::recv(sock, buf, sizeof buf, 0);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

// Connections open now, per client address and in all. At a cap, a new
// connection takes the place of the one that has waited longest without
// sending a whole request, once that one has waited kSlowAfter: slow and idle
// clients from one address (everything on loopback is one) cannot shut out a
// client that sends its request at once.
class Connections {
 public:
  struct Entry {
    int sock;
    std::string ip;
    std::chrono::steady_clock::time_point waiting_since;
    bool waiting = true;  // no whole request read yet (or idle between requests)
    bool counted = true;  // against the caps; false once it made room for another
  };
  static constexpr std::chrono::milliseconds kSlowAfter{1000};

  // The new connection's entry, or nullptr when it is refused.
  Entry* admit(int sock, const std::string& ip, const ServerLimits& limits) {
    std::lock_guard lock(mutex_);
    if (over_cap(ip, limits) && !make_room(ip, limits)) return nullptr;
    count(ip, +1);
    return &*open_.insert(open_.end(), Entry{sock, ip, std::chrono::steady_clock::now()});
  }
  // Before the socket is closed, so that make_room never touches a number
  // the system has since given to a new connection.
  void leave(Entry* e) {
    std::lock_guard lock(mutex_);
    if (e->counted) count(e->ip, -1);
    open_.remove_if([e](const Entry& x) { return &x == e; });
  }
  void set_waiting(Entry* e, bool waiting) {
    std::lock_guard lock(mutex_);
    e->waiting = waiting;
    e->waiting_since = std::chrono::steady_clock::now();
  }

 private:
  void count(const std::string& ip, int delta) {
    total_ += delta;
    if ((per_client_[ip] += delta) <= 0) per_client_.erase(ip);
  }
  bool over_cap(const std::string& ip, const ServerLimits& limits) const {
    auto it = per_client_.find(ip);
    return total_ >= limits.max_connections ||
           (it != per_client_.end() && it->second >= limits.max_connections_per_client);
  }
  // Ends the longest-waiting slow connection that counts against the cap the
  // new one meets: its address's, or any address's when the cap in all is met.
  bool make_room(const std::string& ip, const ServerLimits& limits) {
    bool any = total_ >= limits.max_connections;
    auto now = std::chrono::steady_clock::now();
    Entry* oldest = nullptr;
    for (Entry& e : open_)
      if (e.counted && e.waiting && now - e.waiting_since >= kSlowAfter && (any || e.ip == ip) &&
          (!oldest || e.waiting_since < oldest->waiting_since))
        oldest = &e;
    if (!oldest) return false;
    ::shutdown(oldest->sock, SHUT_RD);  // its thread reads the end and closes it
    oldest->counted = false;
    count(oldest->ip, -1);
    return !over_cap(ip, limits);
  }
  std::mutex mutex_;
  std::list<Entry> open_;
  int total_ = 0;
  std::map<std::string, int> per_client_;
};

// The connection this thread serves (nullptr outside one) and its table.
thread_local Connections::Entry* t_connection = nullptr;
thread_local Connections* t_connections = nullptr;

// httplib's thread pool, with one change: a connection that would wait in
// line for a thread is answered 503 at once by the accepting thread, so a
// flood of idle connections never hides a new client behind it.
class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (busy_ + jobs_.size() < threads_.size()) {
        jobs_.push_back(std::move(fn));
        ready_.notify_one();
        return;
      }
    }
    t_refuse_now = true;  // process_and_close_socket answers 503 without waiting
    fn();
    t_refuse_now = false;
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  static inline thread_local bool t_refuse_now = false;

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
      }
      fn();
      std::lock_guard lock(mutex_);
      --busy_;
    }
  }
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable ready_;
};

// httplib's server with its connection loop replaced: a request deadline, a
// cap on connections, and a thread per open connection (threads that wait on
// sockets are cheap; the expensive work is bounded by the WorkBudget).
class HardenedServer : public httplib::Server {
 public:
  explicit HardenedServer(const ServerLimits& limits) : limits_(limits) {
    // A few threads beyond the cap answer the connections over it.
    size_t threads = static_cast<size_t>(std::max(1, limits.max_connections)) + 8;
    new_task_queue = [threads] { return new ConnectionPool(threads); };
  }
  // httplib listens with a backlog of 5: a burst of connections (a page
  // opening several at once, or many slow clients) would see SYNs dropped and
  // wait a second each. Listening again on Linux only changes the backlog.
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (ConnectionPool::t_refuse_now) {
      refuse_busy(sock, false);
      return false;
    }
    std::string ip;
    int port = 0;
    DeadlineStream::address_of(sock, true, ip, port);
    Connections::Entry* entry = connections_.admit(sock, ip, limits_);
    if (!entry) {
      refuse_busy(sock, true);
      return false;
    }
    t_answer_late = false;
    bool linger = serve_connection(sock, entry);
    connections_.leave(entry);
    if (t_answer_late) {  // cut off: what the kernel still holds of the answer is dropped too
      linger = false;
      ::linger reset{1, 0};
      ::setsockopt(sock, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      ::close(sock);
      return true;
    }
    close_connection(sock, linger, 1000);
    return true;
  }

  // True when the connection ends on an error whose body may be unread. An
  // allocation that fails while reading or answering ends this connection,
  // never the server.
  bool serve_connection(int sock, Connections::Entry* entry) {
    DeadlineStream strm(sock, static_cast<int>(write_timeout_sec_ * 1000),
                        limits_.response_deadline_s);
    t_client_socket = sock;
    t_connection = entry;
    t_connections = &connections_;
    bool linger = true;
    try {
      linger = serve_requests(strm, entry);
    } catch (const std::bad_alloc&) {
      if (strm.written() == 0) {
        std::string busy = raw_answer(503, "Service Unavailable", "out of memory; retry later");
        ::send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    } catch (...) {
    }
    t_client_socket = -1;
    t_connection = nullptr;
    t_connections = nullptr;
    return linger;
  }

  // httplib's keep-alive loop, with the deadline; true when the connection
  // ends on an error whose body may be unread.
  bool serve_requests(DeadlineStream& strm, Connections::Entry* entry) {
    for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
      connections_.set_waiting(entry, true);
      if (!strm.wait_for_request(limits_.idle_timeout_s)) return false;
      strm.start_request(limits_.request_deadline_s);
      t_close_after = t_late = t_head_too_large = false;
      bool closed = false;
      size_t held_before = held_bytes();
      bool ok = process_request(strm, left == 1, closed, nullptr);
      if (std::exchange(t_trim_after, false)) trim_if_grown(held_before);
      // httplib answers nothing when the request line is late, and 400 (not
      // written: see write) when the headers are over the caps.
      if (t_head_too_large || (t_late && strm.written() == 0)) {
        strm.write_raw(
            t_head_too_large
                ? raw_answer(431, "Request Header Fields Too Large",
                             "headers: more than " + std::to_string(kMaxHeadBytes / 1024) +
                                 " KiB, " + std::to_string(kMaxHeadLines) +
                                 " lines, or a line over " + std::to_string(kMaxHeadLineBytes) +
                                 " bytes; send fewer or shorter headers")
                : raw_answer(408, "Request Timeout", late_message(limits_)));
        return true;
      }
      if (t_close_after) return true;
      if (!ok || closed) return false;
    }
    return false;
  }

  // 503 to a connection over the caps. From the accepting thread (`linger`
  // false) nothing waits: what the client sent is dropped unread first, so
  // that closing sends the answer and an end, not a reset.
  void refuse_busy(int sock, bool linger) const {
    std::string busy =
        raw_answer(503, "Service Unavailable",
                   "too many open connections (the limit is " +
                       std::to_string(limits_.max_connections_per_client) + " per client, " +
                       std::to_string(limits_.max_connections) + " in all); retry shortly",
                   true);
    ::send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (!linger) {
      char drop[16384];
      while (::recv(sock, drop, sizeof drop, MSG_DONTWAIT) > 0) {
      }
    }
    close_connection(sock, linger, 200);
  }

  const ServerLimits& limits_;
  Connections connections_;
};

}  // namespace

std::string late_message(const ServerLimits& limits) {
  return "request: not received within " + to_string(KeyValue{limits.request_deadline_s}) +
         " s (headers and body)";
}

// True once the client has closed its end of the connection: a read would
// return end of file (a pipelined request would be data, not the end).
bool client_gone(int sock) {
  char c;
  ssize_t n = ::recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Called by the handlers once a request is read whole: the connection is no
// longer one that makes room for others.
void mark_busy() {
  if (t_connection) t_connections->set_waiting(t_connection, false);
}

std::unique_ptr<httplib::Server> hardened_server(const ServerLimits& limits) {
  // A fixed threshold: blocks of a megabyte or more (a large run's queues and
  // answer) are the system's own pages, returned as they are freed, on
  // whichever thread's arena. glibc's sliding threshold kept them inside the
  // arenas of the many connection threads, where malloc_trim does not reach
  // the top of a thread's heap.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  return std::make_unique<HardenedServer>(limits);
}

void widen_backlog(httplib::Server& server) {
  static_cast<HardenedServer&>(server).widen_backlog();
}

}  // namespace retrystorm::http
