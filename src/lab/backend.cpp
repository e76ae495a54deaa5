#include "lab/backend.hpp"

#include <cmath>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "lab/asio.hpp"
#include "lab/caller.hpp"
#include "lab/clock.hpp"
#include "lab/grpc_layer.hpp"
#include "lab/http.hpp"

namespace retrystorm::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

void BackendSeries::resize(size_t n) {
  for (const BackendField& f : kBackendFields) (this->*f.member).assign(n, 0.0);
}

namespace {

// The give-up instant of an attempt whose caller sent no timeout.
constexpr double kNoGiveUp = 1e300;

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  asio::streambuf buffer;
  char probe = 0;        // a read while the attempt waits: its end is the caller leaving
  std::string answer;    // the answer being written
  double give_up_s = 0;  // the waiting attempt's give-up instant (Job::deadline_s)
  bool closed = false;   // the caller left; the answer goes nowhere
};
using ConnectionPtr = std::shared_ptr<Connection>;

// An attempt at the server: queued, then in service on a slot. It came
// over HTTP (connection) or gRPC (grpc).
struct Job {
  ConnectionPtr connection;
  GrpcAttemptPtr grpc;
  double arrival_s = 0;
  double deadline_s = 0;   // when its caller gives up
  double work_left_s = 0;  // service left at full rate
  double since_s = 0;      // virtual instant work_left_s was last updated
  double finish_s = 0;     // virtual finish at the current rate
  // In a chain: what the attempt is to the user request (the path headers).
  double path_give_up_s = 0;
  bool path_first = true;
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
        t0_(steady_of_unix_ms(o.t0_unix_ms)),
        bins_(bin_count(o.horizon_s, o.bin_s)),
        steps_(io),
        stalls_(bins_, o.bin_s) {
    series_.resize(bins_);
    for (const auto& f : kChainFields) (chain_.*f.member).assign(bins_, 0.0);
    if (!proxy()) service_s_ = o.slots / o.capacity_per_s;
    if (o.call)
      caller_ = std::make_unique<HttpCaller>(
          io, CallerOptions{o.call_port, *o.call, true, 0, t0_, o.bin_s, o.call_seed, ""});
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  int grpc_port() const { return grpc_ ? grpc_->port() : 0; }
  void start() {
    if (o_.grpc)
      grpc_ = std::make_unique<GrpcListener>(
          io_, [this](GrpcAttemptPtr a) { on_grpc(a); },
          [this](GrpcAttemptPtr a) { on_grpc_cancel(a); });
    accept();
    schedule_rate_change(o_.incident_start_s);
    schedule_tick(0);
    if (caller_) schedule_step(0);
  }
  nlohmann::json report() const;
  // Answers every gRPC call still open (the run ends), then stops the listener.
  void close_grpc();

 private:
  double now_s() const { return seconds_since(t0_); }
  bool proxy() const { return o_.capacity_per_s <= 0; }
  size_t bin_of(double t) const { return bin_index(t, o_.bin_s, bins_); }
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
  void on_grpc(const GrpcAttemptPtr& a);
  void on_grpc_cancel(const GrpcAttemptPtr& a);
  void caller_left(double give_up_s, double at_s);
  void admit(const JobPtr& j, const std::string& id, double t);
  void count_attempt(const std::string& id, double t);
  void shed_expired(double t);
  void start_next(double t);
  void schedule_finish(const JobPtr& j);
  void finish(const JobPtr& j);
  void forward(const JobPtr& j);
  void schedule_step(int step);
  void count_failed(double t) {
    if (counted(t)) chain_.failed[bin_of(t)] += 1;
  }
  void respond(ConnectionPtr c, int status);
  void answer(const JobPtr& j, int http_status);
  void schedule_rate_change(double t);
  void change_rate(double t);
  void schedule_tick(size_t bin);

  asio::io_context& io_;
  BackendOptions o_;
  tcp::acceptor acceptor_;
  asio::steady_timer tick_, rate_timer_, accept_pause_;
  Clock::time_point t0_;
  size_t bins_ = 0;
  asio::steady_timer steps_;  // the call's budget counts steps
  std::unique_ptr<HttpCaller> caller_;
  double calls_this_step_ = 0;
  unsigned long long next_call_ = 0;
  ChainSeries chain_;
  BinLateness stalls_;  // worst lateness per bin: where the machine stalled
  double service_s_ = 0;
  double factor_ = 1;
  std::deque<JobPtr> queue_;
  std::vector<JobPtr> in_service_;
  double slot_free_s_ = 0;             // virtual instant the last finish freed a slot
  std::vector<uint16_t> attempts_of_;  // arrivals per numeric request id
  BackendSeries series_;
  LatenessLog lateness_;
  double requests_ = 0;
  std::unique_ptr<GrpcListener> grpc_;
  bool closing_ = false;
  LatenessLog transit_;  // gRPC: call start to the first attempt's arrival
  // How long before the backend's give-up instant for an attempt the caller's
  // leaving reached it (gRPC: the cancellation; HTTP: the connection closed);
  // below zero: after it.
  LatenessLog give_up_lead_{true};
  // Served before the caller's give-up instant, after the caller had left.
  double served_after_leave_ = 0;
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
  c->socket.async_read_some(asio::buffer(&c->probe, 1),
                            [this, c](boost::system::error_code ec, size_t) {
                              if (ec == asio::error::operation_aborted) return;
                              caller_left(c->give_up_s, now_s());
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
  auto j = std::make_shared<Job>();
  j->connection = c;
  double timeout_ms = std::atof(head.header(kTimeoutHeader).c_str());
  const std::string& give_up_us = head.header(kGiveUpHeader);
  j->deadline_s = !give_up_us.empty() ? std::atof(give_up_us.c_str()) / 1e6
                  : timeout_ms > 0    ? t + timeout_ms / 1000
                                      : kNoGiveUp;
  const std::string& path_give_up = head.header(kPathGiveUpHeader);
  j->path_give_up_s = path_give_up.empty() ? j->deadline_s : std::atof(path_give_up.c_str()) / 1e6;
  j->path_first = head.header(kPathFirstHeader) == "1";
  admit(j, head.header(kRequestHeader), t);
}

// Over gRPC the caller gives up at the first of the call's deadline (sent
// by gRPC as grpc-timeout) and the attempt's own timeout. C-core runs
// perAttemptRecvTimeout as a timer of its own and sends only the call's
// deadline (src/core/ext/filters/client_channel/retry_filter.cc,
// RetryFilter::CallData::CallAttempt::CallAttempt starts the timer), so the
// attempt's timeout travels in metadata, as the HTTP header does.
void Backend::on_grpc(const GrpcAttemptPtr& a) {
  if (closing_) return a->answer(kGrpcUnavailable);
  // Stamped when gRPC handed it over, not after the hop to this loop; never
  // before the last finish, so a slot is not used twice.
  double t = std::max(slot_free_s_, std::min(now_s(), seconds_since(t0_, a->arrived)));
  auto j = std::make_shared<Job>();
  j->grpc = a;
  if (!a->retry) transit_.add(a->transit_s);
  double give_up = kNoGiveUp;
  if (a->timeout_ms > 0) give_up = a->timeout_ms / 1000;
  if (a->deadline_in_s > 0) give_up = std::min(give_up, a->deadline_in_s);
  j->deadline_s = t + give_up;
  a->give_up_s = j->deadline_s;
  admit(j, a->request_id, t);
}

void Backend::on_grpc_cancel(const GrpcAttemptPtr& a) {
  caller_left(a->give_up_s, seconds_since(t0_, a->cancelled_at));
}

// The caller's leaving reached the backend at `at_s`: how long before the
// backend's own give-up instant (an attempt without a timeout has none).
void Backend::caller_left(double give_up_s, double at_s) {
  if (give_up_s > 0 && give_up_s < kNoGiveUp) give_up_lead_.add(give_up_s - at_s);
}

void Backend::admit(const JobPtr& j, const std::string& id, double t) {
  ++requests_;
  count_attempt(id, t);
  if (!j->path_first && counted(t)) chain_.path_retries[bin_of(t)] += 1;
  j->arrival_s = t;
  j->work_left_s = service_s_;
  shed_expired(t);
  if (!proxy() && o_.queue_limit > 0 && static_cast<double>(queue_.size()) >= o_.queue_limit &&
      static_cast<int>(in_service_.size()) >= o_.slots) {
    if (counted(t)) series_.rejected[bin_of(t)] += 1;
    count_failed(t);
    return answer(j, 503);
  }
  if (j->connection) {
    j->connection->give_up_s = j->deadline_s;
    watch(j->connection);
  }
  if (proxy()) return forward(j);  // a proxy makes its call at once
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
    answer(queue_.front(), 503);  // nobody reads it; frees the connection
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
  slot_free_s_ = std::max(slot_free_s_, t);
  lateness_.add(now_s() - t);
  stalls_.add(t, now_s());
  in_service_.erase(std::find(in_service_.begin(), in_service_.end(), j));
  // On time: before the caller's give-up instant as the backend knows it, and
  // the caller has not told it otherwise (closed or cancelled, e.g. a timer
  // that fired before the instant the backend counts by).
  bool left = j->grpc ? j->grpc->cancelled : j->connection && j->connection->closed;
  if (t <= j->deadline_s && left) ++served_after_leave_;
  if (counted(t))
    (t <= j->deadline_s && !left ? series_.goodput : series_.served_late)[bin_of(t)] += 1;
  // docs/lab.md, "A chain of services": late for the user when any caller
  // above had given up.
  if (counted(t) && (t > j->path_give_up_s || left)) chain_.path_late[bin_of(t)] += 1;
  if (caller_)
    forward(j);  // served for nobody: its call goes on all the same, as in the model
  else
    answer(j, 200);
  start_next(t);
}

// The attempt's call to the next service; its answer is the call's outcome.
void Backend::forward(const JobPtr& j) {
  calls_this_step_ += 1;
  CallContext c;
  c.id = next_call_++;
  c.start_s = now_s();  // a call's own deadline counts from when it is made, as in the model
  c.path_first = j->path_first;
  c.path_give_up_s = j->path_give_up_s;
  caller_->call(c, [this, j](bool ok) {
    if (!ok) count_failed(now_s());
    answer(j, ok ? 200 : 503);
  });
}

// The call's budget is told the calls made in the previous step, as each
// edge's is in the model (docs/graph.md).
void Backend::schedule_step(int step) {
  double t = step * o_.call->step_s;
  if (t >= o_.horizon_s) return;
  steps_.expires_at(at(t0_, t));
  steps_.async_wait([this, step](boost::system::error_code ec) {
    if (ec) return;
    caller_->begin_step(calls_this_step_);
    calls_this_step_ = 0;
    schedule_step(step + 1);
  });
}

// 200 is gRPC's OK; 503 (queue full, or shed) its UNAVAILABLE, the code
// gRPC's retryableStatusCodes name for a server that cannot serve now.
void Backend::answer(const JobPtr& j, int http_status) {
  if (j->grpc) return j->grpc->answer(http_status == 200 ? kGrpcOk : kGrpcUnavailable);
  respond(j->connection, http_status);
}

// Every gRPC call must be answered before the server can shut down (the
// callback API waits for Finish); calls that arrive from now on are answered
// at once, uncounted: the run is over.
void Backend::close_grpc() {
  if (!grpc_) return;
  closing_ = true;
  grpc_->close();
  for (auto& j : queue_) answer(j, 503);
  for (auto& j : in_service_) answer(j, 503);
}

void Backend::respond(ConnectionPtr c, int status) {
  if (!c || c->closed) return;
  boost::system::error_code ignored;
  c->socket.cancel(ignored);  // ends the watch (watch)
  // Stamped with the instant it leaves, so the caller can time the way back.
  c->answer = status == 200 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                            : "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n";
  c->answer += kAnsweredHeader;
  c->answer += ": " + unix_us_stamp() + "\r\n\r\n";
  if (status == 200) c->answer += "ok";
  asio::async_write(c->socket, asio::buffer(c->answer),
                    [this, c](boost::system::error_code ec, size_t) {
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
    stalls_.add(end, now_s());  // shows a stall with nothing in service too
    shed_expired(end);
    series_.backlog[bin] = static_cast<double>(queue_.size());
    double mid = (bin + 0.5) * o_.bin_s;
    series_.capacity[bin] = o_.capacity_per_s * factor_at(mid) * o_.bin_s;
    schedule_tick(bin + 1);
  });
}

nlohmann::json Backend::report() const {
  TimingError e = lateness_.summary();
  TimingError g = transit_.summary();
  nlohmann::json r = {{"bin_s", o_.bin_s},
                      {"requests", requests_},
                      {"timing_error_s", {{"p50", e.p50_s}, {"p99", e.p99_s}, {"max", e.max_s}}},
                      {"lateness_max_s", stalls_.max_s()},
                      {"served_in_time_after_caller_left", served_after_leave_}};
  for (const BackendField& f : kBackendFields) r[f.name] = series_.*f.member;
  for (const auto& f : kChainFields) r[f.name] = chain_.*f.member;
  if (caller_) {
    const CallerSeries& c = caller_->series();
    r["call"] = {{"first_sent", c.first_sent},
                 {"retries_sent", c.retries_sent},
                 {"gave_up", c.gave_up},
                 {"failed", c.failed},
                 {"budget_denied", c.budget_denied},
                 {"connection_errors", caller_->connection_errors()}};
  }
  TimingError lead = give_up_lead_.summary();
  r["give_up_lead_s"] = {{"p50", lead.p50_s}, {"p99", lead.p99_s}, {"max", lead.max_s}};
  if (o_.grpc) {
    r["grpc_transit_s"] = {{"p50", g.p50_s}, {"p99", g.p99_s}, {"max", g.max_s}};
  }
  return r;
}

}  // namespace

int run_backend(const BackendOptions& o) {
  asio::io_context io(1);
  Backend backend(io, o);
  backend.start();
  std::cout << "listening " << backend.port();
  if (o.grpc) std::cout << " grpc " << backend.grpc_port();
  std::cout << "\n" << std::flush;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) {
    backend.close_grpc();
    io.stop();
  });
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
  // The counts are written; calls handed over after the loop stopped (and
  // cancellations) are answered before gRPC's shutdown waits for them.
  io.restart();
  io.poll();
  backend.close_grpc();
  return 0;
}

}  // namespace retrystorm::lab
