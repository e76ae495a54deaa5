// The agent engine: the clients (user requests, the calls of each retrying
// layer, their timeouts, budgets and deadlines) and the event loop; the
// server (slots, service, its queue) is server.hpp. One event loop over five
// sources, merged in time order (the kernel: engines/event_queue.hpp):
//   - the arrivals of the current step (generated a step ahead, so the budget
//     can be told the step's first attempts before any of them is sent);
//   - one timer lane per retrying layer (a layer's timeout is constant, so its
//     timers are created, and fire, in time order: no heap needed);
//   - the server's completions, a small heap of their own (a stuck run keeps
//     thousands of retries in backoff, and each completion would otherwise
//     climb and descend their heap);
//   - a calendar of backoff retries and capacity changes (a small heap of
//     those due soon, buckets for the later ones: engines/calendar_queue.hpp);
//   - a deadline lane of user requests (client.deadline_s is constant too).
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
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "engines/agent/arrivals.hpp"
#include "engines/agent/entities.hpp"
#include "engines/agent/server.hpp"
#include "engines/calendar_queue.hpp"
#include "engines/event_queue.hpp"
#include "engines/graph/graph_engine.hpp"
#include "engines/incident_window.hpp"
#include "engines/workspace_shelf.hpp"
#include "model/keys.hpp"
#include "parallel/cancel.hpp"
#include "policies/adaptive_limiter.hpp"
#include "policies/adaptive_throttle.hpp"
#include "policies/backoff.hpp"
#include "policies/circuit_breaker.hpp"
#include "policies/client_guards.hpp"
#include "policies/client_policy.hpp"
#include "policies/outlier_detection.hpp"
#include "policies/retry_state.hpp"
#include "policies/server_limiter.hpp"
#include "random/rng.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

using namespace agent;  // the entities and the server
using request_log::AttemptOutcome;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A deadline goes after every layer's timeout at its instant (those count
// layers below 2^16), before retries.
constexpr uint64_t kDeadlineOrder = order_of(kTimeout, uint64_t{1} << 16);
// A late shed (server.shed_lag_s) goes after the deadlines at its instant.
constexpr uint64_t kShedOrder = order_of(kTimeout, (uint64_t{1} << 16) + 1);
constexpr uint64_t kArrivalOrder = order_of(kArrival);

// A timeout names its call; a deadline names the user request's call and,
// as its generation, the request's number.
using TimerLane = EventLane<EntityRef>;

// The budget of one layer: its own ratio, not compounded over the stack
// (each layer's budget counts its own first attempts and retries).
ClientPolicy one_layer(const ClientPolicy& policy, int layer) {
  ClientPolicy::Settings settings = policy.settings();
  settings.layer_retries = {policy.retries(layer)};
  return ClientPolicy(std::move(settings));
}

// The same layer's budget for one client instance: gRPC keeps its retry
// throttle per channel (grpc-go retryThrottler, C-core
// ServerRetryThrottleData), so each client has max_tokens of its own.
ClientPolicy one_channel(const ClientPolicy& layer_policy) {
  ClientPolicy::Settings settings = layer_policy.settings();
  settings.budget.clients = 1;
  return ClientPolicy(std::move(settings));
}

// The memory of a run, kept for the next one (engines/workspace_shelf.hpp).
// The demand a token bucket is sized from: demand.rate_per_s, or with
// closed-loop clients (which do not read it) the most they send, each one
// request per think time.
double base_demand_per_s(const Scenario& s) {
  return s.demand.clients > 0 ? s.demand.clients / s.demand.think_s : s.demand.rate_per_s;
}

struct Workspace {
  Pool<Call> calls;
  ServerMemory server;
  std::vector<ServerMemory> hosts;  // the other hosts' queues and slots (server.hosts)
  CalendarQueue<EntityRef> events;  // backoff retries and capacity changes
  Events completions;               // the server's: few at a time, kept out of the retries' heap
  std::vector<TimerLane> timers;
  TimerLane deadlines;
  TimerLane sheds;  // jobs whose caller gave up, shed server.shed_lag_s later
  std::vector<double> arrivals;

  // `bucket_s`: the retries' calendar (engines/calendar_queue.hpp).
  void reset(size_t layers, double bucket_s) {
    calls.clear();
    server.clear();
    for (ServerMemory& host : hosts) host.clear();
    events.set_width(bucket_s);
    completions.clear();
    if (timers.size() < layers) timers.resize(layers);
    for (size_t layer = 0; layer < timers.size(); ++layer) {  // inner layers' timeouts first
      timers[layer].clear();
      timers[layer].set_order(order_of(kTimeout, layers - 1 - std::min(layer, layers - 1)));
    }
    deadlines.clear();
    deadlines.set_order(kDeadlineOrder);
    sheds.clear();
    sheds.set_order(kShedOrder);
    arrivals.clear();
  }
  size_t entities() const { return calls.slots() + server.jobs.slots(); }
};

// kPlain: a run with one retrying layer that does not hedge, one host, and
// none of the client's guards or rate limiter, the concurrency filter,
// injected errors, the request log or a splitting walk (plain_run). Most
// runs are plain; their engine is compiled apart, with the branches of
// those features gone (docs/agent-engine.md, "Performance").
template <bool kPlain>
class AgentEngine {
 public:
  AgentEngine(const Scenario& s, const AgentOptions& options, Workspace& workspace)
      : w_(workspace),
        s_(s),
        steps_(s.steps()),
        policy_(ClientPolicy::of(s, Engine::agent)),
        retries_(policy_.layer_retries()),
        timeout_(policy_.layer_timeouts_s()),
        layers_(static_cast<int>(retries_.size())),
        rng_(static_cast<uint64_t>(s.seed)),
        log_(options.log),
        stats_out_(options.stats),
        split_(options.split),
        guards_(s),
        events_(workspace.events),
        completions_(workspace.completions),
        deadlines_(workspace.deadlines),
        sheds_(workspace.sheds),
        arrivals_(s, rng_, workspace.arrivals),
        calls_(workspace.calls),
        attempts_in_flight_(static_cast<size_t>(layers()), 0),
        retries_in_flight_(static_cast<size_t>(layers()), 0),
        retries_in_backoff_(static_cast<size_t>(layers()), 0),
        hedge_slots_(static_cast<size_t>(layers()), 0),
        layer_first_(static_cast<size_t>(layers()), 0.0) {
    // A sixteenth of a step per bucket: a few dozen retries each in a stuck run.
    w_.reset(static_cast<size_t>(layers()), s.step_s / 16);
    timers_ = w_.timers.data();  // one hop less on every event than through the vector
    build_hosts(s);
    if (log_)
      for (Server& server : servers_) server.note_jobs(w_.server.notes);  // the pool's notes
    reserve_jobs(s);
    result_.scenario = s;
    result_.series.resize(static_cast<size_t>(steps_));
    for (int layer = 0; layer < layers(); ++layer)
      retry_.emplace_back(policy_,
                          RetryBudget(one_layer(policy_, layer), base_demand_per_s(s), s.step_s));
    budget_on_ = retry_[0].budget().enabled();
    envoy_budget_ = policy_.budget().kind == BudgetKind::envoy_concurrency;
    deadlines_on_ = policy_.deadline_rule() == DeadlineRule::fires;
    late_shed_ = s.server.shed_abandoned && s.server.shed_lag_s > 0;
    moves_ladder_ = policy_.pushback() != Pushback::ignore && s.server.retry_after_s > 0;
    for (int layer = 0; layer < layers(); ++layer)
      hedged_.push_back(static_cast<uint8_t>(policy_.hedging(layer)));
    if (policy_.rate_limiter() == RateLimiter::aws_adaptive)  // one per client instance
      limiters_.assign(static_cast<size_t>(std::llround(s.client.budget.clients)),
                       AdaptiveRateLimiter(0));
    clients_ = guards_.clients();
    if (policy_.budget().kind == BudgetKind::grpc_throttling && clients_ > 1)
      for (int layer = 0; layer < layers(); ++layer) {
        channel_retry_.emplace_back();
        for (size_t c = 0; c < clients_; ++c)
          channel_retry_.back().emplace_back(
              policy_,
              RetryBudget(one_channel(one_layer(policy_, layer)), base_demand_per_s(s), s.step_s));
      }
    guards_on_ = guards_.on();
    pool_on_ = guards_.pool_on();
    injects_errors_ = s.server.error_share > 0;
    // Its own stream (the minRTT jitter), so that every other run keeps its bytes.
    if (s.server.concurrency.kind != ConcurrencyLimiter::none)
      concurrency_.emplace(s, static_cast<uint64_t>(s.seed) ^ 0x9e3779b97f4a7c15ULL);
    incident_ = steps_of(s);
    if (!profiles_.capacity.empty() || incident_.several()) capacity_steps();
    if (kPlain && (layers_ != 1 || hedged_[0] || guards_on_ || pool_on_ || !limiters_.empty() ||
                   servers_.size() > 1 || concurrency_ || injects_errors_ || log_ || split_))
      throw std::logic_error("agent engine: plain_run let a run with more than it has through");
  }

