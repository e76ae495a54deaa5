#include "lab/backend.hpp"

#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "lab/asio.hpp"
#include "lab/clock.hpp"
#include "lab/http.hpp"

namespace retrystorm::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

void BackendSeries::resize(size_t n) {
  for (auto* v :
       {&first_attempts, &retries, &goodput, &served_late, &shed, &rejected, &backlog, &capacity})
    v->assign(n, 0.0);
}

namespace {

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  asio::streambuf buffer;
  char probe = 0;       // a read while the attempt waits: its end is the caller leaving
  bool closed = false;  // the caller left; the answer goes nowhere
};
using ConnectionPtr = std::shared_ptr<Connection>;

// An attempt at the server: queued, then in service on a slot.
struct Job {
  ConnectionPtr connection;
  double arrival_s = 0;
  double deadline_s = 0;   // when its caller gives up
  double work_left_s = 0;  // service left at full rate
  double since_s = 0;      // virtual instant work_left_s was last updated
  double finish_s = 0;     // virtual finish at the current rate
  std::unique_ptr<asio::steady_timer> timer;
  unsigned generation = 0;  // a stale timer (rescheduled) does nothing
};
using JobPtr = std::shared_ptr<Job>;

class Backend {
 public:
  Backend(asio::io_context& io, const BackendOptions& o)
      : io_(io),
        o_(o),
        acceptor_(io, tcp::endpoint(asio::ip::address_v4::loopback(), o.port)),
        tick_(io),
        rate_timer_(io),
        accept_pause_(io),
        t0_(steady_of_unix_ms(o.t0_unix_ms)) {
    bins_ = static_cast<size_t>(std::ceil(o.horizon_s / o.bin_s - 1e-9));
    series_.resize(bins_);
    service_s_ = o.slots / o.capacity_per_s;
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  void start() {
    accept();
    schedule_rate_change(o_.incident_start_s);
    schedule_tick(0);
  }
  nlohmann::json report() const;

 private:
  double now_s() const { return seconds_since(t0_); }
  size_t bin_of(double t) const {
    return t < 0 ? 0 : std::min(bins_ - 1, static_cast<size_t>(t / o_.bin_s));
  }
  bool counted(double t) const { return t < o_.horizon_s; }
  double factor_at(double t) const {
    bool in = o_.incident_duration_s > 0 && t >= o_.incident_start_s &&
              t < o_.incident_start_s + o_.incident_duration_s;
    return in ? o_.capacity_factor : 1.0;
  }
  void accept();
  void watch(const ConnectionPtr& c);
  void read_request(ConnectionPtr c);
  void on_request(ConnectionPtr c, const HttpHead& head);
  void count_attempt(const std::string& id, double t);
  void shed_expired(double t);
  void start_next(double t);
  void schedule_finish(const JobPtr& j);
  void finish(const JobPtr& j);
  void respond(ConnectionPtr c, int status);
  void schedule_rate_change(double t);
  void change_rate(double t);
  void schedule_tick(size_t bin);

  asio::io_context& io_;
  BackendOptions o_;
  tcp::acceptor acceptor_;
  asio::steady_timer tick_, rate_timer_, accept_pause_;
  Clock::time_point t0_;
  size_t bins_ = 0;
  double service_s_ = 0;
  double factor_ = 1;
  std::deque<JobPtr> queue_;
  std::vector<JobPtr> in_service_;
  double slot_free_s_ = 0;             // virtual instant the last finish freed a slot
  std::vector<uint16_t> attempts_of_;  // arrivals per numeric request id
  BackendSeries series_;
  LatenessLog lateness_;
  double requests_ = 0;
};

void Backend::accept() {
  auto c = std::make_shared<Connection>(io_);
  acceptor_.async_accept(c->socket, [this, c](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {  // e.g. out of descriptors: try again shortly instead of spinning
      accept_pause_.expires_after(std::chrono::milliseconds(10));
      accept_pause_.async_wait([this](boost::system::error_code e) {
        if (!e) accept();
      });
      return;
    }
    c->socket.set_option(tcp::no_delay(true));
    read_request(c);
    accept();
  });
}

// While an attempt waits, a read on its connection ends when the caller
// closes it (gave up): the descriptor is released at once (a long queue must
// not hold one per abandoned attempt); the work itself stays queued, as the
// model's server does not know the caller left.
void Backend::watch(const ConnectionPtr& c) {
  c->socket.async_read_some(asio::buffer(&c->probe, 1), [c](boost::system::error_code ec, size_t) {
    if (ec == asio::error::operation_aborted) return;
    boost::system::error_code ignored;
    c->socket.close(ignored);
    c->closed = true;
  });
}

void Backend::read_request(ConnectionPtr c) {
  asio::async_read_until(c->socket, c->buffer, "\r\n\r\n",
                         [this, c](boost::system::error_code ec, size_t n) {
                           if (ec) return;  // the caller closed the connection
                           HttpHead head = parse_head(c->buffer, n);
                           on_request(c, head);
                         });
}

void Backend::count_attempt(const std::string& id, double t) {
  char* end = nullptr;
  unsigned long long k = std::strtoull(id.c_str(), &end, 10);
  bool first = true;
  if (end && *end == '\0' && !id.empty() && k < 100'000'000) {
    if (attempts_of_.size() <= k)
      attempts_of_.resize(std::max<size_t>(k + 1, attempts_of_.size() * 2));
    first = attempts_of_[k]++ == 0;
  }
  if (!counted(t)) return;
  (first ? series_.first_attempts : series_.retries)[bin_of(t)] += 1;
}

void Backend::on_request(ConnectionPtr c, const HttpHead& head) {
  double t = now_s();
  ++requests_;
  count_attempt(head.header(kRequestHeader), t);
  auto j = std::make_shared<Job>();
  j->connection = c;
  j->arrival_s = t;
  double timeout_ms = std::atof(head.header(kTimeoutHeader).c_str());
  j->deadline_s = timeout_ms > 0 ? t + timeout_ms / 1000 : 1e300;
  j->work_left_s = service_s_;
  shed_expired(t);
  if (o_.queue_limit > 0 && static_cast<double>(queue_.size()) >= o_.queue_limit &&
      static_cast<int>(in_service_.size()) >= o_.slots) {
    if (counted(t)) series_.rejected[bin_of(t)] += 1;
    return respond(c, 503);
  }
  watch(c);
  queue_.push_back(j);
  start_next(t);
}

// shed_abandoned: waiting attempts whose caller gave up leave the queue. One
// timeout for every attempt keeps deadlines in arrival order, so they are at
// the head.
void Backend::shed_expired(double t) {
  if (!o_.shed_abandoned) return;
  while (!queue_.empty() && queue_.front()->deadline_s < t) {
    double at = queue_.front()->deadline_s;
    if (counted(at)) series_.shed[bin_of(at)] += 1;
    respond(queue_.front()->connection, 503);  // nobody reads it; frees the connection
    queue_.pop_front();
  }
}

// Fills free slots from the queue at virtual instant t.
void Backend::start_next(double t) {
  while (static_cast<int>(in_service_.size()) < o_.slots) {
    shed_expired(t);
    if (queue_.empty()) return;
    JobPtr j = queue_.front();
    queue_.pop_front();
    j->since_s = std::max(t, j->arrival_s);
    j->timer = std::make_unique<asio::steady_timer>(io_);
    in_service_.push_back(j);
    schedule_finish(j);
  }
}

void Backend::schedule_finish(const JobPtr& j) {
  ++j->generation;
  if (factor_ <= 0) return;  // frozen until the rate comes back
  j->finish_s = j->since_s + j->work_left_s / factor_;
  j->timer->expires_at(at(t0_, j->finish_s));
  j->timer->async_wait([this, j, g = j->generation](boost::system::error_code ec) {
    if (!ec && g == j->generation) finish(j);
  });
}

void Backend::finish(const JobPtr& j) {
  double t = j->finish_s;
  lateness_.add(now_s() - t);
  in_service_.erase(std::find(in_service_.begin(), in_service_.end(), j));
  if (counted(t)) (t <= j->deadline_s ? series_.goodput : series_.served_late)[bin_of(t)] += 1;
  respond(j->connection, 200);
  start_next(t);
}

void Backend::respond(ConnectionPtr c, int status) {
  if (!c || c->closed) return;
  boost::system::error_code ignored;
  c->socket.cancel(ignored);  // ends the watch (watch)
  auto text =
      std::make_shared<std::string>(status == 200 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                                                  : "HTTP/1.1 503 Service Unavailable\r\n"
                                                    "Content-Length: 0\r\n\r\n");
  asio::async_write(c->socket, asio::buffer(*text),
                    [this, c, text](boost::system::error_code ec, size_t) {
                      if (!ec) read_request(c);  // keep-alive: the next attempt
                    });
}

void Backend::schedule_rate_change(double t) {
  if (o_.incident_duration_s <= 0 || o_.capacity_factor == 1) return;
  rate_timer_.expires_at(at(t0_, t));
  rate_timer_.async_wait([this, t](boost::system::error_code ec) {
    if (ec) return;
    change_rate(t);
    if (t < o_.incident_start_s + o_.incident_duration_s)
      schedule_rate_change(o_.incident_start_s + o_.incident_duration_s);
  });
}

// Work in service keeps what it has done and goes on at the new rate.
void Backend::change_rate(double t) {
  double next = factor_at(t);
  for (auto& j : in_service_) {
    double from = std::max(j->since_s, 0.0);
    if (t > from) j->work_left_s = std::max(0.0, j->work_left_s - (t - from) * factor_);
    j->since_s = std::max(t, j->since_s);
  }
  factor_ = next;
  for (auto& j : in_service_) schedule_finish(j);
}

void Backend::schedule_tick(size_t bin) {
  if (bin >= bins_) return;
  double end = (bin + 1) * o_.bin_s;
  tick_.expires_at(at(t0_, end));
  tick_.async_wait([this, bin, end](boost::system::error_code ec) {
    if (ec) return;
    shed_expired(end);
    series_.backlog[bin] = static_cast<double>(queue_.size());
    double mid = (bin + 0.5) * o_.bin_s;
    series_.capacity[bin] = o_.capacity_per_s * factor_at(mid) * o_.bin_s;
    schedule_tick(bin + 1);
  });
}

nlohmann::json Backend::report() const {
  TimingError e = lateness_.summary();
  return {{"bin_s", o_.bin_s},
          {"requests", requests_},
          {"timing_error_s", {{"p50", e.p50_s}, {"p99", e.p99_s}, {"max", e.max_s}}},
          {"first_attempts", series_.first_attempts},
          {"retries", series_.retries},
          {"goodput", series_.goodput},
          {"served_late", series_.served_late},
          {"shed", series_.shed},
          {"rejected", series_.rejected},
          {"backlog", series_.backlog},
          {"capacity", series_.capacity}};
}

}  // namespace

int run_backend(const BackendOptions& o) {
  asio::io_context io(1);
  Backend backend(io, o);
  backend.start();
  std::cout << "listening " << backend.port() << "\n" << std::flush;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) { io.stop(); });
  asio::steady_timer limit(io);
  limit.expires_at(at(steady_of_unix_ms(o.t0_unix_ms), o.horizon_s + 60));
  limit.async_wait([&](boost::system::error_code ec) {
    if (!ec) io.stop();
  });
  io.run();
  if (!o.out.empty()) {
    std::ofstream f(o.out + ".tmp");
    f << backend.report().dump() << "\n";
    f.close();
    std::rename((o.out + ".tmp").c_str(), o.out.c_str());
  }
  return 0;
}

}  // namespace retrystorm::lab
