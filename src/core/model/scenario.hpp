// The scenario: every input of a run. Keys and defaults follow
// docs/scenario-keys.md; semantics follow docs/fluid-model.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "model/profile.hpp"
#include "model/sessions_scenario.hpp"

namespace retrystorm {

enum class ServiceCompletes { start, end };
// The engine a scenario runs with (key `engine`); what each one can do is in
// the table of engines/engine.hpp, its name in kEngineNames.
enum class Engine { fluid, agent, sessions };
inline constexpr const char* kEngineNames[] = {"fluid", "agent", "sessions"};
inline const char* engine_name(Engine e) {
  return kEngineNames[static_cast<int>(e)];
}
// full: U[0, w); equal: U[w/2, w); grpc: w x U(0.8, 1.2);
// decorrelated: U[base, min(cap, base x 3^k)) (see docs/policies.md).
enum class Jitter { none, full, equal, decorrelated, grpc };
enum class BudgetKind {
  none,
  token_bucket,       // fluid-model.md
  window,             // fluid-model.md
  envoy_concurrency,  // Envoy retry_budget: active retries vs active + pending
  grpc_throttling,    // gRPC retryThrottling: tokens, retries while > half
  aws_quota,          // AWS SDK standard mode retry quota
  ratio_ttl,          // Linkerd ServiceProfile: ratio of unretried outcomes, reserve, ttl
};
// Which recovery time decides "recovered" (verdict, ladder, tipping point).
enum class RecoveryCriterion { failures, goodput };
enum class LadderMode { cumulative, single };
// Agent engine only (docs/agent-engine.md).
enum class DemandProcess { deterministic, poisson, bursty };
enum class ServiceDist { deterministic, exponential, lognormal, two_point };
enum class QueueDiscipline { fifo, lifo, codel };

// How a client waits the pushback of a rejection (docs/policies.md,
// "Pushback"): ignore it (its backoff), wait exactly it (gRPC's
// grpc-retry-pushback-ms), or Envoy's rate_limited_retry_back_off (drawn in
// [p, 1.5 p); a pushback above pushback_max_s falls back to the backoff).
enum class Pushback { ignore, exact, envoy };

// How a layer hedges (agent engine; docs/policies.md, "Hedging"): when its
// timeout passes it sends the next attempt after its backoff without giving
// up on the earlier ones, and takes the first answer. grpc (hedgingPolicy,
// imported without a backoff): any hedge's retried answer brings the next;
// envoy (hedge_policy.hedge_on_per_try_timeout): only the latest attempt's.
enum class Hedging : uint8_t { none, grpc, envoy };
inline constexpr const char* kHedgingNames[] = {"retry", "grpc", "envoy"};

// A client-side rate limiter in front of the innermost layer's attempts
// (agent engine): AWS adaptive retry mode's (docs/policies.md, "AWS adaptive mode").
enum class RateLimiter { none, aws_adaptive };
// Whose circuit breaker rules (docs/policies.md, "Circuit breakers").
enum class BreakerKind { none, opossum, consecutive, resilience4j, polly };
inline constexpr const char* kBreakerKindNames[] = {"none", "opossum", "consecutive",
                                                    "resilience4j", "polly"};
// A concurrency limiter in front of the server (docs/policies.md, "Adaptive
// concurrency"): none, Envoy's adaptive concurrency filter, or Netflix
// concurrency-limits' SimpleLimiter with its Gradient2 or Vegas limit.
enum class ConcurrencyLimiter { none, envoy, gradient2, vegas };
inline constexpr const char* kConcurrencyLimiterNames[] = {"none", "envoy", "gradient2", "vegas"};

// How an attempt fails, as real stacks tell failures apart
// (docs/policies.md, "Which failures are retried"). The answers come first,
// in the order server.reject_status lists them; incident.failure adds
// timeout; deadline is the whole request's.
enum class FailureClass { http_503, http_429, refused, reset, timeout, deadline };
inline constexpr const char* kFailureClassNames[] = {"503",   "429",     "refused",
                                                     "reset", "timeout", "deadline"};
inline const char* failure_class_name(FailureClass c) {
  return kFailureClassNames[static_cast<int>(c)];
}
// What the caller one layer (or one service) up hears when a call gives up
// on a refused connection or a reset: the proxy's or service's own 503
// (Envoy's router answers 503 once its retries are spent: router.cc,
// Filter::onUpstreamReset), never the connection failure itself; an answer
// (503, 429) goes up as it came.
inline FailureClass heard_above(FailureClass last) {
  return last == FailureClass::refused || last == FailureClass::reset ? FailureClass::http_503
                                                                      : last;
}
// Where a call's fault sits: on each attempt its client sends (at the callee's
// side or on the wire: the call's retries see it), or on the call itself,
// before its client's retries (in the caller's own proxy, as Istio's and
// Envoy's fault filters sit before the router, whose retries never see it).
enum class FaultOn { attempts, calls };
inline constexpr const char* kFaultOnNames[] = {"attempts", "calls"};

// The answers a policy can retry, as a set of bits (1 << FailureClass).
using AnswerSet = unsigned;
inline constexpr AnswerSet answer_bit(FailureClass c) {
  return 1u << static_cast<unsigned>(c);
}
inline constexpr AnswerSet kAllAnswers =
    answer_bit(FailureClass::http_503) | answer_bit(FailureClass::http_429) |
    answer_bit(FailureClass::refused) | answer_bit(FailureClass::reset);
// The set as client.retry_on spells it: "all", "none" or "503,refused".
std::string answer_set_text(AnswerSet answers);
// The names in the set, in class order, joined by `separator` ("" when empty).
std::string answer_list(AnswerSet answers, const std::string& separator);

// A value set on a scenario key by path ("client.retries" = 0).
using KeyValue = std::variant<bool, double, std::string>;

struct LadderRow {
  std::string name;                                   // "+ 10% retry budget"
  std::string change;                                 // one line: what this row changes
  std::vector<std::pair<std::string, KeyValue>> set;  // path = value, in order
};

struct Ladder {
  LadderMode mode = LadderMode::cumulative;
  std::vector<LadderRow> rows;  // empty: the generic ladder is used
};

struct Backoff {
  double base_s = 1;
  double multiplier = 2;
  double cap_s = 0;  // 0 = no cap
  Jitter jitter = Jitter::none;
};

struct Budget {
  BudgetKind kind = BudgetKind::none;
  double ratio = 0.1;
  double window_s = 10;
  double min_concurrency = 3;     // envoy_concurrency, per client
  double max_tokens = 10;         // grpc_throttling, per client
  double token_ratio = 0.1;       // grpc_throttling
  double quota_tokens = 500;      // aws_quota, per client
  double retry_cost = 5;          // aws_quota
  double timeout_cost = 10;       // aws_quota
  double success_reward = 1;      // aws_quota
  double min_retries_per_s = 10;  // ratio_ttl, per client
  double ttl_s = 10;              // ratio_ttl
  double clients = 100;           // client instances sharing the load