  // With a capacity profile: each step's capacity multiplier, the incident's
  // included, and a rate change wherever it differs from the step before
  // (with hosts, also where the hosts the incident spares change).
  void capacity_steps() {
    double before = 1, spared_before = 1;
    for (int t = 0; t < steps_; ++t) {
      const double f = capacity_factor(t, true), spared = capacity_factor(t, false);
      rate_of_step_.push_back(f);
      if (f != before || (several_hosts() && spared != spared_before))
        events_.push(t * s_.step_s, kRate, {static_cast<uint32_t>(t), 0});
      before = f;
      spared_before = spared;
    }
  }

  // Step t's capacity multiplier at a host the incident hits, or spares.
  double capacity_factor(int t, bool hit) const {
    double f = hit && incident_.contains(t) ? s_.incident.capacity_factor : 1.0;
    if (!profiles_.capacity.empty()) f *= profiles_.capacity_at(step_span(s_, t, steps_));
    return f;
  }

  // Step t's capacity over the dependency's, all hosts together.
  double capacity_share(int t, bool incident) const {
    if (!several_hosts())
      return rate_of_step_.empty() ? (incident ? s_.incident.capacity_factor : 1.0)
                                   : rate_of_step_[t];
    const double hit = double(hit_hosts_) / double(servers_.size());
    return hit * capacity_factor(t, true) + (1 - hit) * capacity_factor(t, false);
  }

  // ---- the dependency's hosts (server.hosts; docs/policies.md, "Outlier
  // detection") ----
  // One server per host, each with its share of the capacity, queue and
  // slots; the jobs of all live in one pool. One host: the server as it was.
  void build_hosts(const Scenario& s) {
    const int n = s.server.hosts;
    hit_hosts_ = static_cast<uint8_t>(s.incident.hosts > 0 ? std::min(s.incident.hosts, n) : n);
    if (n <= 1) {
      servers_.emplace_back(s.server, w_.server, w_.completions, rng_);
      return;
    }
    host_specs_.assign(static_cast<size_t>(n), s.server);
    for (ServerSpec& spec : host_specs_) {
      spec.capacity_per_s /= n;
      if (spec.queue_limit > 0) spec.queue_limit = std::max(1.0, std::ceil(spec.queue_limit / n));
      spec.slots /= n;  // a multiple of n (validate_hosts); 0: one slot each
    }
    if (w_.hosts.size() + 1 < size_t(n)) w_.hosts.resize(size_t(n) - 1);
    servers_.reserve(size_t(n));
    servers_.emplace_back(host_specs_[0], w_.server, w_.completions, rng_);
    for (size_t h = 1; h < size_t(n); ++h)
      servers_.emplace_back(host_specs_[h], w_.hosts[h - 1], w_.server.jobs, w_.completions, rng_);
    for (size_t c = 0; c < guards_.clients(); ++c) pickers_.emplace_back(s.client.outlier, n, c);
    outlier_on_ = s.client.outlier.consecutive_5xx > 0;
    host_totals_.assign(size_t(n), {});
  }

  // Host 0 answers for the pool of jobs every host shares.
  Server& jobs() { return servers_[0]; }
  // Which host serves the job (kept beside the pool: a job is 24 bytes).
  uint8_t host_of(uint32_t job_id) const { return several_hosts() ? job_hosts_[job_id] : 0; }
  void set_host(uint32_t job_id, uint8_t host) { set_beside(job_hosts_, job_id, host); }

  long in_system() const {
    long n = 0;
    for (const Server& server : servers_) n += server.in_system();
    return n;
  }

  // The call's client picks the host of its next attempt: false when no
  // host is left to pick.
  bool pick_host(Call& call) {
    int host = pickers_[call.request % pickers_.size()].pick(now_);
    if (host < 0) return false;
    host_totals_[size_t(host)].attempts += 1;
    call.host = static_cast<uint8_t>(host);
    return true;
  }

  // Every host ejected, and no panic: Envoy answers 503 ("no healthy
  // upstream") at once and its router does not retry it (router.cc,
  // Filter::doRetry); the layer above hears a 503.
  void no_healthy_host(uint32_t call_id) {
    Call& call = calls_[call_id];
    result_.series.refused_locally[step_] += 1;
    log(call.request, call.attempt, now_, now_, AttemptOutcome::rejected, layers());
    end_attempt(call, call.gen);
    call_fails(call_id);
  }

  // The client's outlier detection hears how its attempt at a host ended
  // (`five_xx`: a 5xx, a timeout, a refused connection or a reset).
  void outlier_heard(const Call& call, bool five_xx) {
    if (outlier_on()) pickers_[call.request % pickers_.size()].heard(call.host, five_xx, now_);
  }

  // Per host at the end: ejected time (the clients' mean) and ejections (all clients').
  void host_totals() {
    for (size_t h = 0; h < host_totals_.size(); ++h) {
      for (OutlierDetector& picker : pickers_) {
        host_totals_[h].ejected_s += picker.ejected_s(int(h), now_) / double(pickers_.size());
        host_totals_[h].ejections += double(picker.ejections(int(h)));
      }
    }
    result_.hosts = std::move(host_totals_);
  }

  // A queue that never drains keeps every attempt sent as a job: room for
  // all of them from the start, so that the pool does not double (the old
  // and the new buffer both held, every job copied) while the run is stuck.
  // Only for pools that would be mapped (LargeAllocator), at most 1 GiB.
  void reserve_jobs(const Scenario& s) {
    double attempts = s.requests_bound() * s.attempts();
    double bytes = std::min(attempts * sizeof(Job), double(size_t{1} << 30));
    if (bytes >= double(LargeAllocator<Job>::kMapped))
      w_.server.jobs.reserve(size_t(bytes / sizeof(Job)));
  }

  // What the run has: a plain run (kPlain) has none of it, as the compiler knows.
  int layers() const { return kPlain ? 1 : layers_; }
  bool hedged(int layer) const { return !kPlain && hedged_[layer]; }
  bool guards_on() const { return !kPlain && guards_on_; }
  bool pool_on() const { return !kPlain && pool_on_; }
  bool rate_limited() const { return !kPlain && !limiters_.empty(); }
  bool several_hosts() const { return !kPlain && servers_.size() > 1; }
  bool outlier_on() const { return !kPlain && outlier_on_; }
  bool limits_concurrency() const { return !kPlain && concurrency_.has_value(); }
  bool injects_errors() const { return !kPlain && injects_errors_; }
  bool logging() const { return !kPlain && log_; }
  bool splitting() const { return !kPlain && split_; }

  // retry_ points at policy_: an engine stays where it was built.
  AgentEngine(const AgentEngine&) = delete;
  AgentEngine& operator=(const AgentEngine&) = delete;

  RunResult run() {
    // A walk whose path starts with a reseed before any event: its own stream.
    if (splitting() && !split_->reseeds.empty() && split_->reseeds[0].after_events == 0)
      rng_ = Rng(split_->reseeds[next_reseed_++].seed);
    if (rate_of_step_.empty() && !incident_.empty() && s_.incident.capacity_factor != 1) {
      events_.push(incident_.first * s_.step_s, kRate, {0, 0});
      events_.push(incident_.end * s_.step_s, kRate, {1, 0});
    }
    auto& call = result_.series;
    if (arrivals_.closed()) arrivals_.start_clients();
    for (int t = 0; t < steps_; ++t) {
      step_ = t;
      bool incident = incident_.contains(t);
      auto [start, end] = step_span(s_, t, steps_);
      call.t_s[t] = start;
      call.capacity[t] = s_.server.capacity_per_s * s_.step_s * capacity_share(t, incident);
      double first = static_cast<double>(arrivals_.generate(start, end, demand_factor(t)));
      call.first_attempts[t] = first;
      result_.user_requests += first;
      // Closed loop: the budget hears the previous step's first attempts.
      retry_[0].budget().begin_step(arrivals_.closed() ? (t > 0 ? call.first_attempts[t - 1] : 0)
                                                       : first);
      for (int layer = 1; layer < layers(); ++layer) {  // inner layers: the previous step's calls
        retry_[layer].budget().begin_step(layer_first_[layer]);
        layer_first_[layer] = 0;
      }
      run_until(end);
      call.backlog[t] = static_cast<double>(in_system());
      call.pooled[t] = static_cast<double>(guards_.waiting());
      if (stopped_) break;
    }
    finish();
    return std::move(result_);
  }

 private:
  // Draws a backoff from [low, high) with the run's generator.
  auto draw() {
    return [this](double low, double high) { return low + (high - low) * rng_.uniform(); };
  }

  // ---- the event loop -----------------------------------------------------
  enum Source {
    kFromQueue,
    kFromCompletions,
    kFromArrivals,
    kFromDeadlines,
    kFromSheds,
    kFromTimers  // + layer
  };

