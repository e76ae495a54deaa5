// The agent engine over a graph of services (docs/graph.md). It keeps the
// rules of the stacked engine (engines/agent/agent.cpp) hop by hop, in the
// same order of events and draws, so that a chain of a proxy and one server
// gives the stacked engine's run byte for byte (tests/graph_test.cpp):
//   - an edge is a retrying layer: its own timer lane, deadline lane, budget
//     (told the calls it received in the previous step) and policy;
//   - a visit is an attempt at a service: queued and served by the service's
//     server when it has one (server.hpp, one per service with its own event
//     queue), then the service's calls, in sequence or all at once;
//   - ties at one instant: completion, capacity change, timeout (the edges
//     listed later first), deadline, retry, arrival.
// A caller that gives up does not stop the calls below (they go on for
// nobody), unless the edge below propagates the deadline: then a call whose
// caller gave up makes no further attempt.
// A fault on a call (incident.call) holds an attempt, or the call before its
// first attempt, in the retries' queue for its delay; the random draws are
// made only while the fault is on, so a run without one keeps its bytes.
#include "engines/graph/graph_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "engines/agent/arrivals.hpp"
#include "engines/agent/entities.hpp"
#include "engines/agent/server.hpp"
#include "engines/event_queue.hpp"
#include "engines/incident_window.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "parallel/cancel.hpp"
#include "policies/adaptive_limiter.hpp"
#include "policies/client_policy.hpp"
#include "policies/retry_state.hpp"
#include "random/rng.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

using namespace agent;
using request_log::AttemptOutcome;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr uint64_t kArrivalOrder = order_of(kArrival);
// Deadlines go after every edge's timeout at their instant, before retries.
constexpr uint64_t deadline_order(size_t edge) {
  return order_of(kTimeout, (uint64_t{1} << 16) + edge);
}
// A late shed (server.shed_lag_s) goes after every deadline at its instant,
// as the stacked engine's does.
constexpr uint64_t shed_order(size_t service) {
  return order_of(kTimeout, (uint64_t{1} << 16) + 1024 + service);
}

using TimerLane = EventLane<EntityRef>;

// A call on an edge: a user request on the entry edge, or a call a visit
// made. It sends one attempt at a time; on a hedging edge, a new one while
// the earlier ones are still out (their generations gen0 to gen).
struct GCall {
  double start_s;        // the user request's arrival
  double sent_s;         // the current attempt's send instant
  double deadline_from;  // when its edge's deadline_s started counting: the
                         // call's own start (after a fault's delay), not the user's
  uint32_t parent;       // the visit that made it, kNone for the user
  uint32_t parent_gen;
  uint32_t gen;
  uint32_t gen0;    // the generation of its oldest attempt still counted
  uint32_t serial;  // names this call in its deadline lane
  uint32_t request;
  uint32_t visit;  // the current attempt's visit
  uint16_t attempt;
  uint16_t ladder_offset;  // Failure::ladder_offset (a waited pushback moves it)
  uint16_t edge;
  uint16_t hedges_out;  // hedging: its attempts in flight
  uint8_t state;
  bool first_out;   // hedging: its first attempt is one of them
  bool hedge_due;   // hedging: the next hedge waits its backoff
  bool first;       // every call above is on its first attempt
  LastHeard heard;  // what ended its previous attempt (entities.hpp)
  bool in_transit;  // the current attempt is held by the fault's delay
  bool aborting;    // the fault answers it once the delay is over
};

enum : uint8_t { kVisitFree, kAtServer, kCalling };

// An attempt at a service.
struct Visit {
  double sent_s;    // when its caller sent it
  uint32_t caller;  // the call whose attempt this is
  uint32_t caller_gen;
  uint32_t gen;
  uint32_t request;
  uint32_t job;   // at the server
  uint16_t next;  // sequence: the next call to make; parallel: calls still out
  uint16_t service;
  uint16_t edge;  // the call's edge
  uint16_t attempt;
  uint8_t state;
  bool first;
  double back_s;  // the way back of its calls' answers (server.answer_delay_s)
};

// A service as the engine runs it.
struct Node {
  Scenario scenario;            // s with the service's server keys
  std::vector<uint16_t> calls;  // edges it calls, `count` times each, in order
  CallPattern pattern = CallPattern::sequence;
  bool serves = false;
  std::unique_ptr<ServerMemory> memory;
  std::unique_ptr<Events> events;  // completions (and capacity changes) of its server
  std::unique_ptr<Server> server;
  // shed_abandoned with server.shed_lag_s: jobs whose caller gave up, shed that
  // much later if still queued (a constant lag keeps the lane in time order).
  TimerLane sheds;
};

// An edge as the engine runs it.
struct Edge {
  uint16_t from;  // kNoService for the user
  uint16_t to;
  bool optional = false;
  bool propagates = false;
  bool faulted = false;  // the incident's fault is on this call
  Hedging hedging = Hedging::none;
  double timeout_s = 0;
  double deadline_s = 0;
  int retries = 0;
  std::unique_ptr<ClientPolicy> policy;
  std::unique_ptr<RetryState> retry;
  bool budget_on = false;
  int64_t attempts_in_flight = 0, retries_in_flight = 0, retries_in_backoff = 0;
  int64_t live_calls = 0;      // made and not yet freed: the deadline lane's live events at most
  double calls_this_step = 0;  // received, for the budget's next step
  TimerLane timers, deadlines;
  // client.rate_limiter aws_adaptive: one per caller instance (budget.clients),
  // user requests dealt to them in turn, as the stacked engine's innermost layer.
  std::vector<AdaptiveRateLimiter> limiters;
};

constexpr uint16_t kNoService = std::numeric_limits<uint16_t>::max();

class GraphEngine {
 public:
  GraphEngine(const Scenario& s, const AgentOptions& options)
      : s_(s),
        steps_(s.steps()),
        rng_(static_cast<uint64_t>(s.seed)),
        stats_out_(options.stats),
        log_(options.log),
        arrivals_(s, rng_, arrival_times_),
        incident_(steps_of(s)),
        hits_service_(incident_hits_service(s)) {
    build_nodes();
    build_edges();
    build_layers();
    watch_sources();
    hit_ = incident_service(s);
    result_.scenario = s;
    result_.series.resize(static_cast<size_t>(steps_));
    build_result();
  }

  GraphEngine(const GraphEngine&) = delete;
  GraphEngine& operator=(const GraphEngine&) = delete;

  RunResult run() {
    Node& hit = nodes_[hit_];
    if (!incident_.empty() && s_.incident.capacity_factor != 1 && hits_service_) {
      hit.events->push(incident_.first * s_.step_s, kRate, {0, 0});
      hit.events->push(incident_.end * s_.step_s, kRate, {1, 0});
    }
    Series& out = result_.series;
    for (int t = 0; t < steps_; ++t) {
      step_ = t;
      bool incident = incident_.contains(t);
      auto [start, end] = step_span(s_, t, steps_);
      out.t_s[t] = start;
      out.capacity[t] = hit.scenario.server.capacity_per_s * s_.step_s *
                        (incident && hits_service_ ? s_.incident.capacity_factor : 1.0);
      double first = static_cast<double>(
          arrivals_.generate(start, end, incident ? s_.incident.demand_factor : 1.0));
      sources_.touch(kArrivalSource);
      out.first_attempts[t] = first;
      result_.user_requests += first;
      for (Edge& edge : edges_) {  // the entry: this step's requests; the others: last step's calls
        edge.retry->budget().begin_step(edge.from == kNoService ? first : edge.calls_this_step);
        edge.calls_this_step = 0;
      }
      run_until(end);
      end_step(t);
    }
    finish();
    return std::move(result_);
  }