  // Envoy's max_retries alone: a fixed cap on retries in flight, which no
  // share of the traffic loosens or tightens; lint calls it no retry budget.
  bool fixed_cap() const { return kind == BudgetKind::envoy_concurrency && ratio == 0; }
  // A budget that follows the traffic (every kind but none and a fixed cap).
  bool follows_traffic() const { return kind != BudgetKind::none && !fixed_cap(); }
};

// A graph of services (agent engine; docs/graph.md): user requests enter at
// the callee of the one call `from: user`; an attempt at a service is served
// by its own server (when it sets capacity_per_s), then the service makes its
// calls, in sequence or all at once, and answers when the needed ones did.
enum class CallPattern : uint8_t { sequence, parallel };
inline constexpr const char* kCallPatternNames[] = {"sequence", "parallel"};

// Keys set under a service or a call, as paths of the key table
// ("server.slots", "client.retries") with their values, in the order given.
using KeySettings = std::vector<std::pair<std::string, KeyValue>>;

struct GraphService {
  std::string name;
  KeySettings server;  // server.* keys; with server.capacity_per_s it has a server
  CallPattern pattern = CallPattern::sequence;
  bool serves() const;  // it sets server.capacity_per_s
};

struct GraphCall {
  std::string from;  // a service, or "user" for the entry
  std::string to;
  int count = 1;                    // calls of `to` per attempt at `from`
  bool optional = false;            // a failure is tolerated (a fallback answer)
  bool propagate_deadline = false;  // the callee stops when its caller gave up
  KeySettings client;               // client.* keys of this edge over the scenario's
};

struct Graph {
  std::vector<GraphService> services;
  std::vector<GraphCall> calls;
  bool empty() const { return services.empty() && calls.empty(); }
};

// Envoy's outlier detection, as a cluster's outlier_detection and its load
// balancer's healthy_panic_threshold set it (policies/outlier_detection.hpp).
struct OutlierSettings {
  int consecutive_5xx = 0;  // 0: no detection, round robin over every host
  double interval_s = 10;
  double ejection_s = 30;       // base_ejection_time
  double max_ejection_s = 300;  // max_ejection_time
  double max_percent = 10;      // max_ejection_percent
  double panic_percent = 50;    // healthy_panic_threshold
};

// The largest seed: 2^53 - 1, below which every whole number is a double
// (seed + r past it would round, and two replications share a seed).
inline constexpr double kMaxSeed = 9007199254740991.0;

struct Scenario {
  std::string name = "custom";
  std::string description;
  Engine engine = Engine::fluid;
  double horizon_s = 300;
  double step_s = 1;
  ServiceCompletes service_completes = ServiceCompletes::start;