  void run_until(double end) {
    for (;;) {
      EventKey next = events_.next_key();
      int source = kFromQueue;
      // Without branches: which source is next is a coin toss.
      auto consider = [&](EventKey key, int from) {
        bool earlier = before(key, next);
        next = earlier ? key : next;
        source = earlier ? from : source;
      };
      // Completions are a priority class of their own: two sources never
      // tie, and the order is the one a single queue would give.
      consider(completions_.next_key(), kFromCompletions);
      consider({arrivals_.next(), kArrivalOrder}, kFromArrivals);
      for (int layer = 0; layer < layers(); ++layer)
        consider(timers_[layer].next_key(), kFromTimers + layer);
      if (deadlines_on_) consider(deadlines_.next_key(), kFromDeadlines);
      if (late_shed_) consider(sheds_.next_key(), kFromSheds);
      if (!(next.t < end)) return;
      now_ = next.t;
      poll_();
      if (source == kFromArrivals) {
        arrivals_.take();
        on_arrival();
      } else if (source == kFromCompletions) {
        fire_completion();
      } else if (source == kFromQueue) {
        fire_queued();
      } else if (source == kFromDeadlines) {
        fire_deadline();
      } else if (source == kFromSheds) {
        fire_shed();
      } else {
        fire_timeout(source - kFromTimers);
      }
      if (splitting() && split_event()) [[unlikely]]
        return;
    }
  }

  // Step t's demand multiplier: the incident's and the profile's.
  double demand_factor(int t) const {
    double demand = incident_.contains(t) ? s_.incident.demand_factor : 1.0;
    if (profiles_.any) demand *= profiles_.demand_at(step_span(s_, t, steps_));
    return demand;
  }

  // A reseeded walk draws the rest of the step's arrivals anew.
  void redraw_arrivals() {
    const double end = step_span(s_, step_, steps_).end;
    const auto more = static_cast<double>(arrivals_.redraw_from(now_, end, demand_factor(step_)));
    result_.series.first_attempts[step_] += more;
    result_.user_requests += more;
  }

  // After each event of a splitting walk: restart the generator where its
  // path says, and stop once past its last reseed at the backlog asked for
  // (the walk's earlier stretch is a replay and stayed below it).
  bool split_event() {
    ++split_events_;
    const std::vector<Reseed>& path = split_->reseeds;
    if (next_reseed_ < path.size() && path[next_reseed_].after_events == split_events_) {
      rng_ = Rng(path[next_reseed_++].seed);
      redraw_arrivals();
    }
    if (split_->stop_at_backlog <= 0 || next_reseed_ < path.size() ||
        static_cast<int64_t>(in_system()) < split_->stop_at_backlog)
      return false;
    split_->stopped_after_events = split_events_;
    split_->stopped_s = now_;
    stopped_ = true;
    return true;
  }

  void fire_completion() {
    const EntityRef job = completions_.top().what;
    completions_.pop();
    on_complete(job.index, job.generation);
  }

  void fire_queued() {
    Events::Event event = events_.top();
    events_.pop();
    switch (event.key.order >> kPriorityShift) {
      case kRate:
        if (several_hosts())
          on_rate_of_step(rate_of_step_.empty()
                              ? (event.what.index == 0 ? incident_.first : incident_.end)
                              : static_cast<int>(event.what.index));
        else if (!rate_of_step_.empty())
          on_rate(rate_of_step_[event.what.index]);
        else
          on_rate(event.what.index == 0 ? s_.incident.capacity_factor : 1.0);
        break;
      default:
        on_retry(event.what.index, event.what.generation);
        break;
    }
  }

  void fire_deadline() {
    EntityRef user = deadlines_.front().what;
    deadlines_.pop();
    if (is_user_request(user)) on_deadline(user.index);
  }

  // The server learns, server.shed_lag_s late, that a caller gave up; the job
  // may have started meanwhile, and is served in vain (docs/agent-engine.md,
  // "Delays between caller and server").
  void fire_shed() {
    EntityRef job = sheds_.front().what;
    sheds_.pop();
    if (jobs().still_queued(job.index, job.generation)) shed_job(job.index);
  }

  void fire_timeout(int layer) {
    EntityRef timed = timers_[layer].front().what;
    timers_[layer].pop();
    if (!waits_for(timed)) return;
    if (hedged(layer))
      on_hedge_due(timed.index);
    else
      on_timeout(timed.index);
  }

  // The call still waits for the attempt the timer was set for, its latest.
  bool waits_for(EntityRef timed) {
    const Call& call = calls_[timed.index];
    return call.gen == timed.generation && call.state == kWaiting;
  }

  // The call still waits for its attempt of generation `gen`: the latest, or
  // (hedging) an earlier one still in flight.
  static bool awaits(const Call& call, uint32_t gen) {
    return call.state == kWaiting && gen - call.gen0 <= call.gen - call.gen0;
  }
  // The number of the call's attempt of generation `gen` (each attempt sent
  // moves the generation by one).
  static int attempt_of(const Call& call, uint32_t gen) {
    return call.attempt - static_cast<int>(call.gen - gen);
  }

  // ---- clients --------------------------------------------------------------
  void on_arrival() {
    ++stats_.events;
    ++live_users_;
    if (arrivals_.closed()) {  // counted as they come: nobody knows them ahead
      result_.series.first_attempts[step_] += 1;
      result_.user_requests += 1;
    }
    uint32_t request = next_request_++;
    uint32_t call_id = new_call(kNone, 0, 0, request, true, now_);
    if (deadlines_on_) arm_deadline(call_id, request);
    send_attempt(call_id);
  }

  // ---- deadlines --------------------------------------------------------------
  // Envoy's route timeout and gRPC's deadline end the request when they fire,
  // in backoff or mid-attempt; the decision after a failure does not look at
  // them (docs/agent-engine.md).
  void arm_deadline(uint32_t call_id, uint32_t request) {
    deadlines_.push(now_ + policy_.deadline_s(), {call_id, request});
    deadlines_.drop_stale_beyond(
        live_users_, [this](const TimerLane::Event& event) { return is_user_request(event.what); });
  }

  // The deadline's user request is still being served by the call it names.
  bool is_user_request(EntityRef user) {
    const Call& call = calls_[user.index];
    return call.state != kCallFree && call.parent == kNone && call.request == user.generation;
  }

  void on_deadline(uint32_t call_id) {
    ++stats_.events;
    Call& call = calls_[call_id];
    // An abandoned attempt is heard as a timeout (Envoy: a 504) by the
    // client's outlier detection, rate limiter and breaker: a half-open
    // breaker's trial must end, or the breaker stays half-open for good.
    if (call.state == kWaiting && hedged(call.layer)) {
      if (call.hedges_out > 0) heard(call, false);
      cancel_hedges(call_id);
    } else if (call.state == kWaiting) {
      heard(call, false);
      end_attempt(call, call.gen);
      abandon_attempt(call_id);
    } else if (call.state == kBackoff) {
      retries_in_backoff_[call.layer] -= 1;  // the retry in backoff gives its slot back
    } else if (call.state == kHeld) {
      // Never sent: it waited for its rate limiter's token. A retry is
      // counted as one, as a retry waiting for a connection is.
      if (!(call.first && call.attempt == 0)) result_.series.retries[step_] += 1;
      result_.series.refused_locally[step_] += 1;
    } else if (call.state == kPooled) {
      // Never sent: the pool held it (or had just handed it a connection,
      // which its release passes on).
      leave_pool(call);
      result_.series.refused_locally[step_] += 1;
      if (!ClientGuards::holds_connection(call.ticket)) {
        guards_.left_pending(call.request % clients_);  // no longer waits for a connection
      }
    }
    call_fails(call_id);
  }

  uint32_t new_call(uint32_t parent, uint32_t parent_gen, int layer, uint32_t request, bool first,
                    double start_s) {
    uint32_t call_id = calls_.alloc();
    Call& call = calls_[call_id];
    call.start_s = start_s;
    call.sent_s = start_s;
    call.made_s = now_;
    call.parent = parent;
    call.parent_gen = parent_gen;
    call.hedges_out = 0;
    call.first_out = false;
    call.hedge_due = false;
    call.request = request;
    call.job = kNone;
    call.attempt = 0;
    call.layer = static_cast<uint8_t>(layer);
    call.state = kBackoff;
    call.first = first;
    call.heard = {};
    call.host = 0;
    call.holds_slot = false;
    call.ticket = 0;
    if (moves_ladder_) set_beside(ladder_offsets_, call_id, uint16_t{0});
    return call_id;
  }

  // The call's Failure::ladder_offset, kept beside the pool (a call fills
  // its cache line) and only in runs whose answers carry a waited pushback.
  int ladder_offset(uint32_t call_id) const { return moves_ladder_ ? ladder_offsets_[call_id] : 0; }
  void keep_ladder_offset(uint32_t call_id, const RetryDecision& d) {
    if (moves_ladder_) ladder_offsets_[call_id] = static_cast<uint16_t>(d.ladder_offset);
  }

