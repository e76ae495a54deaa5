// The agent engine. One event loop over four sources, merged in time order:
//   - the arrivals of the current step (generated a step ahead, so the budget
//     can be told the step's first attempts before any of them is sent);
//   - one timer FIFO per retrying layer (a layer's timeout is constant, so its
//     timers are created, and fire, in time order: no heap needed);
//   - a binary heap for completions, backoff retries and capacity changes.
//   - a deadline FIFO of user requests (client.deadline_s is constant too).
// Ties at one instant go: completion, capacity change, timeout (innermost layer
// first), deadline, retry, arrival, so a response arriving exactly at the
// timeout is on time (the fluid model's "<= timeout_s").
// Entities live in pools with free lists; timers and events name an entity by
// (index, generation), and a generation that moved on makes them stale, so
// nothing is ever searched for or erased from the middle of a queue.
#include "engines/agent/agent.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "engines/agent/rng.hpp"
#include "engines/ring_queue.hpp"
#include "model/keys.hpp"
#include "model/number_text.hpp"
#include "policies/backoff.hpp"
#include "policies/budget.hpp"
#include "policies/client_policy.hpp"

namespace retrystorm {

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Event priorities at one instant, lowest first.
enum : uint64_t { kComplete = 0, kRate = 1, kTimeout = 2, kRetry = 3, kArrival = 4 };
constexpr int kPrioShift = 56;
// A deadline goes after every layer's timeout at its instant (those count
// layers below 2^16), before retries.
constexpr uint64_t kDeadlineOrder = kTimeout << kPrioShift | uint64_t{1} << 16;

enum : uint8_t { kCallFree, kWaiting, kBackoff };         // Call::state
enum : uint8_t { kJobFree, kQueued, kInService, kShed };  // Job::state

// A call made to a retrying layer: a user request at layer 0, or a call of
// layer l - 1 to layer l. It sends attempts one at a time.
struct Call {
  double start_s;   // the user request's arrival (for the deadline)
  double sent_s;    // the current attempt's send instant
  uint32_t parent;  // the calling Call, kNone for the user
  uint32_t parent_gen;
  uint32_t gen;  // moves whenever what the call waits for changes
  uint32_t request;
  uint32_t job;  // innermost layer: the current attempt at the server
  uint16_t attempt;
  uint8_t layer;
  uint8_t state;
  bool first;        // every call above is on its first attempt
  bool after_error;  // the current attempt's retry followed an error, not a timeout
};

// An attempt at the server.
struct Job {
  double sent_s;
  double last_s;     // in service: when work_left was brought up to date
  double work_left;  // in service: seconds of work at full capacity
  uint32_t caller;
  uint32_t caller_gen;
  uint32_t request;
  uint32_t gen;
  uint32_t slot;  // in service: index in in_service_
  uint16_t attempt;
  uint8_t state;
};

struct Event {
  double t;
  uint64_t order;  // priority << kPrioShift | sequence
  uint32_t idx;
  uint32_t gen;
};

struct Timer {
  double t;
  uint32_t call;
  uint32_t gen;
};

template <typename T>
class Pool {
 public:
  uint32_t alloc() {
    ++live_;
    peak_ = std::max(peak_, live_);
    if (!free_.empty()) {
      uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    items_.push_back(T{});
    return static_cast<uint32_t>(items_.size() - 1);
  }
  void release(uint32_t i) {
    free_.push_back(i);
    --live_;
  }
  T& operator[](uint32_t i) { return items_[i]; }
  size_t slots() const { return items_.size(); }
  void clear() {  // keeps the memory for the next run
    items_.clear();
    free_.clear();
    live_ = peak_ = 0;
  }
  uint64_t peak() const { return peak_; }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> free_;
  uint64_t live_ = 0, peak_ = 0;
};

// A ring buffer of timers in firing order.
class TimerFifo {
 public:
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  const Timer& front() const { return buf_[head_]; }
  void push(const Timer& t) {
    if (n_ == buf_.size()) regrow(std::max<size_t>(64, buf_.size() * 2));
    buf_[(head_ + n_) & mask_] = t;
    ++n_;
  }
  void pop() {
    head_ = (head_ + 1) & mask_;
    --n_;
  }
  void clear() { head_ = n_ = 0; }
  // Drops the timers `live` rejects (their call stopped waiting for them).
  template <typename Live>
  void compact(Live live) {
    size_t w = 0;
    for (size_t i = 0; i < n_; ++i) {
      const Timer& t = buf_[(head_ + i) & mask_];
      if (live(t)) buf_[(head_ + w++) & mask_] = t;
    }
    n_ = w;
  }