  struct {
    double rate_per_s = 80;
    // Agent engine only: how arrivals are spaced (the fluid engine uses the rate).
    DemandProcess process = DemandProcess::deterministic;
    double burst_on_s = 1;    // bursty: length of an on period
    double burst_off_s = 4;   // bursty: length of an off period
    double burst_factor = 3;  // bursty: rate multiplier while on
    // Agent engine: closed-loop clients. 0 = open loop (rate_per_s); N > 0:
    // N clients, each sending its next request think_s after its previous
    // one ended (fixed, or exponential with demand.process poisson).
    int clients = 0;
    double think_s = 1;
    // A multiplier over time (model/profile.hpp): "T:F,..."; empty = 1.
    std::string profile;
    double profile_period_s = 0;  // 0 = once
  } demand;

  struct {
    double capacity_per_s = 100;
    double queue_limit = 0;  // 0 = unbounded
    bool shed_abandoned = false;
    // Agent engine only. Mean service time = slots / capacity_per_s.
    ServiceDist service = ServiceDist::deterministic;
    double service_sigma = 1;  // lognormal: sigma of the log; two_point: spread
    int slots = 0;             // concurrency; 0 = one slot
    QueueDiscipline discipline = QueueDiscipline::fifo;
    double codel_target_s = 0.005;
    double codel_interval_s = 0.1;
    double contention = 0;  // service time x (1 + contention x attempts at the server)
    // With shed_abandoned: how long after the caller gives up the server
    // learns it (a relative deadline counted from arrival, a cancellation in
    // transit). 0 = the same instant.
    double shed_lag_s = 0;
    // An answer's way back: one finished less than this before its caller
    // gives up arrives too late (served in vain). 0 = at once.
    double answer_delay_s = 0;
    // What a rejected attempt hears (full queue, CoDel drop): 503, 429,
    // refused or reset.
    FailureClass reject_status = FailureClass::http_503;
    // The pushback a 503 or 429 rejection carries (Retry-After, gRPC's
    // grpc-retry-pushback-ms), seconds; 0 = none. Agent engine.
    double retry_after_s = 0;
    // Error injection, whatever the load (agent engine): each attempt that
    // reaches the dependency fails with error_status with probability
    // error_share; timeout: it is lost, and its caller's timer ends it.
    double error_share = 0;
    FailureClass error_status = FailureClass::http_503;
    // A concurrency limiter in front of the server (agent engine): Envoy's
    // adaptive concurrency filter (policies/adaptive_concurrency.hpp) or
    // Netflix's limits (policies/concurrency_limits.hpp); beyond its limit an
    // attempt is answered 503 at once.
    struct {
      ConcurrencyLimiter kind = ConcurrencyLimiter::none;
      double update_interval_s = 0.1;
      double min_rtt_interval_s = 60;
      double jitter = 0.15;
      double buffer = 0.25;
      double percentile = 0.5;
      int min_rtt_requests = 50;
      int min_concurrency = 3;
      int max_concurrency = 1000;
      // gradient2 and vegas; 0 in the first four: the limit's own default.
      int initial_limit = 0;
      int min_limit = 0;
      int max_limit = 0;
      double smoothing = 0;
      int queue_size = 4;          // gradient2
      int long_window = 600;       // gradient2
      double rtt_tolerance = 1.5;  // gradient2
      int probe_multiplier = 30;   // vegas
    } concurrency;
    // A multiplier of capacity over time, as demand.profile.
    std::string capacity_profile;
    double capacity_profile_period_s = 0;
    // Agent engine: the dependency's hosts; capacity_per_s, queue_limit and
    // slots are split evenly among them, each host with its own queue;
    // clients pick hosts round robin (docs/policies.md, "Outlier detection").
    int hosts = 1;
  } server;

  struct {
    double start_s = 60;
    double duration_s = 20;
    double capacity_factor = 0.4;
    double demand_factor = 1.0;
    // Above 0: no scripted start; incidents of duration_s strike at random,
    // this many per hour on average (a Poisson process drawn from the seed,
    // docs/risk.md, "Incidents at random"). Read by `retrystorm risk`; the
    // report of one run measures recovery from the scripted incident.
    double random_per_h = 0;
    // timeout: attempts the dependency cannot serve wait and time out; the
    // others: during the incident, an attempt that cannot start at once is
    // answered at once with that class (agent engine).
    FailureClass failure = FailureClass::timeout;
    // With a graph: the service the incident hits ("" = the deepest service
    // with a server).
    std::string service;
    // With a graph: a fault on one call during the incident (docs/graph.md,
    // "A fault on a call"), as Istio's fault injection and Envoy's fault
    // filter inject it. `call` is its index in calls (-1 = none); a faulted
    // attempt (or call, with fault_on calls) waits delay_s more with
    // probability delay_share, and is answered with abort_status with
    // probability abort_share, the two drawn independently.
    int call = -1;
    double delay_s = 0;
    double delay_share = 1;
    double abort_share = 0;
    FailureClass abort_status = FailureClass::http_503;
    FaultOn fault_on = FaultOn::attempts;
    // With server.hosts: the incident hits the first this many hosts (0 = all).
    int hosts = 0;
  } incident;