  // A call freed while its attempt still held a max_requests slot (its
  // request ended by a deadline, say) gives the slot back.
  void free_call(uint32_t call_id) {
    Call& call = calls_[call_id];
    if (guards_on()) release_guards(call);
    call.ticket = 0;
    free_entity(calls_, call_id, kCallFree);
  }

  // What the innermost attempt already has: its rate limiter's token
  // (client.rate_limiter), then a connection of its pool (client.max_connections).
  enum class Ready { none, token, connection };
  void send_attempt(uint32_t call_id, Ready ready = Ready::none) {
    if (ready == Ready::none && rate_limited() && held_for_token(call_id)) return;
    if (ready != Ready::connection && pool_on() && held_for_connection(call_id)) return;
    Call& call = calls_[call_id];
    ++call.attempt;
    ++call.gen;
    int layer = call.layer;
    bool hedging = hedged(layer);
    if (!hedging || call.attempt == 1) call.gen0 = call.gen;  // earlier hedges still count
    if (hedging) {
      call.hedges_out += 1;
      call.first_out = call.first_out || call.attempt == 1;
    }
    call.state = kWaiting;
    call.sent_s = now_;
    attempts_in_flight_[layer] += 1;
    if (call.attempt > 1) retries_in_flight_[layer] += 1;
    // The last hedge has no timer, unless it holds Envoy's slot: its per-try
    // timeout gives the slot back (resetRetry, then no retries left).
    if (!hedging || call.attempt <= retries_[layer] || call.holds_slot) {
      // A timer whose attempt ended does nothing when it fires (fire_timeout):
      // those at the front go now, the others once the lane is long.
      auto live = [this](const TimerLane::Event& event) { return waits_for(event.what); };
      timers_[layer].drop_stale_front(live);
      timers_[layer].push(now_ + timeout_[layer], {call_id, call.gen});
      timers_[layer].drop_stale_beyond(static_cast<size_t>(attempts_in_flight_[layer]), live);
    }
    if (layer == layers() - 1) {
      send_job(call_id);
      return;
    }
    uint32_t gen = call.gen, request = call.request;
    bool first = call.first && call.attempt == 1;
    double start = call.start_s;
    uint32_t child = new_call(call_id, gen, layer + 1, request, first, start);  // call may move
    layer_first_[layer + 1] += 1;
    send_attempt(child);
  }

  // ---- Envoy's connection pool (docs/policies.md, "Envoy's cluster
  // thresholds as bulkheads") ----
  // The innermost layer's attempt asks its client's pool for a connection:
  // true when it waits for one (kPooled; the connection's release sends it).
  // An overflow goes on, to be refused in send_job like max_requests'.
  bool held_for_connection(uint32_t call_id) {
    Call& call = calls_[call_id];
    if (call.layer != layers() - 1) return false;
    uint64_t waiter = (uint64_t{call_id} << 32) | (call.gen + 1);
    switch (guards_.ask_connection(call.request % clients_, waiter, call.ticket)) {
      case ClientGuards::PoolAnswer::go:
        return false;
      case ClientGuards::PoolAnswer::overflow:
        pool_overflow_ = true;
        return false;
      case ClientGuards::PoolAnswer::wait:
        break;
    }
    // A retry is counted when it waits (it passed the budget); send_job
    // does not count it again when the connection comes.
    if (!(call.first && call.attempt == 0)) result_.series.retries[step_] += 1;
    ++call.gen;
    call.state = kPooled;
    pooled_ += {1.0, call.attempt >= 1 ? 1.0 : 0.0};
    return true;
  }

  // The call's attempt stops waiting for a connection (it got one, or its
  // deadline fired).
  void leave_pool(const Call& call) { pooled_ -= {1.0, call.attempt >= 1 ? 1.0 : 0.0}; }

  // An attempt let its client's max_requests slot and connection go; the
  // connection goes to the oldest attempt still waiting for one, at once.
  void release_guards(Call& call) {
    auto live = [this](uint64_t waiter) {
      const Call& c = calls_[static_cast<uint32_t>(waiter >> 32)];
      return c.state == kPooled && c.gen == static_cast<uint32_t>(waiter);
    };
    auto next = guards_.release(call.request % clients_, call.ticket, live);
    if (!next) return;
    uint32_t id = static_cast<uint32_t>(*next >> 32);
    ClientGuards::hand_connection(calls_[id].ticket);
    events_.push(now_, kRetry, {id, static_cast<uint32_t>(*next)});
  }

  // ---- AWS adaptive mode (docs/policies.md, "AWS adaptive mode") -----------
  // The innermost layer's attempt waits for its client's token: true when
  // held (a kRetry event sends it once the token is there).
  bool held_for_token(uint32_t call_id) {
    Call& call = calls_[call_id];
    if (call.layer != layers() - 1) return false;
    double at = limiters_[call.request % limiters_.size()].acquire(now_);
    if (!(at > now_)) return false;
    ++call.gen;
    call.state = kHeld;
    events_.push(at, kRetry, {call_id, call.gen});
    return true;
  }

  // The client heard an answer of the innermost layer's attempt (or gave up
  // on it): its rate limiter measures and adapts, its breaker and throttle
  // count the outcome (`ok`: answered well; `throttled`: a 429).
  void heard(const Call& call, bool ok, bool throttled = false) {
    if (call.layer != layers() - 1) return;
    outlier_heard(call, !ok && !throttled);  // a 429 is not a 5xx
    if (rate_limited()) limiters_[call.request % clients_].on_response(now_, throttled);
    if (guards_on()) guards_.heard(call.request % clients_, now_, ok, call.ticket);
  }

  // ---- client-side defenses (docs/policies.md, "Circuit breakers") ---------
  // The client's max_requests (Envoy's overflow), breaker, then throttle,
  // may refuse the innermost attempt before it is sent: it fails at once and
  // its layer does not retry it (the point of failing fast; Envoy never
  // retries an overflow: retry_state_impl.cc, wouldRetryFromReset); the
  // layer above hears a 503.
  bool refused_by_client(uint32_t call_id) {
    if (!guards_on()) return false;
    Call& call = calls_[call_id];
    auto uniform = [this] { return rng_.uniform(); };
    bool overflow = std::exchange(pool_overflow_, false);  // the pool's queue was full
    if (!overflow && guards_.admit(call.request % clients_, now_, uniform, call.ticket))
      return false;
    result_.series.refused_locally[step_] += 1;
    log(call.request, call.attempt, now_, now_, AttemptOutcome::rejected, layers());
    end_attempt(call, call.gen);
    call_fails(call_id);
    return true;
  }

  // The call's attempt of generation `gen` stopped being in flight.
  void end_attempt(Call& call, uint32_t gen) {
    int attempt = attempt_of(call, gen);
    if (guards_on()) release_guards(call);  // max_requests, the connection
    attempts_in_flight_[call.layer] -= 1;
    if (attempt > 1) retries_in_flight_[call.layer] -= 1;
    if (hedged(call.layer)) {
      call.hedges_out -= 1;
      call.first_out = call.first_out && attempt != 1;
    }
  }

  void on_timeout(uint32_t call_id) {
    ++stats_.events;
    heard(calls_[call_id], false);
    end_attempt(calls_[call_id], calls_[call_id].gen);
    abandon_attempt(call_id);
    attempt_failed(call_id, true);
  }

  // The caller of the call's current attempt stopped waiting for it.
  void abandon_attempt(uint32_t call_id) {
    const Call& call = calls_[call_id];
    if (call.layer == layers() - 1) {
      result_.series.gave_up[step_] += 1;
      shed_if_queued(call_id);
    } else {
      log(call.request, call.attempt, call.sent_s, kNaN, AttemptOutcome::timeout, call.layer + 1);
    }
  }

  // server.shed_abandoned: the server drops the call's latest attempt if it
  // has not started (server.shed_lag_s after the caller gave up).
  void shed_if_queued(uint32_t call_id) {
    const Call& call = calls_[call_id];
    if (!s_.server.shed_abandoned || call.job == kNone ||
        !jobs().queued_for(call.job, call_id, call.gen))
      return;
    if (late_shed_)
      sheds_.push(now_ + s_.server.shed_lag_s, {call.job, jobs().job(call.job).gen});
    else
      shed_job(call.job);
  }