 private:
  void regrow(size_t size) {
    std::vector<Timer> next(size);
    for (size_t i = 0; i < n_; ++i) next[i] = buf_[(head_ + i) & mask_];
    buf_ = std::move(next);
    head_ = 0;
    mask_ = size - 1;
  }
  std::vector<Timer> buf_;
  size_t head_ = 0, n_ = 0, mask_ = 0;
};

// Job indices: FIFO pops the front, LIFO the back.
using Ring = RingQueue<uint32_t>;

bool before(double t, uint64_t order, double bt, uint64_t bo) {
  return t < bt || (t == bt && order < bo);
}

// The budget of one layer: its own ratio, not compounded over the stack
// (each layer's budget counts its own first attempts and retries).
ClientPolicy one_layer(ClientPolicy p, int layer) {
  p.layer_retries = {p.retries(layer)};
  return p;
}

RetryCause cause_of(bool after_error) {
  return after_error ? RetryCause::error : RetryCause::timeout;
}

// The memory of a run, kept per thread for the next one: ladders, tipping
// points and Monte Carlo run many short runs, and fresh pages cost more than
// the events. It holds only what was in flight at the busiest moment.
struct Workspace {
  bool busy = false;
  Pool<Call> calls;
  Pool<Job> jobs;
  std::vector<Event> heap;
  std::vector<TimerFifo> timers;
  TimerFifo deadlines;  // Timer::gen holds the user request's number
  std::vector<double> arrivals;
  Ring queue;
  std::vector<uint32_t> in_service;

  void reset(size_t layers) {
    calls.clear();
    jobs.clear();
    heap.clear();
    if (timers.size() < layers) timers.resize(layers);
    for (auto& f : timers) f.clear();
    deadlines.clear();
    arrivals.clear();
    queue.clear();
    in_service.clear();
  }
};

// Lends the thread's workspace to a run (a private one if it is in use).
class WorkspaceLease {
 public:
  WorkspaceLease() {
    thread_local Workspace shared;
    ws_ = shared.busy ? &own_ : &shared;
    ws_->busy = true;
  }
  ~WorkspaceLease() { ws_->busy = false; }
  Workspace& get() { return *ws_; }

 private:
  Workspace own_;
  Workspace* ws_;
};

class AgentEngine {
 public:
  AgentEngine(const Scenario& s, const AgentOptions& o, Workspace& w)
      : w_(w),
        s_(s),
        steps_(s.steps()),
        policy_(ClientPolicy::of(s, Engine::agent)),
        retries_(policy_.layer_retries),
        timeout_(policy_.layer_timeouts_s),
        layers_(static_cast<int>(retries_.size())),
        rng_(static_cast<uint64_t>(s.seed)),
        log_(o.log),
        stats_(o.stats ? o.stats : &own_stats_),
        heap_(w.heap),
        timers_(w.timers),
        deadlines_(w.deadlines),
        arrivals_(w.arrivals),
        calls_(w.calls),
        jobs_(w.jobs),
        live_att_(static_cast<size_t>(layers_), 0.0),
        live_ret_(static_cast<size_t>(layers_), 0.0),
        held_(static_cast<size_t>(layers_), 0.0),
        credit_(static_cast<size_t>(layers_), 0.0),
        layer_first_(static_cast<size_t>(layers_), 0.0),
        queue_(w.queue),
        in_service_(w.in_service) {
    w_.reset(static_cast<size_t>(layers_));
    result_.scenario = s;
    result_.series.resize(static_cast<size_t>(steps_));
    for (int l = 0; l < layers_; ++l)
      budgets_.emplace_back(one_layer(policy_, l), s.demand.rate_per_s, s.step_s);
    budget_on_ = budgets_[0].enabled();
    slots_ = s.server.slots > 0 ? s.server.slots : 1;
    mean_service_s_ = slots_ / s.server.capacity_per_s;
    sigma_ = s.server.service_sigma;
    if (s.server.service == ServiceDist::two_point) sigma_ = std::min(1.0, sigma_);
    log_mu_ = std::log(mean_service_s_) - sigma_ * sigma_ / 2;
    while (incident_first_ < steps_ && !s.in_incident(incident_first_)) ++incident_first_;
    incident_end_ = incident_first_;
    while (incident_end_ < steps_ && s.in_incident(incident_end_)) ++incident_end_;
  }

