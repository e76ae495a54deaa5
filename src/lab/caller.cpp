#include "lab/caller.hpp"

#include <cmath>
#include <random>

#include "lab/backend.hpp"
#include "lab/grpc_layer.hpp"
#include "lab/http.hpp"
#include "policies/client_guards.hpp"
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
  CallContext context;
  HttpCaller::Done done;
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
  uint32_t ticket = 0;        // what the client's guards let it go with
};
using AttemptPtr = std::shared_ptr<Attempt>;

}  // namespace

class HttpCaller::State {
 public:
  State(asio::io_context& io, const CallerOptions& o)
      : io_(io),
        o_(o),
        s_(o_.scenario),
        policy_(ClientPolicy::of(s_, Engine::agent)),
        retry_(policy_, RetryBudget(policy_, s_.demand.rate_per_s, s_.step_s)),
        guards_(s_),
        rng_(o.seed),
        endpoint_(asio::ip::address_v4::loopback(), static_cast<unsigned short>(o.port)),
        bins_(bin_count(s_.horizon_s, o.bin_s)) {
    if (!o.grpc_service_config.empty())
      grpc_ = std::make_unique<GrpcCaller>(io, o.port, o.grpc_service_config);
    for (auto* v : {&series.failed, &series.gave_up, &series.budget_denied, &series.first_sent,
                    &series.retries_sent, &series.refused, &series.refused_retries})
      v->assign(bins_, 0.0);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  void call(const CallContext& c, Done done) {
    auto r = std::make_shared<Request>();
    r->context = c;
    r->done = std::move(done);
    send(r);
  }
  void begin_step(double first) {
    if (retry_.budget().enabled()) retry_.budget().begin_step(first);
  }
  bool budget_enabled() const { return retry_.budget().enabled(); }
  GrpcCaller* grpc() { return grpc_.get(); }

  CallerSeries series;
  double connection_errors = 0;
  LatenessLog answer_transit{true};  // the callee's answer to its arrival here

 private:
  double now_s() const { return seconds_since(o_.t0); }
  void add(std::vector<double>& v, double t) {
    if (t >= 0 && t < s_.horizon_s) v[bin_index(t, o_.bin_s, bins_)] += 1;
  }
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
  bool refused_by_guards(const AttemptPtr& a, double now);
  void heard(const AttemptPtr& a, bool ok);
  size_t client_of(const RequestPtr& r) const { return r->context.id % guards_.clients(); }
  InFlight in_flight() const { return {open_attempts_, held_retries_}; }

  asio::io_context& io_;
  CallerOptions o_;
  const Scenario& s_;
  ClientPolicy policy_;
  RetryState retry_;     // the budget's admission with the policy's decision; points at policy_
  ClientGuards guards_;  // max_requests, breaker, throttle: per client, as the agent engine's
  std::mt19937_64 rng_;
  tcp::endpoint endpoint_;
  size_t bins_ = 0;
  std::vector<std::unique_ptr<Connection>> idle_;
  double open_attempts_ = 0, held_retries_ = 0;
  std::unique_ptr<GrpcCaller> grpc_;
};

void HttpCaller::State::send(const RequestPtr& r) {
  double now = now_s();
  ++r->attempt;
  add(r->attempt == 1 ? series.first_sent : series.retries_sent, now);
  auto a = std::make_shared<Attempt>(io_, r);
  if (refused_by_guards(a, now)) return;
  double timeout = o_.retries ? policy_.timeout_s() : o_.patience_s;
  if (o_.retries && policy_.deadline_s() > 0) {
    double left = r->context.start_s + policy_.deadline_s() - now;
    if (left < timeout) timeout = std::max(0.0, left), a->deadline_cut = true;
  }
  open_attempts_ += 1;
  a->give_up_s = now + timeout;
  // Over gRPC the call's own deadline ends it; the timer is a safety net.
  a->timer.expires_at(at(o_.t0, now + timeout + (grpc_ ? 1.0 : 0.0)));
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

// The client's max_requests, breaker and throttle, asked as the agent engine
// asks them (policies/client_guards.hpp): a refused attempt fails at once and
// is not retried.
bool HttpCaller::State::refused_by_guards(const AttemptPtr& a, double now) {
  if (!o_.retries || !guards_.on()) return false;
  auto uniform = [this] { return std::uniform_real_distribution<double>(0, 1)(rng_); };
  if (guards_.admit(client_of(a->request), now, uniform, a->ticket)) return false;
  add(series.refused, now);
  if (a->request->attempt > 1) add(series.refused_retries, now);
  fail(a->request);
  return true;
}

// The attempt's outcome reaches the client's guards, and its slot is free.
void HttpCaller::State::heard(const AttemptPtr& a, bool ok) {
  if (!o_.retries || !guards_.on()) return;
  size_t client = client_of(a->request);
  guards_.heard(client, now_s(), ok, a->ticket);
  guards_.release(client, a->ticket, [](uint64_t) { return true; });  // no pool here (lab.cpp)
}

void HttpCaller::State::connect(const AttemptPtr& a) {
  a->reused = false;
  a->connection = std::make_unique<Connection>(io_);
  a->connection->socket.async_connect(endpoint_, [this, a](boost::system::error_code ec) {
    if (a->done) return;
    if (ec) {
      connection_errors += 1;
      return on_answer(a, 0, false);
    }
    a->connection->socket.set_option(tcp::no_delay(true));
    write(a);
  });
}

// One unary call, which the channel's retryPolicy retries; its deadline is
// the caller's patience, as an application sets one on its context.
void HttpCaller::State::call_grpc(const AttemptPtr& a, double patience_s) {
  auto deadline =
      std::chrono::system_clock::now() + std::chrono::microseconds(std::llround(patience_s * 1e6));
  grpc_->call(std::to_string(a->request->context.id), std::llround(s_.client.timeout_s * 1000),
              deadline, [this, a](int code, double back_s) {
                if (a->done) return;
                if (!std::isnan(back_s)) answer_transit.add(back_s);  // any answer, as over HTTP
                on_answer(a, code == kGrpcOk ? 200 : 0, false);
              });
}

// A kept-alive connection the proxy closed while it sat idle (HAProxy's
// timeout http-keep-alive, nginx's keepalive_timeout) fails before anything
// was read: sent again on a new connection, as HTTP clients do; the request
// never reached the server, so it is no retry.
bool HttpCaller::State::stale(const AttemptPtr& a) {
  if (!a->reused) return false;
  connect(a);
  return true;
}

// As the client (retries), the attempt also carries the instant its timer
// gives up (kGiveUpHeader); behind a proxy the proxy's timer is what counts,
// and the backend has only the relative timeout, as a real server would. The
// path headers tell a service in a chain what its attempt is to the user
// request (docs/lab.md, "A chain of services").
void HttpCaller::State::write(const AttemptPtr& a) {
  const CallContext& c = a->request->context;
  // One string per attempt, appended to (it lives until the write is done).
  auto text = std::make_shared<std::string>("GET / HTTP/1.1\r\nHost: lab\r\n");
  text->append(kRequestHeader).append(": ").append(std::to_string(c.id));
  text->append("\r\n").append(kTimeoutHeader).append(": ");
  text->append(std::to_string(std::llround(s_.client.timeout_s * 1000))).append("\r\n");
  if (o_.retries) {
    text->append(kGiveUpHeader).append(": ");
    text->append(std::to_string(std::llround(a->give_up_s * 1e6))).append("\r\n");
    double path_give_up = std::min(c.path_give_up_s, a->give_up_s);
    text->append(kPathGiveUpHeader).append(": ");
    text->append(std::to_string(std::llround(path_give_up * 1e6))).append("\r\n");
    if (c.path_first && a->request->attempt == 1) text->append(kPathFirstHeader).append(": 1\r\n");
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

void HttpCaller::State::read(const AttemptPtr& a) {
  auto& c = *a->connection;
  asio::async_read_until(
      c.socket, c.buffer, "\r\n\r\n", [this, a](boost::system::error_code ec, size_t n) {
        if (a->done) return;
        if (ec && stale(a)) return;
        if (ec) return on_answer(a, 0, false);
        a->reused = false;  // an answer came: a failure from here on is real
        HttpHead head = parse_head(a->connection->buffer, n);
        if (const std::string& sent = head.header(kAnsweredHeader); !sent.empty())
          answer_transit.add(seconds_since_stamp(sent));
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

void HttpCaller::State::on_answer(const AttemptPtr& a, int status, bool reusable) {
  a->done = true;
  open_attempts_ -= 1;
  a->timer.cancel();
  heard(a, status == 200);
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
void HttpCaller::State::on_timeout(const AttemptPtr& a) {
  if (a->done) return;
  a->done = true;
  open_attempts_ -= 1;
  heard(a, false);
  boost::system::error_code ignored;
  if (a->connection) {
    a->connection->socket.set_option(asio::socket_base::linger(true, 0), ignored);
    a->connection->socket.close(ignored);
  }
  add(series.gave_up, now_s());
  if (a->deadline_cut) return fail(a->request);
  on_failure(a->request, true);
}

// The scenario's policy after a failed attempt: the same RetryState calls as
// the agent engine makes.
void HttpCaller::State::on_failure(const RequestPtr& r, bool timed_out, FailureClass answer) {
  if (!o_.retries) return fail(r);
  release(r);
  Failure f{Failure::kAllLayers, r->attempt, timed_out, now_s(), r->context.start_s, answer};
  auto uniform = [this](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  };
  RetryOutcome o = retry_.on_failure(f, in_flight(), uniform);
  if (o.action == RetryAction::denied) {
    add(series.budget_denied, now_s());
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

void HttpCaller::State::retry_after(const RequestPtr& r, double delay_s) {
  double due = now_s() + delay_s;
  auto timer = std::make_shared<asio::steady_timer>(io_);
  double deadline = r->context.start_s + policy_.deadline_s();
  bool past_deadline = policy_.deadline_s() > 0 && due >= deadline;
  timer->expires_at(at(o_.t0, past_deadline ? deadline : due));
  timer->async_wait([this, r, timer, past_deadline](boost::system::error_code ec) {
    if (ec) return;
    if (past_deadline) return fail(r);  // the deadline fires during the backoff
    if (!retry_.on_due(in_flight(), r->cause)) {
      add(series.budget_denied, now_s());
      return fail(r);
    }
    send(r);
  });
}

void HttpCaller::State::release(const RequestPtr& r) {
  if (!r->holds_retry) return;
  r->holds_retry = false;
  held_retries_ -= 1;
}

void HttpCaller::State::succeed(const RequestPtr& r) {
  release(r);
  if (o_.retries && retry_.budget().enabled()) retry_.budget().on_success(1, r->attempt, r->cause);
  r->done(true);
}

void HttpCaller::State::fail(const RequestPtr& r) {
  release(r);
  add(series.failed, now_s());
  r->done(false);
}

HttpCaller::HttpCaller(asio::io_context& io, const CallerOptions& o)
    : state_(std::make_unique<State>(io, o)) {}
HttpCaller::~HttpCaller() = default;

bool HttpCaller::connect_grpc(std::chrono::system_clock::time_point by) {
  return !state_->grpc() || state_->grpc()->connect(by);
}
void HttpCaller::call(const CallContext& c, Done done) {
  state_->call(c, std::move(done));
}
void HttpCaller::begin_step(double first_attempts) {
  state_->begin_step(first_attempts);
}
bool HttpCaller::budget_enabled() const {
  return state_->budget_enabled();
}
const CallerSeries& HttpCaller::series() const {
  return state_->series;
}
double HttpCaller::connection_errors() const {
  return state_->connection_errors;
}
TimingError HttpCaller::answer_transit() const {
  return state_->answer_transit.summary();
}

}  // namespace retrystorm::lab