  // ---- hedging (docs/policies.md, "Hedging") ---------------------------------
  // The layer's timeout passed with no answer: the next hedge after the
  // layer's backoff (a gRPC hedgingPolicy has none: at once) if attempts are
  // left and the budget admits it; the earlier attempts stay in flight.
  void on_hedge_due(uint32_t call_id) {
    const Call& call = calls_[call_id];
    if (call.hedge_due) return;  // the next hedge is on its way already
    ++stats_.events;
    Failure due{.layer = call.layer,
                .attempt = call.attempt,
                .timed_out = true,
                .now_s = now_,
                .start_s = call.start_s,
                .ladder_offset = ladder_offset(call_id)};
    release_hedge_slot(calls_[call_id]);
    RetryOutcome outcome = retry_of(call).on_hedge_due(due, in_flight(call.layer), draw());
    if (outcome.retries()) take_hedge_slot(calls_[call_id]);
    if (outcome.retries() && outcome.decision.delay_s <= 0)
      send_attempt(call_id);  // from the timer lane: at once
    else if (outcome.retries())
      next_hedge(call_id, outcome.decision.delay_s);
    else if (outcome.action == RetryAction::denied)
      count_denied(call);
  }

  // A hedge failed: the next hedge, or the call fails (RetryState::on_hedge_failed
  // says which answers ask for one), or it waits for the hedges still out.
  void hedge_failed(uint32_t call_id, uint32_t gen, FailureClass answer, double pushback_s) {
    Call& call = calls_[call_id];
    int layer = call.layer;
    Failure failure{.layer = layer,
                    .attempt = call.attempt,
                    .now_s = now_,
                    .start_s = call.start_s,
                    .answer = answer,
                    .pushback_s = pushback_s,
                    .ladder_offset = ladder_offset(call_id)};
    const bool latest = gen == call.gen && !call.hedge_due;
    if (latest) release_hedge_slot(call);  // Envoy decides on the latest: the slot goes back first
    auto h = retry_of(call).on_hedge_failed(failure, latest, in_flight(layer), draw());
    if (h.outcome.retries()) {
      take_hedge_slot(call);
      keep_ladder_offset(call_id, h.outcome.decision);
      return next_hedge(call_id, h.outcome.decision.delay_s);
    }
    if (h.outcome.action == RetryAction::denied) count_denied(call);
    if (!h.fatal && (call.hedges_out > 0 || call.hedge_due)) return;  // another may answer
    cancel_hedges(call_id);
    call_fails(call_id, answer);
  }

  // The next hedge after `delay_s`, as a retry in backoff (Envoy's budget
  // counts it). Through the event queue even at delay 0: a failure may come
  // from inside the server (a full queue, CoDel), which must not be re-entered.
  void next_hedge(uint32_t call_id, double delay_s) {
    Call& call = calls_[call_id];
    call.hedge_due = true;
    retries_in_backoff_[call.layer] += 1;
    events_.push(now_ + delay_s, kRetry, {call_id, call.gen});
  }

  // Envoy's budget counts one retry slot per hedging request: each hedge
  // decision first gives the slot back, then takes it again if admitted
  // (RetryStateImpl::shouldHedgeRetryPerTryTimeout is shouldRetry, which
  // begins with resetRetry); the request's end gives it back.
  void release_hedge_slot(Call& call) {
    if (!call.holds_slot) return;
    call.holds_slot = false;
    hedge_slots_[call.layer] -= 1;
  }
  void take_hedge_slot(Call& call) {
    // gRPC's hedging asks after a failure that is not the latest: a call that
    // holds its slot keeps the one it has.
    if (!envoy_budget_ || call.holds_slot) return;
    call.holds_slot = true;
    hedge_slots_[call.layer] += 1;
  }

  // The call ends (answered, failed, or its deadline fired) with hedges still
  // in flight: it stops waiting for them, as gRPC and Envoy cancel them. The
  // server hears of the latest one (shed_abandoned); the others it serves in vain.
  void cancel_hedges(uint32_t call_id) {
    Call& call = calls_[call_id];
    release_hedge_slot(call);
    if (call.hedge_due) retries_in_backoff_[call.layer] -= 1;
    call.hedge_due = false;
    int out = call.hedges_out;
    if (out == 0) return;
    attempts_in_flight_[call.layer] -= out;
    retries_in_flight_[call.layer] -= out - (call.first_out ? 1 : 0);
    call.hedges_out = 0;
    call.first_out = false;
    if (call.layer != layers() - 1) return;
    result_.series.gave_up[step_] += out;
    shed_if_queued(call_id);
  }

  // The answer to the call's attempt of generation `gen` was an error.
  void answer_failed(uint32_t call_id, uint32_t gen, FailureClass answer, double pushback_s = 0) {
    if (hedged(calls_[call_id].layer)) return hedge_failed(call_id, gen, answer, pushback_s);
    attempt_failed(call_id, false, answer, pushback_s);
  }

  // An attempt of the call failed (timed out, rejected, or the call below it
  // failed): back off and retry, or fail the call. A real system's budget
  // decides now, before the backoff (docs/agent-engine.md). Inlined into its
  // two callers: in a stuck run it follows nearly every attempt, and the call
  // cost 4% of the run's time.
  [[gnu::always_inline]] void attempt_failed(uint32_t call_id, bool timed_out,
                                             FailureClass answer = FailureClass::http_503,
                                             double pushback_s = 0) {
    Call& call = calls_[call_id];
    int layer = call.layer;
    Failure failure{.layer = layer,
                    .attempt = call.attempt,
                    .timed_out = timed_out,
                    .now_s = now_,
                    .start_s = call.start_s,
                    .answer = answer,
                    .pushback_s = pushback_s,
                    .ladder_offset = ladder_offset(call_id)};
    RetryOutcome outcome = retry_of(call).on_failure(failure, budget_in_flight(layer), draw());
    // The layer above hears the last answer; a timeout below as a gateway's 503.
    const LastHeard heard = LastHeard::of(timed_out, answer);
    if (outcome.action == RetryAction::denied) return budget_denied(call_id, heard);
    if (!outcome.retries()) return call_fails(call_id, heard.passed_up());
    keep_ladder_offset(call_id, outcome.decision);
    ++call.gen;
    call.state = kBackoff;
    call.heard = heard;
    retries_in_backoff_[layer] += 1;
    events_.push(now_ + outcome.decision.delay_s, kRetry, {call_id, call.gen});
  }

  void on_retry(uint32_t call_id, uint32_t gen) {
    Call& call = calls_[call_id];
    if (call.gen == gen && call.hedge_due) return send_due_hedge(call_id);
    if (call.gen == gen && (call.state == kHeld || call.state == kPooled)) {
      ++stats_.events;
      bool pooled = call.state == kPooled;
      if (pooled) leave_pool(call);
      counted_ = pooled;  // counted when it began to wait
      return send_attempt(call_id, pooled ? Ready::connection : Ready::token);
    }
    if (call.gen != gen || call.state != kBackoff) return;
    ++stats_.events;
    int layer = call.layer;
    retries_in_backoff_[layer] -= 1;  // from here on the retry is in flight (retries_in_flight_)
    if (retry_of(call).on_due(budget_in_flight(layer), call.heard.cause()))
      send_attempt(call_id);
    else
      budget_denied(call_id, call.heard);
  }

  // A hedge that waited its backoff goes out (admitted when it was decided).
  void send_due_hedge(uint32_t call_id) {
    ++stats_.events;
    Call& call = calls_[call_id];
    call.hedge_due = false;
    retries_in_backoff_[call.layer] -= 1;
    send_attempt(call_id);
  }

  // The retry state a call's failures ask: its layer's, or with gRPC's
  // throttling over several clients its own client's channel.
  RetryState& retry_of(const Call& call) {
    if (channel_retry_.empty()) return retry_[call.layer];
    return channel_retry_[call.layer][call.request % clients_];
  }

  // What layer's budget is told about the dependency: attempts in flight,
  // and the retries held (in backoff and in flight). Attempts waiting for a
  // connection of the innermost layer's pool count too: Envoy's budget reads
  // active + pending requests, and a retry keeps its slot while pending
  // (RetryStateImpl::shouldRetry holds it until resetRetry).
  InFlight in_flight(int layer) const {
    // A hedging layer's requests hold one slot each, however many hedges are out.
    const int64_t retries = hedged(layer) && envoy_budget_
                                ? hedge_slots_[layer]
                                : retries_in_backoff_[layer] + retries_in_flight_[layer];
    InFlight held{static_cast<double>(attempts_in_flight_[layer]), static_cast<double>(retries)};
    if (pool_on() && layer == layers() - 1) held += pooled_;
    return held;
  }
  // The same for a decision after every failure: only a budget reads it.
  InFlight budget_in_flight(int layer) {
    return retry_[layer].budget().enabled() ? in_flight(layer) : InFlight{};
  }

  // The budget refused the call's retry: the call fails at once, and its
  // caller hears what it heard last.
  void budget_denied(uint32_t call_id, LastHeard heard) {
    count_denied(calls_[call_id]);
    call_fails(call_id, heard.passed_up());
  }

  // The budget refused the call's next attempt.
  void count_denied(const Call& call) {
    result_.series.budget_denied[step_] += 1;
    log(call.request, call.attempt + 1, now_, kNaN, AttemptOutcome::budget_denied, call.layer + 1);
  }