  RunResult run() {
    if (incident_first_ < incident_end_ && s_.incident.capacity_factor != 1) {
      push(incident_first_ * s_.step_s, kRate, 0, 0);
      push(incident_end_ * s_.step_s, kRate, 1, 0);
    }
    auto& x = result_.series;
    for (int t = 0; t < steps_; ++t) {
      step_ = t;
      bool incident = incident_first_ <= t && t < incident_end_;
      double start = t * s_.step_s;
      double end = t + 1 == steps_ ? s_.horizon_s : (t + 1) * s_.step_s;
      x.t_s[t] = start;
      x.capacity[t] =
          s_.server.capacity_per_s * s_.step_s * (incident ? s_.incident.capacity_factor : 1.0);
      generate_arrivals(start, end, incident);
      double first = static_cast<double>(arrivals_.size());
      x.first_attempts[t] = first;
      result_.user_requests += first;
      budgets_[0].begin_step(first);
      for (int l = 1; l < layers_; ++l) {  // inner layers: the previous step's calls
        budgets_[l].begin_step(layer_first_[l]);
        layer_first_[l] = 0;
      }
      run_until(end);
      x.backlog[t] = static_cast<double>(in_system_);
    }
    finish();
    return std::move(result_);
  }

 private:
  // ---- arrivals -----------------------------------------------------------
  void generate_arrivals(double start, double end, bool incident) {
    arrivals_.clear();
    arrival_pos_ = 0;
    double rate = s_.demand.rate_per_s * (incident ? s_.incident.demand_factor : 1.0);
    switch (s_.demand.process) {
      case DemandProcess::deterministic: {
        // Evenly spaced; the fraction carries over, so each step gets the
        // fluid engine's amount whenever that is a whole number.
        carry_ += rate * s_.step_s;
        double n = std::floor(carry_ + 1e-9);
        carry_ = std::max(0.0, carry_ - n);
        for (double i = 0; i < n; ++i) arrivals_.push_back(start + (i + 0.5) * (end - start) / n);
        break;
      }
      case DemandProcess::poisson:
        poisson(start, end, rate);
        break;
      case DemandProcess::bursty: {
        double on = s_.demand.burst_on_s, cycle = on + s_.demand.burst_off_s;
        double factor = s_.demand.burst_factor;
        double off_rate = rate * std::max(0.0, (cycle - factor * on) / s_.demand.burst_off_s);
        for (double a = start; a < end;) {
          double cycle_start = std::floor(a / cycle) * cycle;
          bool is_on = a < cycle_start + on;
          double seg_end = std::min(end, cycle_start + (is_on ? on : cycle));
          if (seg_end <= a) seg_end = std::min(end, std::nextafter(a, kInf));
          poisson(a, seg_end, is_on ? rate * factor : off_rate);
          a = seg_end;
        }
        break;
      }
    }
  }

  // A Poisson process on [a, b); memoryless, so restarting at a is exact.
  void poisson(double a, double b, double rate) {
    if (rate <= 0) return;
    double mean = 1 / rate;
    for (double t = a + rng_.exponential(mean); t < b; t += rng_.exponential(mean))
      arrivals_.push_back(t);
  }

