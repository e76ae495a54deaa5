#include "lab/generator.hpp"

#include <cmath>
#include <memory>
#include <random>

#include "lab/asio.hpp"
#include "lab/backend.hpp"
#include "lab/grpc_layer.hpp"
#include "lab/http.hpp"
#include "lab/process.hpp"
#include "policies/client_policy.hpp"
#include "policies/retry_state.hpp"

namespace retrystorm::lab {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  asio::streambuf buffer;
};

struct Request {
  unsigned long long id = 0;
  double start_s = 0;
  int attempt = 0;
  bool holds_retry = false;  // a budget slot (envoy_concurrency) until the outcome
  RetryCause cause = RetryCause::timeout;
};
using RequestPtr = std::shared_ptr<Request>;

struct Attempt {
  Attempt(asio::io_context& io, RequestPtr r) : request(std::move(r)), timer(io) {}
  RequestPtr request;
  std::unique_ptr<Connection> connection;
  asio::steady_timer timer;
  bool done = false;
  bool deadline_cut = false;  // the timer is the request's deadline, not the timeout
  bool reused = false;        // on a kept-alive connection the far end may have closed
  double give_up_s = 0;       // when its timer is due (s from time zero)
};
using AttemptPtr = std::shared_ptr<Attempt>;

class Generator {
 public:
  Generator(asio::io_context& io, const GeneratorOptions& o)
      : io_(io),
        o_(o),
        s_(o.scenario),
        policy_(ClientPolicy::of(s_, Engine::agent)),
        retry_(policy_, RetryBudget(policy_, s_.demand.rate_per_s, s_.step_s)),
        rng_(static_cast<uint64_t>(s_.seed)),
        endpoint_(asio::ip::address_v4::loopback(), static_cast<unsigned short>(o.port)),
        t0_(steady_of_unix_ms(o.t0_unix_ms)),
        arrivals_(io),
        steps_(io),
        ticks_(io),
        end_(io),
        bins_(bin_count(s_.horizon_s, o.bin_s)),
        stalls_(bins_, o.bin_s) {
    if (!o.grpc_service_config.empty())
      grpc_ = std::make_unique<GrpcCaller>(io, o.port, o.grpc_service_config);
    for (auto* v : {&r_.failed, &r_.gave_up, &r_.budget_denied, &r_.first_sent, &r_.retries_sent})
      v->assign(bins_, 0.0);
  }
  // retry_ points at policy_: a generator stays where it was built.
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void start();
  GrpcCaller* grpc() { return grpc_.get(); }
  GeneratorResult result() {
    r_.arrival_error = lateness_.summary();
    r_.answer_transit = answer_transit_.summary();
    r_.lateness_max_s = stalls_.max_s();
    return std::move(r_);
  }

 private:
  double now_s() const { return seconds_since(t0_); }
  size_t bin_of(double t) const { return bin_index(t, o_.bin_s, bins_); }
  void add(std::vector<double>& v, double t) {
    if (t >= 0 && t < s_.horizon_s) v[bin_of(t)] += 1;
  }
  double rate_at(double t) const {
    bool in = t >= s_.incident.start_s && t < s_.incident_end_s();
    return s_.demand.rate_per_s * (in ? s_.incident.demand_factor : 1.0);
  }
  double next_gap(double t) {
    double rate = rate_at(t);
    if (rate <= 0) return s_.step_s;
    if (s_.demand.process == DemandProcess::poisson)
      return std::exponential_distribution<double>(rate)(rng_);
    return 1.0 / rate;
  }
  void schedule_arrival(double t);
  void send(const RequestPtr& r);
  void connect(const AttemptPtr& a);
  void call_grpc(const AttemptPtr& a, double patience_s);
  bool stale(const AttemptPtr& a);
  void write(const AttemptPtr& a);
  void read(const AttemptPtr& a);
  void on_answer(const AttemptPtr& a, int status, bool reusable);
  void on_timeout(const AttemptPtr& a);
  void on_failure(const RequestPtr& r, bool timed_out,
                  FailureClass answer = FailureClass::http_503);
  void retry_after(const RequestPtr& r, double delay_s);
  void succeed(const RequestPtr& r);
  void fail(const RequestPtr& r);
  void release(const RequestPtr& r);
  InFlight in_flight() const { return {open_attempts_, held_retries_}; }
  void schedule_step(int step);
  void schedule_tick(int second);