  // A user request ended, at `heard_s` for its client: a closed-loop client
  // thinks, then sends its next one.
  void user_done(double heard_s) {
    --live_users_;
    if (arrivals_.closed()) arrivals_.client_done(heard_s);
  }

  void call_fails(uint32_t call_id, FailureClass heard = FailureClass::http_503) {
    uint32_t parent = calls_[call_id].parent, parent_gen = calls_[call_id].parent_gen;
    double made = calls_[call_id].made_s;
    free_call(call_id);
    if (parent == kNone) {
      result_.failed += 1;
      result_.series.failed[step_] += 1;
      user_done(now_);
      return;
    }
    Call& caller = calls_[parent];
    if (!awaits(caller, parent_gen)) return;  // the caller gave up on it already
    log(caller.request, attempt_of(caller, parent_gen), made, now_, AttemptOutcome::failed,
        caller.layer + 1);
    end_attempt(caller, parent_gen);
    answer_failed(parent, parent_gen, heard_above(heard));
  }

  // A response to the call's attempt of generation `gen`, sent at `sent_s`,
  // reached the call: pass it up while the callers still wait (a hedging
  // call's other hedges are cancelled). True when it reaches the user.
  bool deliver_success(uint32_t call_id, uint32_t gen, double sent_s) {
    for (;;) {
      Call& call = calls_[call_id];
      int attempt = attempt_of(call, gen);
      end_attempt(call, gen);
      if (hedged(call.layer)) cancel_hedges(call_id);
      if (budget_on_) retry_of(call).budget().on_success(1, attempt, call.heard.cause());
      if (call.layer < layers() - 1)
        log(call.request, attempt, sent_s, now_, AttemptOutcome::ok, call.layer + 1);
      uint32_t parent = call.parent, parent_gen = call.parent_gen;
      double started = call.start_s, made = call.made_s;
      free_call(call_id);
      if (parent == kNone) {
        result_.succeeded += 1;
        result_.success_latency.add(now_ + s_.server.answer_delay_s - started);
        user_done(now_ + s_.server.answer_delay_s);
        return true;
      }
      // The answer reaches each caller up the stack the delay late: one
      // whose timeout (or the deadline) comes first gives up on it.
      if (!awaits(calls_[parent], parent_gen) || !answer_in_time(calls_[parent])) return false;
      call_id = parent;
      gen = parent_gen;
      sent_s = made;  // the caller's attempt made this call
    }
  }

  // ---- at the server (server.hpp) -----------------------------------------
  // Rejected by a full queue, or dropped by CoDel: the caller hears at once.
  auto refused() {
    return [this](uint32_t job_id) { refuse(job_id); };
  }

  void send_job(uint32_t call_id) {
    Call& call = calls_[call_id];
    bool counted = std::exchange(counted_, false);  // at the pool (held_for_connection)
    if (!counted && !(call.first && call.attempt == 1)) result_.series.retries[step_] += 1;
    if (refused_by_client(call_id)) return;
    if (several_hosts() && !pick_host(call)) return no_healthy_host(call_id);
    uint32_t job_id = jobs().new_job(call_id, call, now_);
    call.job = job_id;
    if (several_hosts()) set_host(job_id, call.host);
    if (limits_concurrency() && !admitted(job_id)) return refuse(job_id, Refusal::limit);
    if (injects_error()) return inject_error(job_id);
    uint8_t host = call.host;
    servers_[host].arrive(job_id, now_, refused(), !fails_fast(host));
  }

  // The concurrency limiter lets the attempt through, or not; its ticket
  // waits beside the job for the outcome.
  bool admitted(uint32_t job_id) {
    uint32_t ticket = concurrency_->admit(now_);
    set_beside(limiter_tickets_, job_id, ticket);
    return ticket != 0;
  }

  // The concurrency limiter hears how an attempt it let through ended: an
  // answer (a sample of its latency) or none.
  void filter_heard(uint32_t job_id, const Job& job, bool answered) {
    if (!limits_concurrency()) return;
    const uint32_t ticket = limiter_tickets_[job_id];
    if (answered)
      concurrency_->on_answer(now_, job.sent_s, ticket);
    else
      concurrency_->on_cancel(now_, job.sent_s, ticket);
  }

  // ---- error injection (server.error_share; docs/policies.md) ----------------
  // Drawn only when on, so that every run without it keeps its bytes.
  bool injects_error() {
    return injects_errors() &&
           (s_.server.error_share >= 1 || rng_.uniform() < s_.server.error_share);
  }

  // The attempt fails whatever the load: answered at once as a rejection
  // is, or (timeout) never answered, its caller's timer ends it.
  void inject_error(uint32_t job_id) {
    if (s_.server.error_status != FailureClass::timeout) return refuse(job_id, Refusal::injected);
    const Job& job = jobs().job(job_id);
    filter_heard(job_id, job, false);
    result_.series.shed[step_] += 1;  // dropped unanswered, as a shed attempt is
    log_job(job_id, kNaN, AttemptOutcome::timeout);
    calls_[job.caller].job = kNone;
    jobs().release(job_id);
  }

  // Who refused: the queue (full, CoDel, an incident that fails fast), an
  // injected error (server.error_status), or the concurrency filter.
  enum class Refusal { queue, injected, limit };
  void refuse(uint32_t job_id, Refusal why = Refusal::queue) {
    const Job& job = jobs().job(job_id);
    const bool injected = why == Refusal::injected, limited = why == Refusal::limit;
    if (!limited) filter_heard(job_id, job, true);  // a refusal behind the filter is an answer
    result_.series.rejected[step_] += 1;
    log_job(job_id, now_, AttemptOutcome::rejected);
    uint32_t call_id = job.caller, caller_gen = job.caller_gen;
    const uint8_t host = host_of(job_id);
    if (several_hosts()) host_totals_[host].refused += 1;
    jobs().release(job_id);
    Call& call = calls_[call_id];
    if (!awaits(call, caller_gen)) return;
    end_attempt(call, caller_gen);
    FailureClass answer = injected           ? s_.server.error_status
                          : limited          ? FailureClass::http_503  // a local reply
                          : fails_fast(host) ? s_.incident.failure
                                             : s_.server.reject_status;
    heard(call, false, answer == FailureClass::http_429);
    // A 503 or 429 carries the server's pushback; a refused connection or a
    // reset carries no header.
    // An injected error is a broken part, not a server asking for less.
    bool pushes_back = !injected && !limited &&
                       (answer == FailureClass::http_503 || answer == FailureClass::http_429);
    answer_failed(call_id, caller_gen, answer, pushes_back ? s_.server.retry_after_s : 0);
  }

  // incident.failure other than timeout: during the incident an attempt that
  // cannot start at once is answered at once with that class.
  bool fails_fast(uint8_t host) const {
    return s_.incident.failure != FailureClass::timeout && incident_.contains(step_) &&
           host < hit_hosts_;
  }

  void shed_job(uint32_t job_id) {
    const Job& job = jobs().job(job_id);
    result_.series.shed[step_] += 1;
    log_job(job_id, kNaN, AttemptOutcome::shed);
    filter_heard(job_id, job, false);
    servers_[host_of(job_id)].shed(job_id, now_);
  }

  // server.answer_delay_s: the answer must reach the caller before it gives
  // up (its timeout, or the user's deadline) to be of use.
  bool answer_in_time(const Call& call) const {
    double delay = s_.server.answer_delay_s;
    if (delay <= 0) return true;
    // A hedging layer's timer does not give up on an attempt.
    double give_up = hedged(call.layer) ? std::numeric_limits<double>::infinity()
                                        : call.sent_s + timeout_[call.layer];
    if (deadlines_on_) give_up = std::min(give_up, call.start_s + policy_.deadline_s());
    return now_ + delay <= give_up;
  }

  void on_complete(uint32_t job_id, uint32_t gen) {
    Server& server = servers_[host_of(job_id)];
    const Job* job = server.end_service(job_id, gen, now_);
    if (!job) return;
    ++stats_.events;
    if (several_hosts()) host_totals_[host_of(job_id)].served += 1;
    filter_heard(job_id, *job, true);
    const Call& call = calls_[job->caller];
    bool to_caller = awaits(call, job->caller_gen) && answer_in_time(call);
    if (to_caller) heard(call, true);
    bool to_user = to_caller && deliver_success(job->caller, job->caller_gen, job->sent_s);
    (to_user ? result_.series.goodput : result_.series.served_late)[step_] += 1;
    log_job(job_id, now_, to_caller ? AttemptOutcome::ok : AttemptOutcome::late);
    server.release(job_id);
    server.dispatch(now_, refused());
  }