  // ---- the event loop -----------------------------------------------------
  void push(double t, uint64_t prio, uint32_t idx, uint32_t gen) {
    // A 4-ary min-heap: half the depth of a binary one, children in one line.
    Event e{t, prio << kPrioShift | seq_++, idx, gen};
    heap_.push_back(e);
    size_t i = heap_.size() - 1;
    while (i > 0) {
      size_t parent = (i - 1) / 4;
      if (!before(e.t, e.order, heap_[parent].t, heap_[parent].order)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void pop_heap() {
    Event last = heap_.back();
    heap_.pop_back();
    size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (;;) {
      size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c)
        if (before(heap_[c].t, heap_[c].order, heap_[best].t, heap_[best].order)) best = c;
      if (!before(heap_[best].t, heap_[best].order, last.t, last.order)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }

  void run_until(double end) {
    for (;;) {
      double bt = kInf;
      uint64_t bo = ~uint64_t{0};
      int src = -1;  // 0 heap, 1 arrival, 2 + l timer of layer l
      if (!heap_.empty()) {
        bt = heap_.front().t;
        bo = heap_.front().order;
        src = 0;
      }
      if (arrival_pos_ < arrivals_.size() &&
          before(arrivals_[arrival_pos_], kArrival << kPrioShift, bt, bo)) {
        bt = arrivals_[arrival_pos_];
        bo = kArrival << kPrioShift;
        src = 1;
      }
      TimerFifo* fifos = timers_.data();
      for (int l = 0; l < layers_; ++l) {
        if (fifos[l].empty()) continue;
        double t = fifos[l].front().t;
        if (t > bt) continue;  // the common case, decided on time alone
        uint64_t order = kTimeout << kPrioShift | static_cast<uint64_t>(layers_ - 1 - l);
        if (before(t, order, bt, bo)) {
          bt = t;
          bo = order;
          src = 2 + l;
        }
      }
      if (!deadlines_.empty() && deadlines_.front().t <= bt &&
          before(deadlines_.front().t, kDeadlineOrder, bt, bo)) {
        bt = deadlines_.front().t;
        bo = kDeadlineOrder;
        src = 2 + layers_;
      }
      if (src < 0 || bt >= end) return;
      now_ = bt;
      if (src == 1) {
        ++arrival_pos_;
        on_arrival();
      } else if (src == 2 + layers_) {
        Timer tm = deadlines_.front();
        deadlines_.pop();
        if (is_user_request(tm)) on_deadline(tm.call);
      } else if (src >= 2) {
        Timer tm = timers_[src - 2].front();
        timers_[src - 2].pop();
        const Call& c = calls_[tm.call];
        if (c.gen == tm.gen && c.state == kWaiting) on_timeout(tm.call);
      } else {
        Event e = heap_.front();
        pop_heap();
        switch (e.order >> kPrioShift) {
          case kComplete:
            on_complete(e.idx, e.gen);
            break;
          case kRate:
            on_rate(e.idx == 0 ? s_.incident.capacity_factor : 1.0);
            break;
          default:
            on_retry(e.idx, e.gen);
            break;
        }
      }
    }
  }

  // ---- clients --------------------------------------------------------------
  void on_arrival() {
    ++stats_->events;
    ++live_users_;
    uint32_t request = next_request_++;
    uint32_t c = new_call(kNone, 0, 0, request, true, now_);
    if (policy_.deadline_rule == DeadlineRule::fires) arm_deadline(c, request);
    send_attempt(c);
  }

  // ---- deadlines --------------------------------------------------------------
  // Envoy's route timeout and gRPC's deadline end the request when they fire,
  // in backoff or mid-attempt; the decision after a failure does not look at
  // them (docs/agent-engine.md).
  void arm_deadline(uint32_t c, uint32_t request) {
    deadlines_.push({now_ + policy_.deadline_s, c, request});
    if (deadlines_.size() > 2 * live_users_ + 4096)
      deadlines_.compact([this](const Timer& t) { return is_user_request(t); });
  }

  // The timer's user request is still being served by the call it names.
  bool is_user_request(const Timer& t) {
    const Call& x = calls_[t.call];
    return x.state != kCallFree && x.parent == kNone && x.request == t.gen;
  }

  void on_deadline(uint32_t c) {
    ++stats_->events;
    Call& x = calls_[c];
    if (x.state == kWaiting) {
      end_attempt(x);
      abandon_attempt(c);
    } else {
      held_[x.layer] -= 1;  // the retry in backoff gives its slot back
    }
    call_fails(c);
  }

  uint32_t new_call(uint32_t parent, uint32_t parent_gen, int layer, uint32_t request, bool first,
                    double start_s) {
    uint32_t c = calls_.alloc();
    Call& x = calls_[c];
    x.start_s = start_s;
    x.sent_s = start_s;
    x.parent = parent;
    x.parent_gen = parent_gen;
    x.request = request;
    x.job = kNone;
    x.attempt = 0;
    x.layer = static_cast<uint8_t>(layer);
    x.state = kBackoff;
    x.first = first;
    x.after_error = false;
    return c;
  }

  void free_call(uint32_t c) {
    calls_[c].state = kCallFree;
    ++calls_[c].gen;
    calls_.release(c);
  }

  void send_attempt(uint32_t c) {
    Call& x = calls_[c];
    ++x.attempt;
    ++x.gen;
    x.state = kWaiting;
    x.sent_s = now_;
    int l = x.layer;
    live_att_[l] += 1;
    if (x.attempt > 1) live_ret_[l] += 1;
    TimerFifo& fifo = timers_[l];
    fifo.push({now_ + timeout_[l], c, x.gen});
    if (fifo.size() > 2 * static_cast<size_t>(live_att_[l]) + 4096)
      fifo.compact([this](const Timer& t) {
        return calls_[t.call].gen == t.gen && calls_[t.call].state == kWaiting;
      });
    if (l == layers_ - 1) {
      send_job(c);
      return;
    }
    uint32_t gen = x.gen, request = x.request;
    bool first = x.first && x.attempt == 1;
    double start = x.start_s;
    uint32_t child = new_call(c, gen, l + 1, request, first, start);  // x may move
    layer_first_[l + 1] += 1;
    send_attempt(child);
  }

  // The current attempt of call c stopped being in flight.
  void end_attempt(const Call& x) {
    live_att_[x.layer] -= 1;
    if (x.attempt > 1) live_ret_[x.layer] -= 1;
  }

  void on_timeout(uint32_t c) {
    ++stats_->events;
    end_attempt(calls_[c]);
    abandon_attempt(c);
    attempt_failed(c, true);
  }

  // The caller of call c's current attempt stopped waiting for it.
  void abandon_attempt(uint32_t c) {
    const Call& x = calls_[c];
    if (x.layer == layers_ - 1) {
      result_.series.gave_up[step_] += 1;
      if (s_.server.shed_abandoned && x.job != kNone) {
        Job& y = jobs_[x.job];
        if (y.state == kQueued && y.caller == c && y.caller_gen == x.gen) shed_job(x.job);
      }
    } else {
      log(x.request, x.attempt, x.sent_s, kNaN, "timeout", x.layer + 1);
    }
  }

  // An attempt of call c failed (timed out, rejected, or the call below it
  // failed): back off and retry, or fail the call. A real system's budget
  // decides now, before the backoff (docs/agent-engine.md).
  void attempt_failed(uint32_t c, bool timed_out) {
    Call& x = calls_[c];
    int l = x.layer;
    Failure f{.layer = l,
              .attempt = x.attempt,
              .timed_out = timed_out,
              .now_s = now_,
              .start_s = x.start_s};
    if (budget_on_) budgets_[l].on_attempt_failed(1, policy_.retryable(f));
    RetryDecision d = policy_.decide(
        f, [&](double low, double high) { return low + (high - low) * rng_.uniform(); });
    if (!d.retries()) {
      call_fails(c);
      return;
    }
    if (budget_on_ && budgets_[l].admits_at_failure() && !budget_grants(c, cause_of(!timed_out)))
      return;
    ++x.gen;
    x.state = kBackoff;
    x.after_error = !timed_out;
    held_[l] += 1;
    push(now_ + d.delay_s, kRetry, c, x.gen);
  }

  void on_retry(uint32_t c, uint32_t gen) {
    Call& x = calls_[c];
    if (x.gen != gen || x.state != kBackoff) return;
    ++stats_->events;
    int l = x.layer;
    held_[l] -= 1;  // from here on the retry is in flight (live_ret_)
    if (budgets_[l].admits_at_failure() || budget_grants(c, cause_of(x.after_error)))
      send_attempt(c);
  }

  // Asks layer's budget for one retry of call c; a denied retry fails the
  // call at once. Retries held: those in backoff and those in flight.
  bool budget_grants(uint32_t c, RetryCause cause) {
    const Call& x = calls_[c];
    int l = x.layer;
    // The budget deals in amounts; a retry is one whole attempt. Parts the
    // budget grants are banked until they make a whole retry.
    double taken = budgets_[l].take(1.0, {live_att_[l], held_[l] + live_ret_[l]}, cause);
    bool send = taken >= 1;
    if (!send && taken > 0) {
      credit_[l] += taken;
      send = credit_[l] >= 1 - 1e-9;
      if (send) credit_[l] = std::max(0.0, credit_[l] - 1);
    }
    if (send) return true;
    result_.series.budget_denied[step_] += 1;
    log(x.request, x.attempt + 1, now_, kNaN, "budget_denied", l + 1);
    call_fails(c);
    return false;
  }

  void call_fails(uint32_t c) {
    uint32_t p = calls_[c].parent, pg = calls_[c].parent_gen;
    free_call(c);
    if (p == kNone) {
      result_.failed += 1;
      result_.series.failed[step_] += 1;
      --live_users_;
      return;
    }
    Call& y = calls_[p];
    if (y.gen != pg || y.state != kWaiting) return;  // the caller gave up on it already
    log(y.request, y.attempt, y.sent_s, now_, "failed", y.layer + 1);
    end_attempt(y);
    attempt_failed(p, false);
  }

  // A response reached call c: pass it up while the callers still wait.
  // True when it reaches the user.
  bool deliver_success(uint32_t c) {
    for (;;) {
      Call& x = calls_[c];
      end_attempt(x);
      if (budget_on_) budgets_[x.layer].on_success(1, x.attempt, cause_of(x.after_error));
      if (x.layer < layers_ - 1) log(x.request, x.attempt, x.sent_s, now_, "ok", x.layer + 1);
      uint32_t p = x.parent, pg = x.parent_gen;
      double started = x.start_s;
      free_call(c);
      if (p == kNone) {
        result_.succeeded += 1;
        result_.success_latency.add(now_ - started);
        --live_users_;
        return true;
      }
      const Call& y = calls_[p];
      if (y.gen != pg || y.state != kWaiting) return false;
      c = p;
    }
  }

  // ---- the server -----------------------------------------------------------
  void send_job(uint32_t c) {
    Call& x = calls_[c];
    uint32_t j = jobs_.alloc();
    Job& y = jobs_[j];
    y.sent_s = now_;
    y.caller = c;
    y.caller_gen = x.gen;
    y.request = x.request;
    y.attempt = x.attempt;
    ++y.gen;
    x.job = j;
    if (!(x.first && x.attempt == 1)) result_.series.retries[step_] += 1;
    ++stats_->server_arrivals;
    if (rate_ > 0 && busy_ < slots_ && queued_ == 0) {
      change_in_system(+1);
      start_service(j);
      return;
    }
    if (s_.server.queue_limit > 0 && queued_ >= s_.server.queue_limit) {
      y.state = kQueued;  // refused before it is queued
      refuse(j);
      return;
    }
    y.state = kQueued;
    queue_.push_back(j);
    ++queued_;
    change_in_system(+1);
    dispatch();
  }

  // Rejected by a full queue, or dropped by CoDel: the caller hears at once.
  void refuse(uint32_t j) {
    Job& y = jobs_[j];
    result_.series.rejected[step_] += 1;
    log(y.request, y.attempt, y.sent_s, now_, "rejected", layers_);
    uint32_t c = y.caller, cg = y.caller_gen;
    free_job(j);
    Call& x = calls_[c];
    if (x.gen != cg || x.state != kWaiting) return;
    end_attempt(x);
    attempt_failed(c, false);
  }

  void free_job(uint32_t j) {
    jobs_[j].state = kJobFree;
    ++jobs_[j].gen;
    jobs_.release(j);
  }

  void shed_job(uint32_t j) {
    Job& y = jobs_[j];
    y.state = kShed;  // stays in the ring until it reaches an end of it
    --queued_;
    change_in_system(-1);
    result_.series.shed[step_] += 1;
    log(y.request, y.attempt, y.sent_s, kNaN, "shed", layers_);
    while (!queue_.empty() && jobs_[queue_.front()].state == kShed) {
      free_job(queue_.front());
      queue_.pop_front();
    }
  }

  void change_in_system(int delta) {
    stats_->area_in_system += static_cast<double>(in_system_) * (now_ - area_t_);
    area_t_ = now_;
    in_system_ += delta;
  }

  double draw_service() {
    switch (s_.server.service) {
      case ServiceDist::exponential:
        return rng_.exponential(mean_service_s_);
      case ServiceDist::lognormal:
        return std::exp(log_mu_ + sigma_ * rng_.normal());
      case ServiceDist::two_point:
        return mean_service_s_ * (rng_.uniform() < 0.5 ? 1 - sigma_ : 1 + sigma_);
      case ServiceDist::deterministic:
        break;
    }
    return mean_service_s_;
  }

  void start_service(uint32_t j) {
    Job& y = jobs_[j];
    y.state = kInService;
    y.slot = static_cast<uint32_t>(in_service_.size());
    in_service_.push_back(j);
    ++busy_;
    double work = draw_service();
    if (s_.server.contention > 0) work *= 1 + s_.server.contention * (in_system_ - 1);
    y.work_left = work;
    y.last_s = now_;
    stats_->wait_sum_s += now_ - y.sent_s;
    ++y.gen;
    push(now_ + work / rate_, kComplete, j, y.gen);
  }

  void on_complete(uint32_t j, uint32_t gen) {
    Job& y = jobs_[j];
    if (y.gen != gen || y.state != kInService) return;
    ++stats_->events;
    uint32_t moved = in_service_.back();
    in_service_[y.slot] = moved;
    jobs_[moved].slot = y.slot;
    in_service_.pop_back();
    --busy_;
    change_in_system(-1);
    ++stats_->completed;
    stats_->sojourn_sum_s += now_ - y.sent_s;
    const Call& x = calls_[y.caller];
    bool to_caller = x.gen == y.caller_gen && x.state == kWaiting;
    bool to_user = to_caller && deliver_success(y.caller);
    (to_user ? result_.series.goodput : result_.series.served_late)[step_] += 1;
    log(y.request, y.attempt, y.sent_s, now_, to_caller ? "ok" : "late", layers_);
    free_job(j);
    dispatch();
  }

  void on_rate(double rate) {
    ++stats_->events;
    for (uint32_t j : in_service_) {
      Job& y = jobs_[j];
      y.work_left = std::max(0.0, y.work_left - (now_ - y.last_s) * rate_);
      y.last_s = now_;
      ++y.gen;  // the completion scheduled at the old rate is stale
      if (rate > 0) push(now_ + y.work_left / rate, kComplete, j, y.gen);
    }
    rate_ = rate;
    dispatch();
  }

  void dispatch() {
    while (rate_ > 0 && busy_ < slots_ && queued_ > 0) {
      uint32_t j = s_.server.discipline == QueueDiscipline::codel ? codel_dequeue() : take_next();
      if (j == kNone) return;
      start_service(j);
    }
  }

  // The next queued job, by the discipline (FIFO for CoDel too).
  uint32_t take_next() {
    bool lifo = s_.server.discipline == QueueDiscipline::lifo;
    for (;;) {
      if (queue_.empty()) return kNone;
      uint32_t j = lifo ? queue_.back() : queue_.front();
      if (lifo)
        queue_.pop_back();
      else
        queue_.pop_front();
      if (jobs_[j].state == kShed) {
        free_job(j);
        continue;
      }
      --queued_;
      return j;
    }
  }

  // CoDel (RFC 8289) at dequeue: once the queueing delay has stayed above
  // target for an interval, drop at the head at intervals shrinking as
  // interval / sqrt(drops).
  uint32_t codel_pop(bool& ok_to_drop) {
    ok_to_drop = false;
    uint32_t j = take_next();
    if (j == kNone) {
      above_since_set_ = false;
      return kNone;
    }
    double sojourn = now_ - jobs_[j].sent_s;
    if (sojourn < s_.server.codel_target_s || queued_ == 0) {
      above_since_set_ = false;
    } else if (!above_since_set_) {
      above_since_set_ = true;
      first_above_ = now_ + s_.server.codel_interval_s;
    } else if (now_ >= first_above_) {
      ok_to_drop = true;
    }
    return j;
  }

  double control_law(double t) const {
    return t + s_.server.codel_interval_s / std::sqrt(static_cast<double>(drop_count_));
  }

  void codel_drop(uint32_t j) {
    change_in_system(-1);
    refuse(j);
  }

  uint32_t codel_dequeue() {
    bool ok = false;
    uint32_t j = codel_pop(ok);
    if (j == kNone) {
      dropping_ = false;
      return kNone;
    }
    if (dropping_) {
      if (!ok) {
        dropping_ = false;
      } else {
        while (dropping_ && now_ >= drop_next_) {
          codel_drop(j);
          ++drop_count_;
          j = codel_pop(ok);
          if (j == kNone) {
            dropping_ = false;
            return kNone;
          }
          if (!ok)
            dropping_ = false;
          else
            drop_next_ = control_law(drop_next_);
        }
      }
    } else if (ok) {
      codel_drop(j);
      j = codel_pop(ok);
      dropping_ = true;
      uint64_t delta = drop_count_ - last_drop_count_;
      drop_count_ = delta > 1 && now_ - drop_next_ < 16 * s_.server.codel_interval_s ? delta : 1;
      drop_next_ = control_law(now_);
      last_drop_count_ = drop_count_;
    }
    return j;
  }

  // ---- the end --------------------------------------------------------------
  void finish() {
    now_ = s_.horizon_s;
    change_in_system(0);
    result_.in_flight = static_cast<double>(live_users_);
    stats_->peak_calls = calls_.peak();
    stats_->peak_jobs = jobs_.peak();
    if (!log_) return;
    // Attempts still out at the end: at the server, or with a layer below.
    for (uint32_t j = 0; j < jobs_.slots(); ++j) {
      const Job& y = jobs_[j];
      if (y.state != kQueued && y.state != kInService) continue;
      const Call& x = calls_[y.caller];
      bool waited = x.gen == y.caller_gen && x.state == kWaiting;
      log(y.request, y.attempt, y.sent_s, kNaN, waited ? "in_flight" : "timeout", layers_);
    }
    for (uint32_t c = 0; c < calls_.slots(); ++c) {
      const Call& x = calls_[c];
      if (x.state == kWaiting && x.layer < layers_ - 1)
        log(x.request, x.attempt, x.sent_s, kNaN, "in_flight", x.layer + 1);
    }
  }

  void log(uint32_t request, int attempt, double sent, double done, const char* outcome,
           int layer) {
    if (log_) log_->row({request, attempt, sent, done, outcome, layer});
  }

  Workspace& w_;
  const Scenario& s_;
  int steps_;
  ClientPolicy policy_;
  std::vector<int> retries_;
  std::vector<double> timeout_;
  int layers_;
  agent::Rng rng_;
  AttemptSink* log_;
  AgentStats own_stats_;
  AgentStats* stats_;
  RunResult result_;
  std::vector<RetryBudget> budgets_;
  bool budget_on_ = false;

  int step_ = 0;
  double now_ = 0;
  uint64_t seq_ = 0;
  std::vector<Event>& heap_;
  std::vector<TimerFifo>& timers_;
  TimerFifo& deadlines_;
  std::vector<double>& arrivals_;
  size_t arrival_pos_ = 0;
  double carry_ = 0;

  Pool<Call>& calls_;
  Pool<Job>& jobs_;
  std::vector<double> live_att_, live_ret_;
  std::vector<double> held_;  // retries in backoff, per layer (Envoy counts them)
  std::vector<double> credit_, layer_first_;
  uint32_t next_request_ = 0;
  uint64_t live_users_ = 0;

  int slots_ = 1;
  int busy_ = 0;
  double rate_ = 1;  // capacity factor: work done per second of service
  double mean_service_s_ = 0, sigma_ = 0, log_mu_ = 0;
  Ring& queue_;
  double queued_ = 0;  // waiting (not in service, not shed)
  long in_system_ = 0;
  double area_t_ = 0;
  std::vector<uint32_t>& in_service_;
  int incident_first_ = 0, incident_end_ = 0;

  bool above_since_set_ = false, dropping_ = false;
  double first_above_ = 0, drop_next_ = 0;
  uint64_t drop_count_ = 0, last_drop_count_ = 0;
};

}  // namespace

std::vector<double> layer_timeouts(const Scenario& s) {
  return ClientPolicy::of(s, Engine::agent).layer_timeouts_s;
}

void validate_agent(const Scenario& s, const RunLimits& limits) {
  layer_timeouts(s);
  if (s.seed != std::floor(s.seed))
    throw InputError("seed: " + number_text(s.seed) + " must be a whole number");
  double surge = std::max(1.0, s.incident.demand_factor);
  if (s.demand.process == DemandProcess::bursty) surge *= s.demand.burst_factor;
  double requests = s.demand.rate_per_s * s.horizon_s * surge;
  if (requests > limits.max_agent_requests)
    throw InputError("demand.rate_per_s: " + number_text(s.demand.rate_per_s) + " /s over " +
                     number_text(s.horizon_s) + " s is up to " + number_text(requests) +
                     " requests; the agent engine's limit is " +
                     number_text(limits.max_agent_requests));
}

RunResult run_agent(const Scenario& s, const AgentOptions& options) {
  WorkspaceLease lease;
  return AgentEngine(s, options, lease.get()).run();
}

}  // namespace retrystorm