  struct {
    double timeout_s = 5;
    int layers = 1;
    int retries = 3;
    double deadline_s = 0;         // whole request across attempts; 0 = none
    bool retry_on_timeout = true;  // false: a timed-out attempt is not retried
    std::string retry_on = "all";  // the answers retried: "all", "none" or "503,429,refused,reset"
    Pushback pushback = Pushback::ignore;  // how a rejection's pushback is waited
    double pushback_max_s = 300;           // envoy: the longest pushback waited
    std::string stack_retries;             // "2,1": retries per layer, outermost first
    std::string layer_timeouts_s;  // agent engine: "3,1": timeout per layer, outermost first
    // agent engine: how each layer hedges: "none", "grpc", "envoy" (every
    // layer), or retry / grpc / envoy per layer, outermost first ("grpc,retry").
    std::string hedging = "none";
    RateLimiter rate_limiter = RateLimiter::none;  // agent engine
    // Agent engine: a circuit breaker per client instance before the
    // innermost layer's attempts (policies/circuit_breaker.hpp); 0 in
    // open_s, trials or min_calls: the library's own default.
    struct {
      BreakerKind kind = BreakerKind::none;
      double failure_rate = 0.5;
      int failures = 5;
      double window_s = 10;
      int window_calls = 100;
      int min_calls = 0;
      double open_s = 0;
      int trials = 0;
    } breaker;
    // Agent engine: Envoy's cluster circuit breaker max_requests per client
    // instance: attempts in flight beyond it overflow (0 = no limit).
    int max_requests = 0;
    // Agent engine: Envoy's HTTP/1 connection pool per client instance: at
    // most max_connections attempts on the wire (0 = no pool); the others
    // wait, at most max_pending_requests of them, and the rest overflow.
    int max_connections = 0;
    int max_pending_requests = 1024;
    // Agent engine: client-side adaptive throttling per client instance
    // (policies/adaptive_throttle.hpp); k = 0: off.
    struct {
      double k = 0;
      double window_s = 120;
      double padding = 1;
    } throttle;
    // Agent engine, with server.hosts: Envoy's outlier detection per client
    // instance (policies/outlier_detection.hpp); consecutive_5xx = 0: off.
    OutlierSettings outlier;
    Backoff backoff;
    Budget budget;
  } client;

  struct {
    double goodput_fraction = 0.9;
    RecoveryCriterion criterion = RecoveryCriterion::failures;
  } recovery;

  struct {
    double grid_s = 0;  // 0 = automatic (ten steps)
  } tipping;

  Ladder ladder;
  Graph graph;  // empty: one population of clients before one dependency

  // Session model only (engine: sessions; docs/sessions.md).
  SessionsModel sessions;
  ApiModel api;
  ItemsModel items;

  // Agent engine only: the generator's seed and Monte Carlo replications
  // (replication r runs with seed + r, each at most kMaxSeed).
  double seed = 1;
  int runs = 1;

  // Derived quantities, named as docs/fluid-model.md names them.
  int steps() const;          // horizon_s / step_s
  int timeout_steps() const;  // K = timeout_s / step_s
  int attempts() const;       // (retries + 1)^layers, or the stack's product
  // User requests over the horizon at the demand's largest (the incident's
  // surge, bursts): what the cost model and the engines' memory plan from.
  double requests_bound() const;
  int retrying_layers() const;             // layers, or the stack's length
  AnswerSet retried_answers() const;       // client.retry_on read (InputError if malformed)
  std::vector<int> layer_retries() const;  // retries of each layer, outermost first
  // client.hedging read, one flag per layer (InputError if malformed).
  std::vector<Hedging> hedged_layers() const;
  double incident_end_s() const;  // start_s + duration_s
  // The load profiles, read (InputError names the key).
  Profile demand_profile() const;
  Profile capacity_profile_over_time() const;
  bool in_incident(int step) const;
};

// Attempts one request makes when every attempt fails, for these retries per
// layer (outermost first): the product of (retries + 1). The one definition;
// Scenario::attempts and ClientPolicy::attempts cap it at 1e9 for an int.
double attempts_of(const std::vector<int>& layer_retries);

// Limits that protect a run (and the server) from inputs too large to run.
struct RunLimits {
  int max_steps = 1'000'000;
  int max_attempts = 10'000;
  double max_agent_requests = 50'000'000;  // agent engine: user requests per run
};

}  // namespace retrystorm