  // A capacity change at step t's start, host by host.
  void on_rate_of_step(int t) {
    ++stats_.events;
    for (size_t h = 0; h < servers_.size(); ++h) {
      double rate = capacity_factor(t, h < hit_hosts_);
      if (rate == servers_[h].rate()) continue;
      servers_[h].set_rate(rate, now_);
      servers_[h].dispatch(now_, refused());
    }
  }

  void on_rate(double rate) {
    ++stats_.events;
    servers_[0].set_rate(rate, now_);
    servers_[0].dispatch(now_, refused());
  }

  // ---- the end --------------------------------------------------------------
  void finish() {
    now_ = s_.horizon_s;
    for (Server& server : servers_) server.finish(now_, stats_);
    if (several_hosts()) host_totals();
    result_.in_flight = static_cast<double>(live_users_);
    stats_.peak_calls = calls_.peak();
    if (stats_out_) *stats_out_ = stats_;
    if (!logging()) return;
    // Attempts still out at the end: at the server, or with a layer below.
    jobs().for_each_in_flight([this](uint32_t job_id, const Job& job) {
      bool waited = awaits(calls_[job.caller], job.caller_gen);
      log_job(job_id, kNaN, waited ? AttemptOutcome::in_flight : AttemptOutcome::timeout);
    });
    const std::vector<HedgeOut> hedges = hedges_still_out();
    size_t next_hedge = 0;
    for (uint32_t call_id = 0; call_id < calls_.slots(); ++call_id) {
      const Call& call = calls_[call_id];
      if (call.state != kWaiting || call.layer >= layers() - 1) continue;
      // A hedging call waits with its latest hedge failed (its row written)
      // while the next waits its backoff: its rows are its hedges still out.
      if (hedged(call.layer)) {
        each_hedge_of(call_id, hedges, next_hedge, [&](const HedgeOut& h) {
          log(call.request, h.attempt, h.sent_s, kNaN, AttemptOutcome::in_flight, call.layer + 1);
        });
        continue;
      }
      log(call.request, call.attempt, call.sent_s, kNaN, AttemptOutcome::in_flight, call.layer + 1);
    }
  }

  // The attempts of hedging calls above the innermost layer still out at the
  // end, by call and attempt (as the graph engine's): each is a call below
  // that its caller still awaits, made when the caller sent that attempt.
  std::vector<HedgeOut> hedges_still_out() const {
    std::vector<HedgeOut> out;
    for (uint32_t call_id = 0; call_id < calls_.slots(); ++call_id) {
      const Call& below = calls_[call_id];
      if (below.state == kCallFree || below.parent == kNone) continue;
      const Call& caller = calls_[below.parent];
      if (!hedged(caller.layer) || !awaits(caller, below.parent_gen)) continue;
      out.push_back({below.parent, attempt_of(caller, below.parent_gen), below.made_s});
    }
    sort_hedges(out);
    return out;
  }

  void log(uint32_t request, int attempt, double sent, double done, AttemptOutcome outcome,
           int layer) {
    if (logging()) log_->row({request, attempt, sent, done, outcome, layer});
  }
  // A job's attempt, as the innermost layer sent it.
  void log_job(uint32_t job_id, double done, AttemptOutcome outcome) {
    if (!logging()) return;
    const JobNote note = jobs().note(job_id);
    log(note.request, note.attempt, jobs().job(job_id).sent_s, done, outcome, layers());
  }

  Workspace& w_;
  const Scenario& s_;
  int steps_;
  ClientPolicy policy_;
  std::vector<int> retries_;
  std::vector<double> timeout_;
  int layers_;
  Rng rng_;
  AttemptSink* log_;
  // Counted here and copied out at the end: a pointer the compiler cannot
  // tell apart from the engine's own numbers would cost a reload per event.
  AgentStats stats_;
  AgentStats* stats_out_;
  SplitControl* split_;  // a splitting walk, or none
  uint64_t split_events_ = 0;
  size_t next_reseed_ = 0;
  bool stopped_ = false;  // the walk reached its backlog
  CancelPoll poll_;       // the server's deadline (parallel/cancel.hpp)
  RunResult result_;
  std::vector<RetryState> retry_;  // per layer: its budget, asked with policy_
  // gRPC's throttling with several clients: per layer, one per client
  // (retry_of); empty otherwise.
  std::vector<std::vector<RetryState>> channel_retry_;
  bool budget_on_ = false;
  bool envoy_budget_ = false;  // client.budget.kind envoy_concurrency: hedges hold a slot
  bool deadlines_on_ = false;  // client.deadline_s ends user requests when it fires
  bool late_shed_ = false;     // shed_abandoned with a server.shed_lag_s
  std::vector<AdaptiveRateLimiter> limiters_;  // client.rate_limiter: one per client
  ClientGuards guards_;                        // max_requests, breaker, throttle: per client
  size_t clients_ = 1;                         // client.budget.clients
  bool guards_on_ = false;                     // max_requests, a breaker or a throttle
  bool pool_on_ = false;                       // client.max_connections
  bool outlier_on_ = false;                    // client.outlier_5xx, with server.hosts
  bool pool_overflow_ = false;                 // the attempt being sent found the pool's queue full
  bool counted_ = false;                       // the attempt being sent was counted at the pool
  bool injects_errors_ = false;                // server.error_share
  std::optional<ServerLimiter> concurrency_;   // server.adaptive_concurrency
  std::vector<uint32_t> limiter_tickets_;      // by job: what the limiter handed it
  std::vector<uint8_t> job_hosts_;             // by job, with several hosts: the one serving it
  // A waited pushback can move a call's backoff ladder (ladder_offset).
  bool moves_ladder_ = false;
  std::vector<uint16_t> ladder_offsets_;  // by call, when moves_ladder_: Failure::ladder_offset
  std::vector<uint8_t> hedged_;           // per layer: its Hedging, 0 = none (client.hedging)

  int step_ = 0;
  double now_ = 0;
  CalendarQueue<EntityRef>& events_;  // retries and capacity changes
  Events& completions_;               // the server's (server.hpp)
  TimerLane* timers_ = nullptr;       // per layer: the workspace's, sized for this run
  TimerLane& deadlines_;
  TimerLane& sheds_;
  Arrivals arrivals_;

  Pool<Call>& calls_;
  // Per layer, whole counts (the budget takes them as amounts).
  std::vector<int64_t> attempts_in_flight_, retries_in_flight_;  // attempts and retries in flight
  std::vector<int64_t> retries_in_backoff_;  // retries in backoff (Envoy counts them)
  std::vector<int64_t> hedge_slots_;         // hedging layers: requests holding their retry slot
  InFlight pooled_;  // the innermost layer's attempts (and retries) waiting for a connection
  std::vector<double> layer_first_;
  uint32_t next_request_ = 0;
  uint64_t live_users_ = 0;

  std::vector<ServerSpec> host_specs_;    // server.hosts > 1: each host's share
  std::vector<Server> servers_;           // the dependency's hosts; one without server.hosts
  uint8_t hit_hosts_ = 1;                 // the hosts the incident hits (incident.hosts)
  std::vector<OutlierDetector> pickers_;  // server.hosts > 1: each client's round robin
  std::vector<HostTotals> host_totals_;   // per host: attempts, served, ejected time
  IncidentWindow incident_;               // the incident as steps
  StepProfiles profiles_{s_};
  std::vector<double> rate_of_step_;  // with a capacity profile: each step's multiplier
};

// A run the plain engine runs (AgentEngine<true>).
bool plain_run(const Scenario& s, const AgentOptions& options) {
  const ClientPolicy policy = ClientPolicy::of(s, Engine::agent);
  return policy.layers() == 1 && policy.hedging(0) == Hedging::none &&
         policy.rate_limiter() == RateLimiter::none && !ClientGuards::wanted(s) &&
         s.server.hosts <= 1 && s.server.concurrency.kind == ConcurrencyLimiter::none &&
         !(s.server.error_share > 0) && !options.log && !options.split && options.plain_engine;
}

}  // namespace

std::vector<double> layer_timeouts(const Scenario& s) {
  return ClientPolicy::of(s, Engine::agent).layer_timeouts_s();
}

// What keeps a state per client instance (a limiter, a breaker, a gRPC
// channel's tokens) runs for at most this many clients: the states are made
// before the run, at a cost no other limit prices.
void refuse_too_many_clients(const Scenario& s, const std::string& with, int per_client = 1) {
  constexpr double kMaxStates = 100000;
  if (s.client.budget.clients * per_client > kMaxStates)
    throw InputError("client.budget.clients: " + number_text(s.client.budget.clients) +
                     " clients with " + with + ": one per client" +
                     (per_client > 1 ? " and layer" : "") + ", at most " + number_text(kMaxStates) +
                     (per_client > 1 ? " in all" : ""));
}

// Envoy's adaptive concurrency limit moves between its two bounds
// (docs/policies.md): a floor above the ceiling leaves it nowhere.
void validate_concurrency_bounds(const Scenario& s) {
  const auto& c = s.server.concurrency;
  if (c.kind == ConcurrencyLimiter::envoy && c.min_concurrency > c.max_concurrency)
    throw InputError("server.min_concurrency: " + number_text(c.min_concurrency) +
                     " is above server.max_concurrency " + number_text(c.max_concurrency) +
                     "; the limit moves between the two (at most server.max_concurrency)");
}

