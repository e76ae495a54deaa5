#include "lab/generator.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "lab/asio.hpp"
#include "lab/caller.hpp"
#include "lab/process.hpp"

namespace retrystorm::lab {

namespace asio = boost::asio;

namespace {

class Generator {
 public:
  Generator(asio::io_context& io, const GeneratorOptions& o)
      : io_(io),
        o_(o),
        s_(o.scenario),
        rng_(static_cast<uint64_t>(s_.seed)),
        t0_(steady_of_unix_ms(o.t0_unix_ms)),
        caller_(io, CallerOptions{o.port, o.scenario, o.retries, o.patience_s, t0_, o.bin_s,
                                  static_cast<uint64_t>(s_.seed) + 1, o.grpc_service_config}),
        arrivals_(io),
        steps_(io),
        ticks_(io),
        end_(io),
        bins_(bin_count(s_.horizon_s, o.bin_s)),
        stalls_(bins_, o.bin_s) {
    r_.succeeded_per_bin.assign(bins_, 0.0);
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void start();
  bool connect_grpc(std::chrono::system_clock::time_point by) { return caller_.connect_grpc(by); }
  GeneratorResult result() {
    const CallerSeries& c = caller_.series();
    r_.failed = c.failed;
    r_.gave_up = c.gave_up;
    r_.budget_denied = c.budget_denied;
    r_.first_sent = c.first_sent;
    r_.retries_sent = c.retries_sent;
    r_.refused = c.refused;
    r_.refused_retries = c.refused_retries;
    r_.connection_errors = caller_.connection_errors();
    r_.arrival_error = lateness_.summary();
    r_.answer_transit = caller_.answer_transit();
    r_.lateness_max_s = stalls_.max_s();
    return std::move(r_);
  }

 private:
  double now_s() const { return seconds_since(t0_); }
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
  void ended(double start_s, bool ok);
  void schedule_step(int step);
  void schedule_tick(int second);

  asio::io_context& io_;
  GeneratorOptions o_;
  const Scenario& s_;
  std::mt19937_64 rng_;  // the arrivals' draws
  Clock::time_point t0_;
  HttpCaller caller_;  // the users' calls, with the scenario's policy
  asio::steady_timer arrivals_, steps_, ticks_, end_;
  size_t bins_ = 0;
  BinLateness stalls_;  // worst lateness per bin: where the machine stalled
  unsigned long long next_id_ = 0;
  LatenessLog lateness_;
  GeneratorResult r_;
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
    // At a rate of 0 (an incident's demand_factor 0) no user comes: the
    // timer only looks again a step later (it sent one request a step).
    if (rate_at(t) > 0) {
      r_.user_requests += 1;
      CallContext c;
      c.id = next_id_++;
      c.start_s = t;
      caller_.call(c, [this, t](bool ok) { ended(t, ok); });
    }
    // Whole nanoseconds: 1/60 s steps must not drift past the horizon.
    schedule_arrival(std::round((t + next_gap(t)) * 1e9) / 1e9);
  });
}

// A user request ended: counted while the measurement runs.
void Generator::ended(double start_s, bool ok) {
  double now = now_s();
  if (now >= s_.horizon_s) return;
  if (!ok) {
    r_.failed_total += 1;
    return;
  }
  r_.succeeded += 1;
  r_.succeeded_per_bin[bin_index(now, o_.bin_s, bins_)] += 1;
  r_.success_latency.add(now - start_s);
}

// Budgets count steps: each begins with its expected first attempts.
void Generator::schedule_step(int step) {
  double t = step * s_.step_s;
  if (t >= s_.horizon_s) return;
  steps_.expires_at(at(t0_, t));
  steps_.async_wait([this, step, t](boost::system::error_code ec) {
    if (ec) return;
    caller_.begin_step(rate_at(t) * s_.step_s);
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
  if (!g.connect_grpc(
          std::chrono::system_clock::time_point(std::chrono::milliseconds(o.t0_unix_ms))))
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
  if (stopped_early) {
    r.in_flight = r.user_requests - r.succeeded - r.failed_total;
    double at = static_cast<double>(unix_ms_now() - o.t0_unix_ms) / 1000;
    r.interrupted_at_s = std::clamp(at, 0.0, o.scenario.horizon_s);
  }
  return r;
}

}  // namespace retrystorm::lab