 private:
  // ---- building -------------------------------------------------------------
  void build_nodes() {
    const Graph& g = s_.graph;
    nodes_.resize(g.services.size());
    for (size_t v = 0; v < g.services.size(); ++v) {
      Node& node = nodes_[v];
      node.scenario = service_scenario(s_, g.services[v]);
      node.pattern = g.services[v].pattern;
      node.serves = g.services[v].serves();
      node.memory = std::make_unique<ServerMemory>();
      node.events = std::make_unique<Events>();
      if (!node.serves) continue;
      node.server =
          std::make_unique<Server>(node.scenario.server, *node.memory, *node.events, rng_);
      if (log_) node.server->note_jobs(node.memory->notes);
    }
  }

  void build_edges() {
    const Graph& g = s_.graph;
    edges_.resize(g.calls.size());
    size_t n = g.calls.size();
    // Each call's budget is its own, sized from its own rate (a token bucket
    // holds window_s seconds of the call's first attempts).
    const std::vector<double> per_request = calls_per_request(s_);
    for (size_t e = 0; e < n; ++e) {
      const GraphCall& call = g.calls[e];
      Edge& edge = edges_[e];
      Scenario es = edge_scenario(s_, call);
      edge.from = call.from == kUserCaller ? kNoService
                                           : static_cast<uint16_t>(service_index(g, call.from));
      edge.to = static_cast<uint16_t>(service_index(g, call.to));
      edge.optional = call.optional;
      edge.propagates = call.propagate_deadline;
      edge.faulted = static_cast<int>(e) == s_.incident.call;
      edge.policy = std::make_unique<ClientPolicy>(ClientPolicy::of(es, Engine::agent));
      edge.retries = edge.policy->retries(0);
      edge.hedging = edge.policy->hedging(0);
      edge.timeout_s = edge.policy->layer_timeouts_s().at(0);
      edge.deadline_s =
          edge.policy->deadline_rule() == DeadlineRule::fires ? edge.policy->deadline_s() : 0;
      edge.retry = std::make_unique<RetryState>(
          *edge.policy,
          RetryBudget(*edge.policy, call_rate_per_s(s_, call, per_request), s_.step_s));
      edge.budget_on = edge.retry->budget().enabled();
      if (edge.policy->rate_limiter() == RateLimiter::aws_adaptive)
        edge.limiters.assign(static_cast<size_t>(std::llround(es.client.budget.clients)),
                             AdaptiveRateLimiter(0));
      edge.timers.set_order(order_of(kTimeout, n - 1 - e));  // edges listed later first
      edge.deadlines.set_order(deadline_order(e));
      if (edge.from == kNoService) entry_ = static_cast<uint16_t>(e);
      if (edge.from != kNoService)
        for (int c = 0; c < call.count; ++c)
          nodes_[edge.from].calls.push_back(static_cast<uint16_t>(e));
    }
  }

  // The request log's `layer` of each call: 1 for the user's, one more per
  // hop below (a service's depth, docs/graph.md, "The per-request log").
  void build_layers() {
    std::vector<int> depth = service_depths(s_.graph);
    for (const Edge& e : edges_) layer_.push_back(e.from == kNoService ? 1 : depth[e.from] + 2);
  }

  // ---- the request log (requests.csv) ----------------------------------------
  // As the stacked engine's: the attempts at a service that only serves (a
  // leaf with a server) are the server's, whose rows it writes (ok, late,
  // rejected, shed); every other attempt's row is its caller's (timeout,
  // ok, failed, rejected by the service's own server).
  bool server_rows(uint16_t service) const {
    return nodes_[service].serves && nodes_[service].calls.empty();
  }

  void log(uint32_t request, int attempt, double sent, double done, AttemptOutcome outcome,
           uint16_t edge) {
    if (log_) log_->row({request, attempt, sent, done, outcome, layer_[edge], edge});
  }
  // A job's attempt at `server`, on the edge its visit came by.
  void log_job(const Server& server, uint32_t job_id, double done, AttemptOutcome outcome) {
    if (!log_) return;
    const Job& job = server.job(job_id);
    const JobNote note = server.note(job_id);
    log(note.request, note.attempt, job.sent_s, done, outcome, visits_[job.caller].edge);
  }

  void build_result() {
    const Graph& g = s_.graph;
    auto steps = static_cast<size_t>(steps_);
    for (size_t v = 0; v < g.services.size(); ++v) {
      ServiceSeries series{g.services[v].name, nodes_[v].serves, {}, {}, {}, {}, {}, {}, {}, {}};
      for (const auto& field : kServiceFields) (series.*field.member).assign(steps, 0);
      result_.graph.services.push_back(std::move(series));
    }
    for (const GraphCall& call : g.calls) {
      EdgeSeries series{call.from, call.to, {}, {}, {}, {}, {}, {}, {}, {}};
      for (const auto& field : kEdgeFields) (series.*field.member).assign(steps, 0);
      result_.graph.edges.push_back(std::move(series));
    }
  }

  ServiceSeries& at(uint16_t service) { return result_.graph.services[service]; }
  EdgeSeries& on(uint16_t edge) { return result_.graph.edges[edge]; }

  auto draw() {
    return [this](double low, double high) { return low + (high - low) * rng_.uniform(); };
  }

  // What a service's server calls with a job it refuses (a full queue, CoDel).
  auto refused(uint16_t service) {
    return [this, service](uint32_t job_id) { refuse(service, job_id); };
  }

  // ---- the event loop -------------------------------------------------------
  // Sources, in the order that breaks ties between equal keys: 0 the
  // clients' retries; 1 arrivals; 2 + v: service v's server events; then per
  // edge its timers and its deadlines; then per service its late sheds. A
  // SourceTree keeps the next of them, told by each queue when its next event
  // changed.
  static constexpr uint16_t kRetrySource = 0, kArrivalSource = 1;
  uint16_t server_source(size_t v) const { return static_cast<uint16_t>(2 + v); }
  uint16_t lane_source(size_t e, bool deadline) const {
    return static_cast<uint16_t>(2 + nodes_.size() + 2 * e + deadline);
  }
  uint16_t shed_source(size_t v) const {
    return static_cast<uint16_t>(2 + nodes_.size() + 2 * edges_.size() + v);
  }
  size_t source_count() const { return 2 + 2 * nodes_.size() + 2 * edges_.size(); }

  void watch_sources() {
    sources_ = SourceTree(source_count());
    retries_.watch(&sources_, kRetrySource);
    for (size_t v = 0; v < nodes_.size(); ++v) nodes_[v].events->watch(&sources_, server_source(v));
    for (size_t e = 0; e < edges_.size(); ++e) {
      edges_[e].timers.watch(&sources_, lane_source(e, false));
      edges_[e].deadlines.watch(&sources_, lane_source(e, true));
    }
    for (size_t v = 0; v < nodes_.size(); ++v) {
      nodes_[v].sheds.set_order(shed_order(v));
      nodes_[v].sheds.watch(&sources_, shed_source(v));
    }
    for (uint16_t s = 0; s < source_count(); ++s) sources_.touch(s);
  }