// gRPC's throttling keeps each channel's tokens: one per client at every
// layer of the stack.
void validate_channels(const Scenario& s) {
  // A graph's calls keep no channel of their own (docs/graph.md).
  if (s.client.budget.kind != BudgetKind::grpc_throttling || !s.graph.empty()) return;
  const int layers = ClientPolicy::of(s, Engine::agent).layers();
  refuse_too_many_clients(
      s,
      "client.budget.kind grpc_throttling (a channel's tokens" +
          (layers > 1 ? " at each of " + std::to_string(layers) + " layers)" : std::string(")")),
      layers);
}

// client.rate_limiter: one limiter per client instance, in front of the
// innermost layer, which sends attempts one at a time.
void validate_rate_limiter(const Scenario& s) {
  if (s.client.rate_limiter == RateLimiter::none) return;
  refuse_too_many_clients(s, "client.rate_limiter aws_adaptive");
  if (s.hedged_layers().back() != Hedging::none)
    throw InputError(
        "client.rate_limiter: aws_adaptive paces an innermost layer that retries; client.hedging "
        "makes it hedge (AWS SDKs do not hedge)");
}

// Bursty arrivals are drawn one on or off period at a time: a cost per
// period, which the requests' limit bounds as it bounds the requests.
void validate_bursts(const Scenario& s, const RunLimits& limits) {
  if (s.demand.process != DemandProcess::bursty || s.demand.clients > 0) return;
  const double cycle = s.demand.burst_on_s + s.demand.burst_off_s;
  const double periods = 2 * s.horizon_s / cycle;
  if (periods > limits.max_agent_requests)
    throw InputError("demand.burst_on_s, demand.burst_off_s: " + number_text(s.demand.burst_on_s) +
                     " s on and " + number_text(s.demand.burst_off_s) + " s off over " +
                     number_text(s.horizon_s) + " s are " + number_text(periods) +
                     " periods; at most " + number_text(limits.max_agent_requests) +
                     " (longer periods or a shorter horizon_s)");
}

// demand.clients: each client's requests one after the other.
void validate_closed_loop(const Scenario& s) {
  if (s.demand.clients <= 0) return;
  if (!s.graph.empty())
    throw InputError(
        "demand.clients: closed-loop clients run before one dependency; not on a "
        "graph of services yet");
  if (s.demand.process == DemandProcess::bursty)
    throw InputError(
        "demand.clients: closed-loop clients send when their last request ended; "
        "demand.process bursty is open loop (use deterministic or poisson)");
}

// CircuitBreakerStrategyOptions' ranges, which Polly validates when it builds the breaker.
void refuse_what_polly_refuses(int min_calls, double window_s, double open_s) {
  if (min_calls == 1)
    throw InputError(
        "client.breaker_min_calls: 1 with client.breaker polly; Polly's "
        "MinimumThroughput is at least 2 (0 = its default, 100)");
  if (window_s < 0.5)
    throw InputError("client.breaker_window_s: " + number_text(window_s) +
                     " s with client.breaker polly; Polly's SamplingDuration is 0.5 s to a day");
  if (open_s > 0 && open_s < 0.5)
    throw InputError("client.breaker_open_s: " + number_text(open_s) +
                     " s with client.breaker polly; Polly's BreakDuration is 0.5 s to a day (0 = "
                     "its default, 5 s)");
}

// client.breaker and client.throttle_k: one per client instance, in front
// of the innermost layer's attempts.
void validate_client_defenses(const Scenario& s) {
  const auto& b = s.client.breaker;
  bool breaker = b.kind != BreakerKind::none, throttle = s.client.throttle.k > 0;
  bool pool = s.client.max_connections > 0;
  bool bulkhead = s.client.max_requests > 0 || pool;
  if (!breaker && !throttle && !bulkhead) return;
  const char* key = breaker                     ? "client.breaker"
                    : throttle                  ? "client.throttle_k"
                    : s.client.max_requests > 0 ? "client.max_requests"
                                                : "client.max_connections";
  if (!s.graph.empty())
    throw InputError(std::string(key) +
                     ": client-side breakers and throttling run on one population of clients; "
                     "not on a graph of services yet");
  refuse_too_many_clients(s, key);
  if (s.hedged_layers().back() != Hedging::none)
    throw InputError(std::string(key) +
                     ": a breaker or throttle guards an innermost layer that retries; "
                     "client.hedging makes it hedge");
  if (breaker && b.kind != BreakerKind::resilience4j && b.trials > 1)
    throw InputError("client.breaker_trials: " + std::to_string(b.trials) +
                     " with client.breaker " + kBreakerKindNames[static_cast<int>(b.kind)] +
                     ", which lets exactly one trial call through half-open; more trials are "
                     "resilience4j's (permittedNumberOfCallsInHalfOpenState)");
  if (b.kind == BreakerKind::polly) refuse_what_polly_refuses(b.min_calls, b.window_s, b.open_s);
}

// server.hosts and outlier detection: one dependency of several hosts, each
// client with its own round robin and detector.
void validate_hosts(const Scenario& s) {
  const int n = s.server.hosts;
  const OutlierSettings& o = s.client.outlier;
  if (s.incident.hosts > n)
    throw InputError("incident.hosts: " + std::to_string(s.incident.hosts) + " hosts hit of " +
                     std::to_string(n) + " (server.hosts); at most server.hosts, 0 = all");
  if (o.consecutive_5xx > 0 && o.max_ejection_s < o.ejection_s)
    throw InputError("client.outlier_max_ejection_s: " + number_text(o.max_ejection_s) +
                     " s is shorter than client.outlier_ejection_s " + number_text(o.ejection_s) +
                     " s; Envoy refuses a max_ejection_time below base_ejection_time");
  if (n <= 1) return;
  if (!s.graph.empty())
    throw InputError("server.hosts: " + std::to_string(n) +
                     " hosts behind one dependency; not on a graph of services yet");
  if (s.server.slots % n != 0)
    throw InputError("server.slots: " + std::to_string(s.server.slots) +
                     " slots are split evenly among server.hosts " + std::to_string(n) +
                     "; give a multiple of it (0 = one slot per host)");
  const char* unsupported = s.client.max_connections > 0 ? "client.max_connections"
                            : s.server.concurrency.kind != ConcurrencyLimiter::none
                                ? "server.adaptive_concurrency"
                            : s.hedged_layers().back() != Hedging::none ? "client.hedging"
                                                                        : nullptr;
  if (unsupported)
    throw InputError(std::string(unsupported) + " with server.hosts " + std::to_string(n) +
                     ": a connection pool, a concurrency filter or a hedge per host is not "
                     "modelled; run them with server.hosts 1");
  constexpr double kMaxPickers = 1e6;
  if (s.client.budget.clients * n > kMaxPickers)
    throw InputError("client.budget.clients: " + number_text(s.client.budget.clients) +
                     " clients each balancing over server.hosts " + std::to_string(n) +
                     " hosts; clients x hosts at most " + number_text(kMaxPickers));
}

void validate_agent(const Scenario& s, const RunLimits& limits) {
  validate_channels(s);
  validate_concurrency_bounds(s);
  validate_client_defenses(s);
  validate_hosts(s);
  if (!s.graph.empty()) validate_graph_run(s, limits);
  layer_timeouts(s);
  validate_rate_limiter(s);
  if (s.seed != std::floor(s.seed))
    throw InputError("seed: " + number_text(s.seed) + " must be a whole number");
  validate_closed_loop(s);
  validate_bursts(s, limits);
  double requests = s.requests_bound();
  if (requests > limits.max_agent_requests && s.demand.clients > 0)
    throw InputError("demand.clients: " + std::to_string(s.demand.clients) + " clients thinking " +
                     number_text(s.demand.think_s) + " s over " + number_text(s.horizon_s) +
                     " s send up to " + number_text(requests) +
                     " requests; the agent engine's limit is " +
                     number_text(limits.max_agent_requests));
  if (requests > limits.max_agent_requests)
    throw InputError("demand.rate_per_s: " + number_text(s.demand.rate_per_s) + " /s over " +
                     number_text(s.horizon_s) + " s is up to " + number_text(requests) +
                     " requests; the agent engine's limit is " +
                     number_text(limits.max_agent_requests));
}

RunResult run_agent(const Scenario& s, const AgentOptions& options) {
  if (!s.graph.empty()) return run_graph(s, options);  // docs/graph.md
  WorkspaceLease<Workspace> lease;
  if (plain_run(s, options)) return AgentEngine<true>(s, options, lease.get()).run();
  return AgentEngine<false>(s, options, lease.get()).run();
}

}  // namespace retrystorm