  asio::io_context& io_;
  GeneratorOptions o_;
  const Scenario& s_;
  ClientPolicy policy_;
  RetryState retry_;  // the budget's admission with the policy's decision
  std::mt19937_64 rng_;
  tcp::endpoint endpoint_;
  Clock::time_point t0_;
  asio::steady_timer arrivals_, steps_, ticks_, end_;
  std::vector<std::unique_ptr<Connection>> idle_;
  size_t bins_ = 0;
  BinLateness stalls_;  // worst lateness per bin: where the machine stalled
  unsigned long long next_id_ = 0;
  double open_attempts_ = 0, held_retries_ = 0;
  LatenessLog lateness_;
  LatenessLog answer_transit_{true};  // the backend's answer to its arrival here
  GeneratorResult r_;
  std::unique_ptr<GrpcCaller> grpc_;
};

void Generator::start() {
  schedule_arrival(0);
  schedule_step(0);
  schedule_tick(1);
  end_.expires_at(at(t0_, s_.horizon_s));
  end_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    r_.in_flight = r_.user_requests - r_.succeeded - r_.failed_total;
    io_.stop();
  });
}

void Generator::schedule_arrival(double t) {
  if (t >= s_.horizon_s - 1e-6) return;  // 1/rate summed drifts by ulps
  arrivals_.expires_at(at(t0_, t));
  arrivals_.async_wait([this, t](boost::system::error_code ec) {
    if (ec) return;
    lateness_.add(now_s() - t);
    stalls_.add(t, now_s());
    auto r = std::make_shared<Request>();
    r->id = next_id_++;
    r->start_s = t;
    r_.user_requests += 1;
    send(r);
    // Whole nanoseconds: 1/60 s steps must not drift past the horizon.
    schedule_arrival(std::round((t + next_gap(t)) * 1e9) / 1e9);
  });
}

void Generator::send(const RequestPtr& r) {
  double now = now_s();
  ++r->attempt;
  add(r->attempt == 1 ? r_.first_sent : r_.retries_sent, now);
  auto a = std::make_shared<Attempt>(io_, r);
  double timeout = o_.retries ? policy_.timeout_s() : o_.patience_s;
  if (o_.retries && policy_.deadline_s() > 0) {
    double left = r->start_s + policy_.deadline_s() - now;
    if (left < timeout) timeout = std::max(0.0, left), a->deadline_cut = true;
  }
  open_attempts_ += 1;
  a->give_up_s = now + timeout;
  // Over gRPC the call's own deadline ends it; the timer is a safety net.
  a->timer.expires_at(at(t0_, now + timeout + (grpc_ ? 1.0 : 0.0)));
  a->timer.async_wait([this, a](boost::system::error_code ec) {
    if (!ec) on_timeout(a);
  });
  if (grpc_) return call_grpc(a, timeout);
  if (!idle_.empty()) {
    a->connection = std::move(idle_.back());
    idle_.pop_back();
    a->reused = true;
    return write(a);
  }
  connect(a);
}

void Generator::connect(const AttemptPtr& a) {
  a->reused = false;
  a->connection = std::make_unique<Connection>(io_);
  a->connection->socket.async_connect(endpoint_, [this, a](boost::system::error_code ec) {
    if (a->done) return;
    if (ec) {
      r_.connection_errors += 1;
      return on_answer(a, 0, false);
    }
    a->connection->socket.set_option(tcp::no_delay(true));
    write(a);
  });
}

// One unary call, which the channel's retryPolicy retries; its deadline is
// the caller's patience, as an application sets one on its context.
void Generator::call_grpc(const AttemptPtr& a, double patience_s) {
  auto deadline =
      std::chrono::system_clock::now() + std::chrono::microseconds(std::llround(patience_s * 1e6));
  grpc_->call(std::to_string(a->request->id), std::llround(s_.client.timeout_s * 1000), deadline,
              [this, a](int code, double back_s) {
                if (a->done) return;
                if (!std::isnan(back_s)) answer_transit_.add(back_s);  // any answer, as over HTTP
                on_answer(a, code == kGrpcOk ? 200 : 0, false);
              });
}