  EventKey source_key(uint16_t source) const {
    if (source == kRetrySource) return retries_.next_key();
    if (source == kArrivalSource) return {arrivals_.next(), kArrivalOrder};
    size_t v = source - 2u;
    if (v < nodes_.size()) return nodes_[v].events->next_key();
    size_t lane = v - nodes_.size();
    if (lane >= 2 * edges_.size()) return nodes_[lane - 2 * edges_.size()].sheds.next_key();
    const Edge& edge = edges_[lane / 2];
    return lane % 2 == 0 ? edge.timers.next_key() : edge.deadlines.next_key();
  }

  void run_until(double end) {
    size_t services = nodes_.size();
    for (;;) {
      sources_.refresh([this](uint16_t s) { return source_key(s); });
      EventKey next = sources_.next_key();
      if (!(next.t < end)) return;
      uint16_t source = sources_.next();
      now_ = next.t;
      poll_();
      if (source == kRetrySource) {
        Events::Event event = retries_.top();
        retries_.pop();
        on_retry(event.what.index, event.what.generation);
      } else if (source == kArrivalSource) {
        arrivals_.take();
        sources_.touch(kArrivalSource);
        on_arrival();
      } else if (size_t v = source - 2u; v < services) {
        fire_server(static_cast<uint16_t>(v));
      } else {
        size_t lane = v - services;
        if (lane >= 2 * edges_.size())
          fire_shed(static_cast<uint16_t>(lane - 2 * edges_.size()));
        else if (lane % 2 == 0)
          fire_timeout(static_cast<uint16_t>(lane / 2));
        else
          fire_deadline(static_cast<uint16_t>(lane / 2));
      }
    }
  }

  void fire_server(uint16_t service) {
    Events& events = *nodes_[service].events;
    Events::Event event = events.top();
    events.pop();
    if ((event.key.order >> kPriorityShift) == kRate) {
      ++stats_.events;
      Server& server = *nodes_[service].server;
      server.set_rate(event.what.index == 0 ? s_.incident.capacity_factor : 1.0, now_);
      in_server([&] { server.dispatch(now_, refused(service)); });
    } else {
      on_complete(service, event.what.index, event.what.generation);
    }
  }

  void fire_timeout(uint16_t edge) {
    EntityRef timed = edges_[edge].timers.front().what;
    edges_[edge].timers.pop();
    const GCall& call = calls_[timed.index];
    if (call.gen != timed.generation || call.state != kWaiting) return;
    if (edges_[edge].hedging != Hedging::none)
      on_hedge_due(timed.index);
    else
      on_timeout(timed.index);
  }

  // The server learns, server.shed_lag_s late, that a caller gave up; the job
  // may have started meanwhile, and is served in vain.
  void fire_shed(uint16_t service) {
    Node& node = nodes_[service];
    EntityRef job = node.sheds.front().what;
    node.sheds.pop();
    if (node.server->still_queued(job.index, job.generation)) shed_job(service, job.index);
  }

  void fire_deadline(uint16_t edge) {
    EntityRef named = edges_[edge].deadlines.front().what;
    edges_[edge].deadlines.pop();
    if (is_live(named)) on_deadline(named.index);
  }

  bool is_live(EntityRef named) const {
    const GCall& call = calls_[named.index];
    return call.state != kCallFree && call.serial == named.generation;
  }

  // The call still waits for its attempt of generation `gen`: the latest, or
  // (hedging) an earlier one still in flight.
  static bool awaits(const GCall& call, uint32_t gen) {
    return call.state == kWaiting && gen - call.gen0 <= call.gen - call.gen0;
  }
  // The number of the call's attempt of generation `gen` (each attempt sent
  // moves the generation by one).
  static int attempt_of(const GCall& call, uint32_t gen) {
    return call.attempt - static_cast<int>(call.gen - gen);
  }

  // Every caller from this visit up to the user still waits for it, and
  // will when its answer arrives, the delays on its way back added up
  // (visit_succeeds checks each caller so).
  bool path_waits(uint32_t visit_id, uint32_t gen) const {
    double back = 0;
    for (;;) {
      if (!visit_current(visit_id, gen)) return false;
      const Visit& v = visits_[visit_id];
      const GCall& call = calls_[v.caller];
      back += answer_delay(v.service);
      if (!awaits(call, v.caller_gen) || !answer_in_time(call, back)) return false;
      if (call.parent == kNone) return true;
      visit_id = call.parent;
      gen = call.parent_gen;
    }
  }

  // ---- calls ----------------------------------------------------------------
  void on_arrival() {
    ++stats_.events;
    ++live_users_;
    uint32_t request = next_request_++;
    uint32_t call_id = new_call(kNone, 0, entry_, request, true, now_);
    start_call(call_id);
  }

  uint32_t new_call(uint32_t parent, uint32_t parent_gen, uint16_t edge, uint32_t request,
                    bool first, double start_s) {
    uint32_t call_id = calls_.alloc();
    edges_[edge].live_calls += 1;
    GCall& call = calls_[call_id];
    call.start_s = start_s;
    call.sent_s = start_s;
    call.parent = parent;
    call.parent_gen = parent_gen;
    call.serial = next_serial_++;
    call.request = request;
    call.visit = kNone;
    call.attempt = 0;
    call.ladder_offset = 0;
    call.edge = edge;
    call.gen0 = call.gen;
    call.hedges_out = 0;
    call.first_out = false;
    call.hedge_due = false;
    call.state = kBackoff;
    call.first = first;
    call.heard = {};
    call.in_transit = false;
    call.aborting = false;
    on(edge).calls[step_] += 1;
    return call_id;
  }

  // A new call's first attempt, unless the fault on the call (fault_on
  // calls) holds it for its delay or answers it at once.
  void start_call(uint32_t call_id) {
    GCall& call = calls_[call_id];
    Edge& e = edges_[call.edge];
    FaultDraw fault = draw_fault(call.edge, FaultOn::calls);
    if (fault.aborts && !fault.delays) return call_aborted(call_id);
    if (e.from != kNoService) e.calls_this_step += 1;
    if (fault.delays) {
      call.aborting = fault.aborts;
      retries_.push(now_ + s_.incident.delay_s, kRetry, {call_id, ++call.gen});
      return;
    }
    if (e.deadline_s > 0) arm_deadline(call_id);
    send_attempt(call_id);
  }

  // The fault's delay on a call is over: its first attempt, or the abort.
  void held_call_due(uint32_t call_id) {
    ++stats_.events;
    if (!wanted(call_id)) return drop_call(call_id);
    if (calls_[call_id].aborting) return call_aborted(call_id);
    if (edges_[calls_[call_id].edge].deadline_s > 0) arm_deadline(call_id);
    send_attempt(call_id);
  }

  void call_aborted(uint32_t call_id) {
    on(calls_[call_id].edge).aborted[step_] += 1;
    call_fails(call_id, s_.incident.abort_status);
  }

  struct FaultDraw {
    bool delays = false, aborts = false;
  };

  // Whether the fault on this edge, at this place, delays and aborts what
  // is sent now: drawn delay first, as the fault filters do.
  FaultDraw draw_fault(uint16_t edge, FaultOn where) {
    const auto& i = s_.incident;
    if (!edges_[edge].faulted || i.fault_on != where || !incident_.contains(step_)) return {};
    auto chance = [this](double share) { return share >= 1 || rng_.uniform() < share; };
    FaultDraw f;
    f.delays = i.delay_s > 0 && i.delay_share > 0 && chance(i.delay_share);
    f.aborts = i.abort_share > 0 && chance(i.abort_share);
    if (f.delays) on(edge).delayed[step_] += 1;
    return f;
  }

  // What a retry decision counts the edge's deadline from: each edge's client
  // starts its own deadline when it makes the call (docs/graph.md).
  double deadline_start(const GCall& call) const {
    return edges_[call.edge].deadline_s > 0 ? call.deadline_from : call.start_s;
  }