// A kept-alive connection the proxy closed while it sat idle (HAProxy's
// timeout http-keep-alive, nginx's keepalive_timeout) fails before anything
// was read: sent again on a new connection, as HTTP clients do; the request
// never reached the server, so it is no retry.
bool Generator::stale(const AttemptPtr& a) {
  if (!a->reused) return false;
  connect(a);
  return true;
}

// As the client (retries), the attempt also carries the instant its timer
// gives up (kGiveUpHeader); behind a proxy the proxy's timer is what counts,
// and the backend has only the relative timeout, as a real server would.
void Generator::write(const AttemptPtr& a) {
  // One string per attempt, appended to (it lives until the write is done).
  auto text = std::make_shared<std::string>("GET / HTTP/1.1\r\nHost: lab\r\n");
  text->append(kRequestHeader).append(": ").append(std::to_string(a->request->id));
  text->append("\r\n").append(kTimeoutHeader).append(": ");
  text->append(std::to_string(std::llround(s_.client.timeout_s * 1000))).append("\r\n");
  if (o_.retries) {
    text->append(kGiveUpHeader).append(": ");
    text->append(std::to_string(std::llround(a->give_up_s * 1e6))).append("\r\n");
  }
  text->append("\r\n");
  asio::async_write(a->connection->socket, asio::buffer(*text),
                    [this, a, text](boost::system::error_code ec, size_t) {
                      if (a->done) return;
                      if (ec && stale(a)) return;
                      if (ec) return on_answer(a, 0, false);
                      read(a);
                    });
}

void Generator::read(const AttemptPtr& a) {
  auto& c = *a->connection;
  asio::async_read_until(
      c.socket, c.buffer, "\r\n\r\n", [this, a](boost::system::error_code ec, size_t n) {
        if (a->done) return;
        if (ec && stale(a)) return;
        if (ec) return on_answer(a, 0, false);
        a->reused = false;  // an answer came: a failure from here on is real
        HttpHead head = parse_head(a->connection->buffer, n);
        if (const std::string& sent = head.header(kAnsweredHeader); !sent.empty())
          answer_transit_.add(seconds_since_stamp(sent));
        const std::string& length = head.header("content-length");
        bool reusable = !length.empty() && head.header("connection") != "close";
        size_t body = length.empty() ? 0 : std::strtoull(length.c_str(), nullptr, 10);
        size_t have = a->connection->buffer.size();
        if (have >= body) {
          a->connection->buffer.consume(body);
          return on_answer(a, head.status(), reusable);
        }
        asio::async_read(a->connection->socket, a->connection->buffer,
                         asio::transfer_exactly(body - have),
                         [this, a, status = head.status(), reusable, body](
                             boost::system::error_code ec2, size_t) {
                           if (a->done) return;
                           a->connection->buffer.consume(body);
                           on_answer(a, ec2 ? 0 : status, reusable && !ec2);
                         });
      });
}

void Generator::on_answer(const AttemptPtr& a, int status, bool reusable) {
  a->done = true;
  open_attempts_ -= 1;
  a->timer.cancel();
  if (reusable && status != 0)
    idle_.push_back(std::move(a->connection));
  else
    a->connection.reset();
  if (status == 200) return succeed(a->request);
  // 429 as such; a lost connection (0) read as a reset; every other error as 503.
  on_failure(a->request, false,
             status == 429 ? FailureClass::http_429
                           : (status == 0 ? FailureClass::reset : FailureClass::http_503));
}

// The caller gives up: the connection is reset (no TIME_WAIT left behind, so
// ports last through an outage) and the server's late answer goes nowhere.
void Generator::on_timeout(const AttemptPtr& a) {
  if (a->done) return;
  a->done = true;
  open_attempts_ -= 1;
  boost::system::error_code ignored;
  if (a->connection) {
    a->connection->socket.set_option(asio::socket_base::linger(true, 0), ignored);
    a->connection->socket.close(ignored);
  }
  add(r_.gave_up, now_s());
  if (a->deadline_cut) return fail(a->request);
  on_failure(a->request, true);
}

// The scenario's policy after a failed attempt: the same RetryState calls as
// the agent engine makes.
void Generator::on_failure(const RequestPtr& r, bool timed_out, FailureClass answer) {
  if (!o_.retries) return fail(r);
  release(r);
  Failure f{Failure::kAllLayers, r->attempt, timed_out, now_s(), r->start_s, answer};
  auto uniform = [this](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  };
  RetryOutcome o = retry_.on_failure(f, in_flight(), uniform);
  if (o.action == RetryAction::denied) {
    add(r_.budget_denied, now_s());
    return fail(r);
  }
  if (!o.retries()) return fail(r);
  r->cause = o.cause;
  if (retry_.admits_at_failure()) {
    r->holds_retry = true;
    held_retries_ += 1;
  }
  retry_after(r, o.decision.delay_s);
}

void Generator::retry_after(const RequestPtr& r, double delay_s) {
  double due = now_s() + delay_s;
  auto timer = std::make_shared<asio::steady_timer>(io_);
  bool past_deadline = policy_.deadline_s() > 0 && due >= r->start_s + policy_.deadline_s();
  timer->expires_at(at(t0_, past_deadline ? r->start_s + policy_.deadline_s() : due));
  timer->async_wait([this, r, timer, past_deadline](boost::system::error_code ec) {
    if (ec) return;
    if (past_deadline) return fail(r);  // the deadline fires during the backoff
    if (!retry_.on_due(in_flight(), r->cause)) {
      add(r_.budget_denied, now_s());
      return fail(r);
    }
    send(r);
  });
}

void Generator::release(const RequestPtr& r) {
  if (!r->holds_retry) return;
  r->holds_retry = false;
  held_retries_ -= 1;
}

void Generator::succeed(const RequestPtr& r) {
  double now = now_s();
  release(r);
  if (now >= s_.horizon_s) return;
  r_.succeeded += 1;
  r_.success_latency.add(now - r->start_s);
  if (o_.retries && retry_.budget().enabled()) retry_.budget().on_success(1, r->attempt, r->cause);
}

void Generator::fail(const RequestPtr& r) {
  double now = now_s();
  release(r);
  if (now >= s_.horizon_s) return;
  r_.failed_total += 1;
  add(r_.failed, now);
}

// Budgets count steps: each begins with its expected first attempts.
void Generator::schedule_step(int step) {
  double t = step * s_.step_s;
  if (t >= s_.horizon_s) return;
  steps_.expires_at(at(t0_, t));
  steps_.async_wait([this, step, t](boost::system::error_code ec) {
    if (ec) return;
    if (retry_.budget().enabled()) retry_.budget().begin_step(rate_at(t) * s_.step_s);
    schedule_step(step + 1);
  });
}

void Generator::schedule_tick(int second) {
  ticks_.expires_at(at(t0_, second));
  ticks_.async_wait([this, second](boost::system::error_code ec) {
    if (ec) return;
    if (o_.progress) o_.progress(second, r_.user_requests, r_.succeeded, r_.failed_total);
    schedule_tick(second + 1);
  });
}

}  // namespace

GeneratorResult run_generator(const GeneratorOptions& o) {
  asio::io_context io(1);
  Generator g(io, o);
  if (g.grpc() && !g.grpc()->connect(std::chrono::system_clock::time_point(
                      std::chrono::milliseconds(o.t0_unix_ms))))
    throw std::runtime_error("the lab's gRPC channel did not connect to the backend");
  g.start();
  // Ctrl-C: the lab's InterruptGuard notes it; checked every 50 ms.
  bool stopped_early = false;
  asio::steady_timer poll(io);
  std::function<void()> check = [&] {
    poll.expires_after(std::chrono::milliseconds(50));
    poll.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      if (!interrupted()) return check();
      stopped_early = true;
      io.stop();
    });
  };
  check();
  io.run();
  GeneratorResult r = g.result();
  r.interrupted = stopped_early;
  if (stopped_early) r.in_flight = r.user_requests - r.succeeded - r.failed_total;
  return r;
}

}  // namespace retrystorm::lab