  void arm_deadline(uint32_t call_id) {
    Edge& e = edges_[calls_[call_id].edge];
    calls_[call_id].deadline_from = now_;
    e.deadlines.push(now_ + e.deadline_s, {call_id, calls_[call_id].serial});
    // Calls in backoff keep their deadline too: bounded by the calls alive,
    // not the attempts in flight (a lane of retries in backoff was swept on
    // every call made, and a run took 50 times as long as the stacked engine).
    e.deadlines.drop_stale_beyond(static_cast<size_t>(e.live_calls),
                                  [this](const TimerLane::Event& ev) { return is_live(ev.what); });
  }

  void free_call(uint32_t call_id) {
    edges_[calls_[call_id].edge].live_calls -= 1;
    free_entity(calls_, call_id, kCallFree);
  }

  // `token`: the edge's rate limiter let it go already (client.rate_limiter).
  void send_attempt(uint32_t call_id, bool token = false) {
    if (!token && held_for_token(call_id)) return;
    GCall& call = calls_[call_id];
    ++call.attempt;
    ++call.gen;
    uint16_t edge_id = call.edge;
    Edge& edge = edges_[edge_id];
    bool hedging = edge.hedging != Hedging::none;
    if (!hedging || call.attempt == 1) call.gen0 = call.gen;  // earlier hedges still count
    if (hedging) {
      call.hedges_out += 1;
      call.first_out = call.first_out || call.attempt == 1;
    }
    call.state = kWaiting;
    call.in_transit = false;
    call.sent_s = now_;
    edge.attempts_in_flight += 1;
    if (call.attempt > 1) {
      edge.retries_in_flight += 1;
      on(edge_id).retries[step_] += 1;
    }
    if (!hedging || call.attempt <= edge.retries) {  // the last hedge has no timer
      // A timer whose attempt ended does nothing when it fires (fire_timeout):
      // those at the front go now, the others once the lane is long.
      auto live = [this](const TimerLane::Event& ev) {
        const GCall& c = calls_[ev.what.index];
        return c.gen == ev.what.generation && c.state == kWaiting;
      };
      edge.timers.drop_stale_front(live);
      edge.timers.push(now_ + edge.timeout_s, {call_id, call.gen});
      edge.timers.drop_stale_beyond(static_cast<size_t>(edge.attempts_in_flight), live);
    }
    FaultDraw fault = draw_fault(edge_id, FaultOn::attempts);
    if (fault.delays) {
      call.in_transit = true;
      call.aborting = fault.aborts;
      call.visit = kNone;
      return retries_.push(now_ + s_.incident.delay_s, kRetry, {call_id, call.gen});
    }
    if (fault.aborts) return attempt_aborted(call_id);
    visit(call_id);
  }

  // ---- AWS adaptive mode (docs/policies.md, "AWS adaptive mode") -----------
  // The attempt waits for its caller instance's token: true when held (a
  // kRetry event sends it once the token is there).
  bool held_for_token(uint32_t call_id) {
    GCall& call = calls_[call_id];
    auto& limiters = edges_[call.edge].limiters;
    if (limiters.empty()) return false;
    double at = limiters[call.request % limiters.size()].acquire(now_);
    if (!(at > now_)) return false;
    ++call.gen;
    call.state = kHeld;
    on(call.edge).paced[step_] += 1;
    retries_.push(at, kRetry, {call_id, call.gen});
    return true;
  }

  // The edge's client heard its attempt's answer (or gave up on it): its rate
  // limiter measures and adapts.
  void heard(const GCall& call, bool throttled) {
    auto& limiters = edges_[call.edge].limiters;
    if (!limiters.empty()) limiters[call.request % limiters.size()].on_response(now_, throttled);
  }

  // The fault answers the attempt before it reaches the callee.
  void attempt_aborted(uint32_t call_id) {
    GCall& call = calls_[call_id];
    call.visit = kNone;
    heard(call, s_.incident.abort_status == FailureClass::http_429);
    on(call.edge).aborted[step_] += 1;
    log(call.request, call.attempt, call.sent_s, now_, AttemptOutcome::failed, call.edge);
    end_attempt(call, call.gen);
    attempt_failed(call_id, false, s_.incident.abort_status);
  }

  // An attempt the fault delayed reaches the callee now (or is aborted).
  void delay_over(uint32_t call_id) {
    ++stats_.events;
    GCall& call = calls_[call_id];
    call.in_transit = false;
    if (call.aborting) return attempt_aborted(call_id);
    visit(call_id);
  }

  // The call's attempt of generation `gen` stopped being in flight.
  void end_attempt(GCall& call, uint32_t gen) {
    Edge& edge = edges_[call.edge];
    int attempt = attempt_of(call, gen);
    edge.attempts_in_flight -= 1;
    if (attempt > 1) edge.retries_in_flight -= 1;
    if (edge.hedging != Hedging::none) {
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

  void on_deadline(uint32_t call_id) {
    ++stats_.events;
    GCall& call = calls_[call_id];
    if (call.state == kWaiting && edges_[call.edge].hedging != Hedging::none) {
      cancel_hedges(call_id);
    } else if (call.state == kWaiting) {
      end_attempt(call, call.gen);
      abandon_attempt(call_id);
    } else if (call.state == kBackoff) {
      edges_[call.edge].retries_in_backoff -= 1;
    }
    call_fails(call_id);
  }

  // The caller stopped waiting for the call's current attempt (and, ending a
  // hedging call, for `count` attempts: the server hears of the latest).
  void abandon_attempt(uint32_t call_id, int count = 1) {
    const GCall& call = calls_[call_id];
    on(call.edge).timeouts[step_] += count;
    uint16_t to = edges_[call.edge].to;
    // A hedging call's cancelled hedges have no row (as the stacked engine's).
    // A server writes the rows of the attempts it got; one the fault still
    // held never got there, and has its row here.
    if (count == 1 && (!server_rows(to) || call.in_transit) &&
        edges_[call.edge].hedging == Hedging::none)
      log(call.request, call.attempt, call.sent_s, kNaN, AttemptOutcome::timeout, call.edge);
    if (to == hit_) result_.series.gave_up[step_] += count;
    if (call.visit == kNone) return;
    const Visit& v = visits_[call.visit];
    Node& node = nodes_[to];
    if (node.serves && node.scenario.server.shed_abandoned && v.state == kAtServer &&
        v.caller == call_id && v.caller_gen == call.gen &&
        node.server->queued_for(v.job, call.visit, v.gen)) {
      if (node.scenario.server.shed_lag_s > 0)
        node.sheds.push(now_ + node.scenario.server.shed_lag_s,
                        {v.job, node.server->job(v.job).gen});
      else
        shed_job(to, v.job);
    }
  }

  // A call whose caller gave up and whose edge propagates the deadline makes
  // no further attempt (its callers up the path, as far as edges propagate).
  bool wanted(uint32_t call_id) const {
    const GCall& call = calls_[call_id];
    if (call.parent == kNone || !edges_[call.edge].propagates) return true;
    return visit_wanted(call.parent, call.parent_gen);
  }
  // Whether the visit (of generation `gen`) is still waited for, up the
  // path while the calls propagate their deadline.
  bool visit_wanted(uint32_t visit_id, uint32_t gen) const {
    for (;;) {
      const Visit& v = visits_[visit_id];
      if (v.state == kVisitFree || v.gen != gen) return false;
      const GCall& caller = calls_[v.caller];
      if (!awaits(caller, v.caller_gen)) return false;
      if (caller.parent == kNone || !edges_[caller.edge].propagates) return true;
      visit_id = caller.parent;
      gen = caller.parent_gen;
    }
  }

  void attempt_failed(uint32_t call_id, bool timed_out,
                      FailureClass answer = FailureClass::http_503, double pushback_s = 0) {
    GCall& call = calls_[call_id];
    Edge& edge = edges_[call.edge];
    if (!wanted(call_id)) return drop_call(call_id);
    Failure failure{.layer = 0,
                    .attempt = call.attempt,
                    .timed_out = timed_out,
                    .now_s = now_,
                    .start_s = deadline_start(call),
                    .answer = answer,
                    .pushback_s = pushback_s,
                    .ladder_offset = call.ladder_offset};
    RetryOutcome outcome = edge.retry->on_failure(failure, in_flight(edge), draw());
    const LastHeard heard = LastHeard::of(timed_out, answer);
    if (outcome.action == RetryAction::denied) return budget_denied(call_id, heard);
    if (!outcome.retries()) return call_fails(call_id, heard.passed_up());
    call.ladder_offset = static_cast<uint16_t>(outcome.decision.ladder_offset);
    ++call.gen;
    call.state = kBackoff;
    call.heard = heard;
    edge.retries_in_backoff += 1;
    retries_.push(now_ + outcome.decision.delay_s, kRetry, {call_id, call.gen});
  }

  void on_retry(uint32_t call_id, uint32_t gen) {
    GCall& call = calls_[call_id];
    if (call.gen != gen) return;
    if (call.hedge_due) return send_due_hedge(call_id);
    if (call.state == kWaiting && call.in_transit) return delay_over(call_id);
    if (call.state == kHeld) {  // its token is there
      ++stats_.events;
      if (!wanted(call_id)) return drop_call(call_id);
      return send_attempt(call_id, true);
    }
    if (call.state != kBackoff) return;
    if (call.attempt == 0) return held_call_due(call_id);
    ++stats_.events;
    Edge& edge = edges_[call.edge];
    edge.retries_in_backoff -= 1;
    if (!wanted(call_id)) return drop_call(call_id);
    if (edge.retry->on_due(in_flight(edge), call.heard.cause()))
      send_attempt(call_id);
    else
      budget_denied(call_id, call.heard);
  }

  static InFlight in_flight(const Edge& edge) {
    return {static_cast<double>(edge.attempts_in_flight),
            static_cast<double>(edge.retries_in_backoff + edge.retries_in_flight)};
  }

  // The caller hears what the call heard last (entities.hpp, LastHeard).
  void budget_denied(uint32_t call_id, LastHeard heard) {
    count_denied(calls_[call_id]);
    call_fails(call_id, heard.passed_up());
  }

  // The budget refused the call's next attempt.
  void count_denied(const GCall& call) {
    result_.series.budget_denied[step_] += 1;
    on(call.edge).denied[step_] += 1;
    log(call.request, call.attempt + 1, now_, kNaN, AttemptOutcome::budget_denied, call.edge);
  }

  // Nobody waits for the call any more (a propagated deadline): it ends
  // without an answer, its hedges cancelled, and fails as gRPC's
  // DEADLINE_EXCEEDED does; its visit goes on without it (or fails), as when
  // the call is not made at all. Freed alone, it left its visit waiting for
  // good: memory grew with the run.
  void drop_call(uint32_t call_id) {
    cancel_hedges(call_id);
    call_fails(call_id, FailureClass::timeout);
  }

  // ---- hedging (docs/policies.md, "Hedging") ---------------------------------
  // As the stacked engine's hedging layer (engines/agent/agent.cpp): the
  // edge's timeout passed with no answer: the next hedge after the edge's
  // backoff (none for gRPC's hedgingPolicy) if attempts are left and the
  // budget admits it; the earlier attempts stay in flight.
  void on_hedge_due(uint32_t call_id) {
    const GCall& call = calls_[call_id];
    if (call.hedge_due) return;  // the next hedge is on its way already
    ++stats_.events;
    Edge& edge = edges_[call.edge];
    Failure due{.layer = 0,
                .attempt = call.attempt,
                .timed_out = true,
                .now_s = now_,
                .start_s = deadline_start(call),
                .ladder_offset = call.ladder_offset};
    RetryOutcome outcome = edge.retry->on_hedge_due(due, in_flight(edge), draw());
    if (outcome.retries() && outcome.decision.delay_s <= 0) {
      // From the timer lane, at once: as a hedge after its backoff
      // (send_due_hedge), only while someone waits for it.
      if (!wanted(call_id)) return drop_call(call_id);
      send_attempt(call_id);
    } else if (outcome.retries())
      next_hedge(call_id, outcome.decision.delay_s);
    else if (outcome.action == RetryAction::denied)
      count_denied(call);
  }

  // A hedge failed: the next hedge, or the call fails (RetryState::on_hedge_failed
  // says which answers ask for one), or it waits for the hedges still out.
  void hedge_failed(uint32_t call_id, uint32_t gen, FailureClass answer, double pushback_s) {
    if (!wanted(call_id)) return drop_call(call_id);
    GCall& call = calls_[call_id];
    Edge& edge = edges_[call.edge];
    Failure failure{.layer = 0,
                    .attempt = call.attempt,
                    .now_s = now_,
                    .start_s = deadline_start(call),
                    .answer = answer,
                    .pushback_s = pushback_s,
                    .ladder_offset = call.ladder_offset};
    auto h = edge.retry->on_hedge_failed(failure, gen == call.gen && !call.hedge_due,
                                         in_flight(edge), draw());
    if (h.outcome.retries()) {
      call.ladder_offset = static_cast<uint16_t>(h.outcome.decision.ladder_offset);
      return next_hedge(call_id, h.outcome.decision.delay_s);
    }
    if (h.outcome.action == RetryAction::denied) count_denied(call);
    if (!h.fatal && (call.hedges_out > 0 || call.hedge_due)) return;  // another may answer
    cancel_hedges(call_id);
    call_fails(call_id, answer);
  }

  // The next hedge after `delay_s`, as a retry in backoff (Envoy's budget
  // counts it); through the retries' queue even at delay 0, as a failure may
  // come from inside a server.
  void next_hedge(uint32_t call_id, double delay_s) {
    GCall& call = calls_[call_id];
    call.hedge_due = true;
    edges_[call.edge].retries_in_backoff += 1;
    retries_.push(now_ + delay_s, kRetry, {call_id, call.gen});
  }

  // A hedge that waited its backoff goes out (admitted when it was decided).
  void send_due_hedge(uint32_t call_id) {
    ++stats_.events;
    GCall& call = calls_[call_id];
    call.hedge_due = false;
    edges_[call.edge].retries_in_backoff -= 1;
    if (!wanted(call_id)) return drop_call(call_id);
    send_attempt(call_id);
  }

  // The call ends (answered, failed, its deadline fired, or nobody waits)
  // with hedges still in flight: it stops waiting for them, as gRPC and Envoy
  // cancel them; the callee hears of the latest (shed_abandoned).
  void cancel_hedges(uint32_t call_id) {
    GCall& call = calls_[call_id];
    Edge& edge = edges_[call.edge];
    if (edge.hedging == Hedging::none) return;
    if (call.hedge_due) edge.retries_in_backoff -= 1;
    call.hedge_due = false;
    int out = call.hedges_out;
    if (out == 0) return;
    edge.attempts_in_flight -= out;
    edge.retries_in_flight -= out - (call.first_out ? 1 : 0);
    call.hedges_out = 0;
    call.first_out = false;
    abandon_attempt(call_id, out);
  }

  void call_fails(uint32_t call_id, FailureClass heard = FailureClass::http_503) {
    GCall& call = calls_[call_id];
    uint32_t parent = call.parent, parent_gen = call.parent_gen;
    on(call.edge).failed[step_] += 1;
    bool optional = edges_[call.edge].optional;
    free_call(call_id);
    if (parent == kNone) {
      result_.failed += 1;
      result_.series.failed[step_] += 1;
      --live_users_;
      return;
    }
    if (!visit_current(parent, parent_gen)) return;
    child_failed(parent, optional, heard_above(heard));
  }

  // A call of the visit failed (or was never made: its deadline had passed).
  // An optional one is tolerated: the service answers without it; else the
  // visit fails, and its caller's attempt with it.
  void child_failed(uint32_t visit_id, bool optional, FailureClass heard) {
    if (optional) return call_done(visit_id);
    const Visit& v = visits_[visit_id];
    const GCall& caller = calls_[v.caller];
    if (awaits(caller, v.caller_gen))
      log(caller.request, attempt_of(caller, v.caller_gen), v.sent_s, now_, AttemptOutcome::failed,
          caller.edge);
    visit_fails(visit_id, heard);
  }

  // The call's attempt of generation `gen` succeeded: the call ends and its
  // visit goes on.
  void call_succeeded(uint32_t call_id, uint32_t gen, double sent_s, double back_s = 0) {
    GCall& call = calls_[call_id];
    if (!awaits(call, gen)) return;
    heard(call, false);
    int attempt = attempt_of(call, gen);
    if (!server_rows(edges_[call.edge].to))
      log(call.request, attempt, sent_s, now_, AttemptOutcome::ok, call.edge);
    end_attempt(call, gen);
    cancel_hedges(call_id);
    Edge& edge = edges_[call.edge];
    if (edge.budget_on) edge.retry->budget().on_success(1, attempt, call.heard.cause());
    uint32_t parent = call.parent, parent_gen = call.parent_gen;
    double started = call.start_s;
    free_call(call_id);
    if (parent == kNone) {
      result_.succeeded += 1;
      result_.series.goodput[step_] += 1;
      result_.success_latency.add(now_ + back_s - started);
      --live_users_;
      return;
    }
    if (!visit_current(parent, parent_gen)) return;
    Visit& v = visits_[parent];  // calls in sequence add their way back, a join its longest
    bool join = nodes_[v.service].pattern == CallPattern::parallel;
    v.back_s = join ? std::max(v.back_s, back_s) : v.back_s + back_s;
    call_done(parent);
  }

  // server.answer_delay_s of a service with a server: its answer's way back.
  double answer_delay(uint16_t service) const {
    return nodes_[service].serves ? nodes_[service].scenario.server.answer_delay_s : 0;
  }
  // The answer, `delay` on its way back, reaches the call before it gives up
  // (its attempt's timeout or its deadline; a hedging call does not give up
  // on an attempt), as the stacked engine's answer_in_time.
  bool answer_in_time(const GCall& call, double delay) const {
    if (delay <= 0) return true;
    const Edge& e = edges_[call.edge];
    double give_up = e.hedging != Hedging::none ? std::numeric_limits<double>::infinity()
                                                : call.sent_s + e.timeout_s;
    if (e.deadline_s > 0) give_up = std::min(give_up, call.deadline_from + e.deadline_s);
    return now_ + delay <= give_up;
  }

  // ---- visits ---------------------------------------------------------------
  bool visit_current(uint32_t visit_id, uint32_t gen) const {
    const Visit& v = visits_[visit_id];
    return v.state != kVisitFree && v.gen == gen;
  }

  // The call's current attempt arrives at the edge's service.
  void visit(uint32_t call_id) {
    GCall& call = calls_[call_id];
    uint16_t service = edges_[call.edge].to;
    uint32_t visit_id = visits_.alloc();
    Visit& v = visits_[visit_id];
    v.caller = call_id;
    v.caller_gen = call.gen;
    v.sent_s = call.sent_s;
    v.edge = call.edge;
    ++v.gen;
    v.request = call.request;
    v.service = service;
    v.attempt = call.attempt;
    v.first = call.first && call.attempt == 1;
    v.job = kNone;
    v.back_s = 0;
    call.visit = visit_id;
    (call.attempt == 1 ? at(service).first_attempts : at(service).retries)[step_] += 1;
    if (service == hit_ && !v.first) result_.series.retries[step_] += 1;
    if (!nodes_[service].serves) return start_calls(visit_id);
    v.state = kAtServer;
    Server& server = *nodes_[service].server;
    uint32_t job_id = server.new_job(visit_id, v.gen, v.request, v.attempt, now_);
    v.job = job_id;
    bool may_queue = !fails_fast(service);
    in_server([&] { server.arrive(job_id, now_, refused(service), may_queue); });
  }

  void free_visit(uint32_t visit_id) { free_entity(visits_, visit_id, kVisitFree); }

  // The service's own work is done: its calls, or its answer.
  void start_calls(uint32_t visit_id) {
    Visit& v = visits_[visit_id];
    Node& node = nodes_[v.service];
    v.state = kCalling;
    if (node.calls.empty()) return visit_succeeds(visit_id);
    if (node.pattern == CallPattern::sequence) {
      v.next = 0;
      return make_call(visit_id, 0);
    }
    v.next = static_cast<uint16_t>(node.calls.size());
    // All at once, whatever happens to the first: a required call that fails
    // at once (a full queue, an immediate 503) ends the visit, and the others
    // go on for nobody; stopping there made the answer depend on the order
    // the calls are listed in. For the same reason a propagated deadline is
    // asked once, before the first call: when someone waits for the visit as
    // its fan-out begins, every call goes out, though a sibling that fails at
    // once ends the visit.
    const CallOrigin origin = origin_of(visit_id, visit_wanted(visit_id, v.gen));
    for (size_t i = 0; i < node.calls.size(); ++i) make_call(origin, i);
  }

  // What a visit's calls are made from, copied: a visit that fails while its
  // calls are being made is freed, and its slot may be taken by the next.
  struct CallOrigin {
    uint32_t visit, gen, request;
    uint16_t service;
    bool first;
    // A parallel fan-out: whether anyone waited for the visit when its calls
    // went out (a sequence asks at each call instead).
    bool wanted;
    double start_s;
  };
  CallOrigin origin_of(uint32_t visit_id, bool wanted = true) const {
    const Visit& v = visits_[visit_id];
    return {visit_id, v.gen, v.request, v.service, v.first, wanted, calls_[v.caller].start_s};
  }

  void make_call(uint32_t visit_id, size_t slot) { make_call(origin_of(visit_id), slot); }
  // Inside a server, or below too many calls made and answered at once (a
  // sequence of calls to services that only call on, each answering in the
  // same instant, nests one call in the last's answer: 10,000 of them
  // overflowed the stack), the call is made later at the same instant, by
  // the outermost make_call, in the order deferred.
  void make_call(const CallOrigin& o, size_t slot) {
    if (server_depth_ > 0 || call_depth_ >= kDeepestCalls) return deferred_.push_back({o, slot});
    ++call_depth_;
    make_call_now(o, slot);
    if (--call_depth_ == 0 && !deferred_.empty()) drain_deferred();
  }
  void make_call_now(const CallOrigin& o, size_t slot) {
    const bool current = visit_current(o.visit, o.gen);
    const bool parallel = nodes_[o.service].pattern == CallPattern::parallel;
    // A sequence's next call follows a live visit only; a parallel visit's
    // calls all go out, also after the visit ended.
    if (!current && !parallel) return;
    uint16_t edge = nodes_[o.service].calls[slot];
    // A propagated deadline that has passed: the call is not made (gRPC
    // fails it with DEADLINE_EXCEEDED before any attempt), and the visit
    // goes on without it, to an end nobody waits for. A fan-out's calls
    // all heard the same deadline: asked again here, a sibling's failure at
    // once (which ends the visit) left the calls listed after it unmade.
    if (edges_[edge].propagates && !(parallel ? o.wanted : visit_wanted(o.visit, o.gen))) {
      if (current) child_failed(o.visit, edges_[edge].optional, FailureClass::timeout);
      return;
    }
    uint32_t child = new_call(o.visit, o.gen, edge, o.request, o.first, o.start_s);
    start_call(child);
  }

  // One of the visit's calls ended well (or failed, optional).
  void call_done(uint32_t visit_id) {
    Visit& v = visits_[visit_id];
    Node& node = nodes_[v.service];
    if (node.pattern == CallPattern::parallel) {
      if (--v.next == 0) visit_succeeds(visit_id);
      return;
    }
    if (++v.next < node.calls.size()) return make_call(visit_id, v.next);
    visit_succeeds(visit_id);
  }

  void visit_succeeds(uint32_t visit_id) {
    Visit& v = visits_[visit_id];
    uint32_t caller = v.caller, caller_gen = v.caller_gen;
    double sent = v.sent_s, delay = answer_delay(v.service), back = v.back_s + delay;
    free_visit(visit_id);
    // An answer that arrives after its caller gave up is of no use: the
    // caller's timer ends the attempt. It arrives after every delay on its
    // way up so far (a caller above the first did not see it in time
    // because the one below did: success latencies passed the user's timeout).
    if (!answer_in_time(calls_[caller], back)) return;
    call_succeeded(caller, caller_gen, sent, back);
  }

  void visit_fails(uint32_t visit_id, FailureClass answer, double pushback_s = 0) {
    Visit& v = visits_[visit_id];
    uint32_t caller = v.caller, caller_gen = v.caller_gen;
    at(v.service).failed[step_] += 1;
    free_visit(visit_id);
    GCall& call = calls_[caller];
    if (!awaits(call, caller_gen)) return;
    heard(call, answer == FailureClass::http_429);
    end_attempt(call, caller_gen);
    if (edges_[call.edge].hedging != Hedging::none)
      return hedge_failed(caller, caller_gen, answer, pushback_s);
    attempt_failed(caller, false, answer, pushback_s);
  }

  // ---- at a server ------------------------------------------------------------
  bool fails_fast(uint16_t service) const {
    return service == hit_ && hits_service_ && s_.incident.failure != FailureClass::timeout &&
           incident_.contains(step_);
  }

  void refuse(uint16_t service, uint32_t job_id) {
    Node& node = nodes_[service];
    const Job& job = node.server->job(job_id);
    at(service).rejected[step_] += 1;
    if (service == hit_) result_.series.rejected[step_] += 1;
    uint32_t visit_id = job.caller, gen = job.caller_gen;
    // At a service with calls the attempt's row is its caller's: written
    // here while the caller waits, by abandon_attempt ("timeout") once it
    // gave up (a CoDel drop after that wrote a second row).
    if (server_rows(service) ||
        (visit_current(visit_id, gen) &&
         awaits(calls_[visits_[visit_id].caller], visits_[visit_id].caller_gen)))
      log_job(*node.server, job_id, now_, AttemptOutcome::rejected);
    node.server->release(job_id);
    if (!visit_current(visit_id, gen)) return;
    FailureClass answer =
        fails_fast(service) ? s_.incident.failure : node.scenario.server.reject_status;
    bool pushes_back = answer == FailureClass::http_503 || answer == FailureClass::http_429;
    visit_fails(visit_id, answer, pushes_back ? node.scenario.server.retry_after_s : 0);
  }

  void shed_job(uint16_t service, uint32_t job_id) {
    at(service).shed[step_] += 1;
    if (service == hit_) result_.series.shed[step_] += 1;
    if (server_rows(service)) log_job(*nodes_[service].server, job_id, kNaN, AttemptOutcome::shed);
    // The visit waiting at the server for this job ends with it: nothing
    // else frees it (memory grew with every shed attempt).
    const Job& job = nodes_[service].server->job(job_id);
    const Visit& v = visits_[job.caller];
    if (v.state == kAtServer && v.gen == job.caller_gen && v.job == job_id) free_visit(job.caller);
    nodes_[service].server->shed(job_id, now_);
  }

  // The served attempt's answer: for a service without calls at once (to the
  // user too, when every caller up the path still waits), else after its calls.
  void on_complete(uint16_t service, uint32_t job_id, uint32_t gen) {
    Server& server = *nodes_[service].server;
    const Job* job = server.end_service(job_id, gen, now_);
    if (!job) return;
    ++stats_.events;
    uint32_t visit_id = job->caller, visit_gen = job->caller_gen;
    const JobNote note = server.note(job_id);
    AttemptRow row{note.request,          note.attempt, job->sent_s, now_, AttemptOutcome::ok, 0,
                   visits_[visit_id].edge};
    server.release(job_id);
    bool current = visit_current(visit_id, visit_gen);
    bool leaf = nodes_[service].calls.empty();
    bool to_caller =
        current && awaits(calls_[visits_[visit_id].caller], visits_[visit_id].caller_gen) &&
        (!leaf || answer_in_time(calls_[visits_[visit_id].caller], answer_delay(service)));
    (to_caller ? at(service).served : at(service).late)[step_] += 1;
    // docs/graph.md, "Results": a leaf's answer is late when any caller up to
    // the user has given up (in a join or a sequence it may wait for others).
    if (service == hit_ && !(leaf ? to_caller && path_waits(visit_id, visit_gen) : to_caller))
      result_.series.served_late[step_] += 1;
    if (current) start_calls(visit_id);  // served for nobody: its calls go on all the same
    if (server_rows(service)) {          // after the rows its answer wrote up the path, as stacked
      if (!to_caller) row.outcome = AttemptOutcome::late;
      log(static_cast<uint32_t>(row.request_id), row.attempt, row.sent_s, row.done_s, row.outcome,
          static_cast<uint16_t>(row.call));
    }
    in_server([&] { server.dispatch(now_, refused(service)); });
  }

  // A failure from inside a server (a full queue, CoDel) may lead to the next
  // call of a visit: it is made once the server is out of its own code, never
  // re-entering it (at the same instant, in the order deferred).
  template <typename F>
  void in_server(F f) {
    ++server_depth_;
    f();
    if (--server_depth_ == 0 && !deferred_.empty()) drain_deferred();
  }

  void drain_deferred() {
    if (draining_) return;
    draining_ = true;
    // From a fresh depth: a drain that starts deep (a server left at the
    // depth limit) would put every call back on the list, for ever.
    const int depth = std::exchange(call_depth_, 0);
    for (size_t i = 0; i < deferred_.size(); ++i) {
      Deferred d = deferred_[i];
      make_call(d.origin, d.slot);  // a parallel call for nobody, if the visit has ended
    }
    call_depth_ = depth;
    deferred_.clear();
    draining_ = false;
  }

  // ---- steps and the end --------------------------------------------------------
  void end_step(int t) {
    for (size_t v = 0; v < nodes_.size(); ++v)
      if (nodes_[v].serves) at(static_cast<uint16_t>(v)).queue[t] = nodes_[v].server->in_system();
    result_.series.backlog[t] = static_cast<double>(nodes_[hit_].server->in_system());
  }

  void finish() {
    now_ = s_.horizon_s;
    for (Node& node : nodes_)
      if (node.serves) node.server->finish(now_, stats_);
    result_.in_flight = static_cast<double>(live_users_);
    // A graph's entities in flight: its calls and their visits.
    stats_.peak_calls = calls_.peak() + visits_.peak();
    if (stats_out_) *stats_out_ = stats_;
    if (log_) log_in_flight();
  }

  // Attempts still out at the end: at a leaf's server, or with calls below.
  void log_in_flight() {
    for (size_t s = 0; s < nodes_.size(); ++s) {
      if (!server_rows(static_cast<uint16_t>(s))) continue;
      const Server& server = *nodes_[s].server;
      nodes_[s].server->for_each_in_flight([&](uint32_t job_id, const Job& job) {
        const Visit& v = visits_[job.caller];
        bool waited =
            visit_current(job.caller, job.caller_gen) && awaits(calls_[v.caller], v.caller_gen);
        log_job(server, job_id, kNaN, waited ? AttemptOutcome::in_flight : AttemptOutcome::timeout);
      });
    }
    const std::vector<HedgeOut> hedges = hedges_still_out();
    size_t next_hedge = 0;
    for (uint32_t call_id = 0; call_id < calls_.slots(); ++call_id) {
      const GCall& call = calls_[call_id];
      if (call.state != kWaiting || server_rows(edges_[call.edge].to)) continue;
      if (edges_[call.edge].hedging != Hedging::none) {
        each_hedge_of(call_id, hedges, next_hedge, [&](const HedgeOut& h) {
          log(call.request, h.attempt, h.sent_s, kNaN, AttemptOutcome::in_flight, call.edge);
        });
        continue;
      }
      // An attempt the fault still holds has no row, whatever its callee (docs/graph.md).
      if (!call.in_transit)
        log(call.request, call.attempt, call.sent_s, kNaN, AttemptOutcome::in_flight, call.edge);
    }
  }

  // The attempts of hedging calls (to a service whose rows are its callers')
  // still out at the end, by call and attempt: a waiting call's latest hedge
  // may have failed (its row written) while the next waits its backoff, and
  // earlier hedges may still be out. Each has a visit its call still awaits.
  std::vector<HedgeOut> hedges_still_out() const {
    std::vector<HedgeOut> out;
    for (uint32_t visit_id = 0; visit_id < visits_.slots(); ++visit_id) {
      const Visit& v = visits_[visit_id];
      if (v.state == kVisitFree || edges_[v.edge].hedging == Hedging::none ||
          server_rows(v.service) || !awaits(calls_[v.caller], v.caller_gen))
        continue;
      out.push_back({v.caller, v.attempt, v.sent_s});
    }
    sort_hedges(out);
    return out;
  }

  const Scenario& s_;
  int steps_;
  Rng rng_;
  AgentStats stats_;
  AgentStats* stats_out_;
  AttemptSink* log_;        // requests.csv, when wanted
  std::vector<int> layer_;  // per edge: its hop, 1 for the user's call
  CancelPoll poll_;
  RunResult result_;
  std::vector<double> arrival_times_;
  Arrivals arrivals_;
  IncidentWindow incident_;
  bool hits_service_;  // the capacity drop and failure hit the incident's service
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  Events retries_;         // the clients' backoff retries
  SourceTree sources_{1};  // sized by watch_sources
  Pool<GCall> calls_;
  Pool<Visit> visits_;
  uint16_t entry_ = 0;
  int hit_ = 0;  // the incident's service
  int step_ = 0;
  double now_ = 0;
  uint32_t next_request_ = 0, next_serial_ = 0;
  uint64_t live_users_ = 0;
  struct Deferred {
    CallOrigin origin;
    size_t slot;
  };
  std::vector<Deferred> deferred_;  // calls to make once out of a server
  int server_depth_ = 0;
  int call_depth_ = 0;  // make_call within make_call
  static constexpr int kDeepestCalls = 64;
  bool draining_ = false;
};

}  // namespace

namespace {

// Keys a call or a service may set that the graph engine does not run: each
// refused by its path, as the same key at the top is (they were accepted and
// had no effect at all).
void refuse_what_a_graph_does_not_run(const Scenario& s) {
  for (size_t i = 0; i < s.graph.calls.size(); ++i) {
    const auto& c = edge_scenario(s, s.graph.calls[i]).client;
    const char* key = c.breaker.kind != BreakerKind::none ? "breaker"
                      : c.throttle.k > 0                  ? "throttle_k"
                      : c.max_requests > 0                ? "max_requests"
                      : c.max_connections > 0             ? "max_connections"
                                                          : nullptr;
    if (key)
      throw InputError(fmt::format(
          "calls[{}].{}: client-side breakers, throttles and connection limits run on one "
          "population of clients; not on a graph of services yet",
          i, key));
  }
  for (const GraphService& service : s.graph.services) {
    const auto& server = service_scenario(s, service).server;
    if (server.hosts > 1)
      throw InputError(
          fmt::format("services.{}.hosts: {} hosts behind one service; not on a "
                      "graph of services yet",
                      service.name, server.hosts));
    if (!server.capacity_profile.empty())
      throw InputError(fmt::format(
          "services.{}.capacity_profile: not with services yet; give the service's capacity "
          "with its keys and the incident",
          service.name));
  }
}

}  // namespace

void validate_graph_run(const Scenario& s, const RunLimits& limits) {
  validate_graph(s, limits);
  const auto& c = s.client;
  if (c.layers != 1 || !c.stack_retries.empty() || !c.layer_timeouts_s.empty())
    throw InputError(
        "client.layers: a graph has one layer per call; give each hop its own call "
        "(client.layers 1, client.stack_retries and client.layer_timeouts_s empty)");
  for (const GraphCall& call : s.graph.calls) validate_rate_limiter(edge_scenario(s, call));
  refuse_what_a_graph_does_not_run(s);
  // A graph injects errors with a fault on a call (docs/graph.md).
  for (const GraphService& service : s.graph.services)
    if (double share = service_scenario(s, service).server.error_share; share > 0)
      throw InputError("server.error_share: " + number_text(share) + " at service " + service.name +
                       "; a graph injects errors with a fault on a call (incident.call with "
                       "incident.abort_share)");
  for (const GraphService& service : s.graph.services)
    if (service_scenario(s, service).server.concurrency.kind != ConcurrencyLimiter::none)
      throw InputError("server.adaptive_concurrency at service " + service.name +
                       ": the limiter runs before one server (no services) for now");
  // A fault on each attempt holds one attempt of a call at a time: not one of several hedges.
  if (const auto& i = s.incident;
      i.call >= 0 && i.fault_on == FaultOn::attempts &&
      static_cast<size_t>(i.call) < s.graph.calls.size() &&
      edge_scenario(s, s.graph.calls[static_cast<size_t>(i.call)]).hedged_layers().front() !=
          Hedging::none)
    throw InputError("incident.call: " + std::to_string(i.call) +
                     " hedges; a fault on its attempts (incident.fault_on: attempts) is not run "
                     "on a hedging call yet; use incident.fault_on: calls");
}

RunResult run_graph(const Scenario& s, const AgentOptions& options) {
  return GraphEngine(s, options).run();
}

}  // namespace retrystorm
