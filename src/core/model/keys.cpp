#include "model/keys.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "model/graph.hpp"
#include "text/clock.hpp"
#include "text/list.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {

namespace {

// Steps and timeouts are compared in step units; this absorbs the binary
// representation error of decimal steps such as 0.05 s.
constexpr double kStepEpsilon = 1e-9;

bool whole_multiple(double value, double step) {
  double ratio = value / step;
  double whole = std::round(ratio);
  // A positive length that rounds to no step at all is no whole number of
  // steps (a timeout of 1e-10 s at 1 s steps passed as 0 steps).
  if (value > 0 && whole < 1) return false;
  return std::fabs(ratio - whole) < kStepEpsilon * std::max(1.0, ratio);
}

// One key of each type; KeyGroup below fills in the group.
KeySpec number_key(std::string path, double min, double max, std::string unit, std::string group,
                   std::string label, std::string help, double& (*field)(Scenario&),
                   bool min_exclusive = false) {
  KeySpec k{std::move(path),
            KeyType::number,
            min,
            max,
            min_exclusive,
            {},
            std::move(unit),
            std::move(group),
            std::move(label),
            std::move(help),
            {},
            {},
            {},
            {}};
  k.get = [field](const Scenario& s) { return KeyValue{field(const_cast<Scenario&>(s))}; };
  k.put = [field](Scenario& s, const KeyValue& v) { field(s) = std::get<double>(v); };
  return k;
}

KeySpec integer_key(std::string path, double min, double max, std::string group, std::string label,
                    std::string help, int& (*field)(Scenario&)) {
  KeySpec k{std::move(path),  KeyType::integer, min, max, false, {}, "", std::move(group),
            std::move(label), std::move(help),  {},  {},  {},    {}};
  k.get = [field](const Scenario& s) {
    return KeyValue{static_cast<double>(field(const_cast<Scenario&>(s)))};
  };
  k.put = [field](Scenario& s, const KeyValue& v) {
    field(s) = static_cast<int>(std::get<double>(v));
  };
  return k;
}

KeySpec boolean_key(std::string path, std::string group, std::string label, std::string help,
                    bool& (*field)(Scenario&)) {
  KeySpec k{std::move(path),  KeyType::boolean, 0,  1,  false, {}, "", std::move(group),
            std::move(label), std::move(help),  {}, {}, {},    {}};
  k.get = [field](const Scenario& s) { return KeyValue{field(const_cast<Scenario&>(s))}; };
  k.put = [field](Scenario& s, const KeyValue& v) { field(s) = std::get<bool>(v); };
  return k;
}

KeySpec text_key(std::string path, std::string help, std::string& (*field)(Scenario&)) {
  KeySpec k{std::move(path),
            KeyType::text,
            0,
            0,
            false,
            {},
            "",
            "run",
            "",
            std::move(help),
            {},
            {},
            {},
            {}};
  k.get = [field](const Scenario& s) { return KeyValue{field(const_cast<Scenario&>(s))}; };
  k.put = [field](Scenario& s, const KeyValue& v) { field(s) = std::get<std::string>(v); };
  return k;
}

// An enum key stored as its index in `choices`.
template <typename Enum>
KeySpec choice_key(std::string path, std::vector<std::string> choices, std::string group,
                   std::string label, std::string help, Enum& (*field)(Scenario&)) {
  KeySpec k{std::move(path),  KeyType::choice, 0,  0,  false, choices, "", std::move(group),
            std::move(label), std::move(help), {}, {}, {},    {}};
  k.get = [field, choices](const Scenario& s) {
    return KeyValue{choices.at(static_cast<size_t>(field(const_cast<Scenario&>(s))))};
  };
  k.put = [field, choices](Scenario& s, const KeyValue& v) {
    const auto& name = std::get<std::string>(v);
    for (size_t i = 0; i < choices.size(); ++i)
      if (choices[i] == name) field(s) = static_cast<Enum>(i);
  };
  return k;
}

constexpr double kBig = 1e9;

// A week: the session model's runs and item ages reach that far.
constexpr double kWeek = 7 * text::kDay;

// Adds the keys of one group (one panel on the page), one call per key with
// its facts in one line: path, range, unit, label, help, field.
class KeyGroup {
 public:
  KeyGroup(std::vector<KeySpec>& keys, std::string group) : keys_(keys), group_(std::move(group)) {}

  KeyGroup& number(std::string path, double min, double max, std::string unit, std::string label,
                   std::string help, double& (*field)(Scenario&)) {
    keys_.push_back(number_key(std::move(path), min, max, std::move(unit), group_, std::move(label),
                               std::move(help), field));
    return *this;
  }
  KeyGroup& integer(std::string path, double min, double max, std::string label, std::string help,
                    int& (*field)(Scenario&)) {
    keys_.push_back(
        integer_key(std::move(path), min, max, group_, std::move(label), std::move(help), field));
    return *this;
  }
  KeyGroup& flag(std::string path, std::string label, std::string help, bool& (*field)(Scenario&)) {
    keys_.push_back(boolean_key(std::move(path), group_, std::move(label), std::move(help), field));
    return *this;
  }
  KeyGroup& text(std::string path, std::string label, std::string help,
                 std::string& (*field)(Scenario&)) {
    keys_.push_back(text_key(std::move(path), std::move(help), field));
    keys_.back().group = group_;
    keys_.back().label = std::move(label);
    return *this;
  }
  template <typename Enum>
  KeyGroup& choice(std::string path, std::vector<std::string> choices, std::string label,
                   std::string help, Enum& (*field)(Scenario&)) {
    keys_.push_back(choice_key(std::move(path), std::move(choices), group_, std::move(label),
                               std::move(help), field));
    return *this;
  }
  // The key just added takes values above its min, not from it (a step of 0 s
  // is no step).
  KeyGroup& above_min() {
    keys_.back().min_exclusive = true;
    return *this;
  }

 private:
  std::vector<KeySpec>& keys_;
  std::string group_;
};

// The run itself: its name, engine, horizon and step.
void add_run_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "run");
  g.text(
      "name", "", "preset or scenario name", [](S & s) -> auto& { return s.name; });
  g.text(
      "description", "", "one line a person reads", [](S & s) -> auto& { return s.description; });
  g.choice<Engine>(
      "engine", {std::begin(kEngineNames), std::end(kEngineNames)}, "Engine",
      "fluid: the deterministic step model; agent: every attempt an entity; sessions: the "
      "scheduler's session model",
      [](S & s) -> auto& { return s.engine; });
  g.number(
       "horizon_s", 0, 1e7, "s", "Horizon", "length of the run",
       [](S & s) -> auto& { return s.horizon_s; })
      .above_min();
  g.number(
       "step_s", 0, text::kHour, "s", "Step", "length of one model step",
       [](S & s) -> auto& { return s.step_s; })
      .above_min();
  g.choice<ServiceCompletes>(
      "service_completes", {"start", "end"}, "Service completes at",
      "whether work served in a step completes at its start or its end",
      [](S & s) -> auto& { return s.service_completes; });
}

// Load profiles (model/profile.hpp): demand and capacity over time.
void add_profile_keys(KeyGroup& g) {
  using S = Scenario;
  g.text(
      "demand.profile", "Demand profile",
      "demand.rate_per_s multiplied over time: points T:F (seconds:factor) joined by lines, "
      "a step where two share a time (\"0:1,600:1,600:2\"); empty = 1",
      [](S & s) -> auto& { return s.demand.profile; });
  g.number(
      "demand.profile_period_s", 0, 1e7, "s", "Demand period",
      "demand.profile repeats every this many seconds (86400: a daily curve); 0 = once",
      [](S & s) -> auto& { return s.demand.profile_period_s; });
  g.text(
      "server.capacity_profile", "Capacity profile",
      "server.capacity_per_s multiplied over time, as demand.profile (repeated faults, a "
      "capacity that ramps); empty = 1",
      [](S & s) -> auto& { return s.server.capacity_profile; });
  g.number(
      "server.capacity_profile_period_s", 0, 1e7, "s", "Capacity period",
      "server.capacity_profile repeats every this many seconds; 0 = once",
      [](S & s) -> auto& { return s.server.capacity_profile_period_s; });
}

// Demand and the server (the fluid and agent engines).

// Netflix concurrency-limits' Gradient2Limit and VegasLimit (their builders'
// names; docs/policies.md, "Adaptive concurrency").
void add_netflix_limit_keys(KeyGroup& g) {
  using S = Scenario;
  g.integer(
      "server.initial_limit", 0, 1000000, "Initial limit",
      "gradient2, vegas: the limit before any sample (initialLimit); 0 = the default, 20",
      [](S & s) -> auto& { return s.server.concurrency.initial_limit; });
  g.integer(
      "server.min_limit", 0, 1000000, "Minimum limit",
      "gradient2: the lowest limit (minLimit); 0 = the default, 20; vegas has none (1)",
      [](S & s) -> auto& { return s.server.concurrency.min_limit; });
  g.integer(
      "server.max_limit", 0, 1000000, "Maximum limit",
      "gradient2, vegas: the highest limit (maxConcurrency); 0 = the default (200; vegas 1000)",
      [](S & s) -> auto& { return s.server.concurrency.max_limit; });
  g.number(
      "server.limit_smoothing", 0, 1, "", "Limit smoothing",
      "gradient2, vegas: the share of a new limit taken at each sample (smoothing); 0 = the "
      "default (0.2; vegas 1)",
      [](S & s) -> auto& { return s.server.concurrency.smoothing; });
  g.integer(
      "server.limit_queue_size", 0, 1000000, "Limit queue size",
      "gradient2: the headroom added to limit x gradient at each sample (queueSize)",
      [](S & s) -> auto& { return s.server.concurrency.queue_size; });
  g.integer(
      "server.limit_long_window", 1, 1000000, "Long RTT window",
      "gradient2: samples in the long RTT's exponential average (longWindow)",
      [](S & s) -> auto& { return s.server.concurrency.long_window; });
  g.number(
      "server.limit_rtt_tolerance", 1, 100, "", "RTT tolerance",
      "gradient2: how much above the long RTT a sample may be before the limit falls "
      "(rttTolerance)",
      [](S & s) -> auto& { return s.server.concurrency.rtt_tolerance; });
  g.integer(
      "server.limit_probe_multiplier", 1, 1000000, "Probe multiplier",
      "vegas: the no-load RTT is measured again every 0.5 to 1 x this x limit samples "
      "(probeMultiplier)",
      [](S & s) -> auto& { return s.server.concurrency.probe_multiplier; });
}

// Envoy's adaptive concurrency filter (docs/policies.md, "Adaptive concurrency").
void add_concurrency_keys(KeyGroup& g) {
  using S = Scenario;
  g.choice<ConcurrencyLimiter>(
      "server.adaptive_concurrency",
      {std::begin(kConcurrencyLimiterNames), std::end(kConcurrencyLimiterNames)},
      "Adaptive concurrency",
      "agent: a limiter in front of the server that answers an attempt beyond its limit 503 at "
      "once; envoy = Envoy's adaptive concurrency filter (gradient controller), gradient2 or "
      "vegas = Netflix concurrency-limits' SimpleLimiter with that limit; none = off",
      [](S & s) -> auto& { return s.server.concurrency.kind; });
  g.number(
      "server.concurrency_update_s", 0.001, 3600, "s", "Concurrency update interval",
      "envoy: how often the limit is recomputed from the sampled latencies "
      "(concurrency_update_interval)",
      [](S & s) -> auto& { return s.server.concurrency.update_interval_s; });
  g.number(
      "server.min_rtt_interval_s", 0.01, 86400, "s", "minRTT interval",
      "envoy: how often the latency without queueing is measured again (min_rtt_calc_params."
      "interval)",
      [](S & s) -> auto& { return s.server.concurrency.min_rtt_interval_s; });
  g.number(
      "server.min_rtt_jitter", 0, 1, "", "minRTT jitter",
      "envoy: up to this share of the interval is added at random (min_rtt_calc_params.jitter)",
      [](S & s) -> auto& { return s.server.concurrency.jitter; });
  g.number(
      "server.min_rtt_buffer", 0, 10, "", "minRTT buffer",
      "envoy: the latency above minRTT that still counts as no queueing (min_rtt_calc_params."
      "buffer)",
      [](S & s) -> auto& { return s.server.concurrency.buffer; });
  g.number(
      "server.concurrency_percentile", 0.01, 1, "", "Latency percentile",
      "envoy: the percentile of the sampled latencies the limit follows "
      "(sample_aggregate_percentile)",
      [](S & s) -> auto& { return s.server.concurrency.percentile; });
  g.integer(
      "server.min_rtt_requests", 1, 100000, "minRTT requests",
      "envoy: answers sampled to measure minRTT (min_rtt_calc_params.request_count)",
      [](S & s) -> auto& { return s.server.concurrency.min_rtt_requests; });
  g.integer(
      "server.min_concurrency", 1, 1000000, "Minimum concurrency",
      "envoy: the lowest limit, and the limit while minRTT is measured (min_rtt_calc_params."
      "min_concurrency)",
      [](S & s) -> auto& { return s.server.concurrency.min_concurrency; });
  g.integer(
      "server.max_concurrency", 1, 1000000, "Maximum concurrency",
      "envoy: the highest limit (concurrency_limit_params.max_concurrency_limit)",
      [](S & s) -> auto& { return s.server.concurrency.max_concurrency; });
  add_netflix_limit_keys(g);
}

void add_demand_server_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "demand_server");
  g.number(
      "demand.rate_per_s", 0, kBig, "/s", "Demand", "new user requests per second",
      [](S & s) -> auto& { return s.demand.rate_per_s; });
  g.number(
       "server.capacity_per_s", 0, kBig, "/s", "Capacity",
       "attempts the server completes per second",
       [](S & s) -> auto& { return s.server.capacity_per_s; })
      .above_min();
  g.number(
      "server.queue_limit", 0, kBig, "", "Queue limit",
      "most attempts waiting in the queue; 0 = unbounded",
      [](S & s) -> auto& { return s.server.queue_limit; });
  g.flag(
      "server.shed_abandoned", "Shed abandoned work",
      "drop queued attempts whose caller already gave up",
      [](S & s) -> auto& { return s.server.shed_abandoned; });
  g.choice<FailureClass>(
      "server.reject_status", {std::begin(kFailureClassNames), std::begin(kFailureClassNames) + 4},
      "Rejected with",
      "what a rejected attempt hears (full queue, CoDel): 503, 429, refused, reset",
      [](S & s) -> auto& { return s.server.reject_status; });
  g.number(
      "server.retry_after_s", 0, 1e6, "s", "Retry-After",
      "pushback a 503 or 429 rejection carries (Retry-After, grpc-retry-pushback-ms); 0 = none "
      "(agent engine)",
      [](S & s) -> auto& { return s.server.retry_after_s; });
  g.number(
      "server.error_share", 0, 1, "", "Error share",
      "share of attempts that fail with server.error_status whatever the load (error "
      "injection; agent engine); 0 = none",
      [](S & s) -> auto& { return s.server.error_share; });
  g.choice<FailureClass>(
      "server.error_status", {std::begin(kFailureClassNames), std::begin(kFailureClassNames) + 5},
      "Injected error",
      "what an injected error is: 503, 429, refused, reset (answered at once) or timeout (no "
      "answer: the caller's timer ends it)",
      [](S & s) -> auto& { return s.server.error_status; });
  add_profile_keys(g);
  add_concurrency_keys(g);
}

// A fault on one call of a graph (docs/graph.md, "A fault on a call").
void add_call_fault_keys(KeyGroup& g) {
  using S = Scenario;
  g.integer(
      "incident.call", -1, 255, "Call hit",
      "agent, with services: the call (its index in calls) a fault hits during the incident; "
      "-1 = none",
      [](S & s) -> auto& { return s.incident.call; });
  g.number(
      "incident.delay_s", 0, 1e6, "s", "Fault delay",
      "with incident.call: how much longer a faulted attempt takes to reach the callee",
      [](S & s) -> auto& { return s.incident.delay_s; });
  g.number(
      "incident.delay_share", 0, 1, "", "Share delayed",
      "with incident.call: the share of attempts delayed (Istio's delay percentage / 100)",
      [](S & s) -> auto& { return s.incident.delay_share; });
  g.number(
      "incident.abort_share", 0, 1, "", "Share aborted",
      "with incident.call: the share of attempts answered at once with incident.abort_status",
      [](S & s) -> auto& { return s.incident.abort_share; });
  g.choice<FailureClass>(
      "incident.abort_status", {std::begin(kFailureClassNames), std::begin(kFailureClassNames) + 4},
      "Aborted with", "with incident.call: what an aborted attempt hears: 503, 429, refused, reset",
      [](S & s) -> auto& { return s.incident.abort_status; });
  g.choice<FaultOn>(
      "incident.fault_on", {std::begin(kFaultOnNames), std::end(kFaultOnNames)}, "Fault on",
      "attempts: each attempt is faulted and the call's retries see it; calls: the call once, "
      "before its retries (Istio's and Envoy's fault filters)",
      [](S & s) -> auto& { return s.incident.fault_on; });
}

// The incident: when capacity drops or demand surges, and by how much.
void add_incident_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "incident");
  g.number(
      "incident.start_s", 0, 1e7, "s", "Incident start", "when capacity drops (or demand surges)",
      [](S & s) -> auto& { return s.incident.start_s; });
  g.number(
      "incident.duration_s", 0, 1e7, "s", "Incident length", "how long the incident lasts",
      [](S & s) -> auto& { return s.incident.duration_s; });
  g.number(
      "incident.random_per_h", 0, 3600, "/h", "Incidents per hour (random)",
      "0 = the one incident at incident.start_s; above 0 = incidents of incident.duration_s at "
      "random times, this many per hour on average (retrystorm risk)",
      [](S & s) -> auto& { return s.incident.random_per_h; });
  g.number(
      "incident.capacity_factor", 0, 1000, "x", "Capacity during incident",
      "capacity multiplier; 0 = outage", [](S & s) -> auto& { return s.incident.capacity_factor; });
  g.number(
      "incident.demand_factor", 0, 1000, "x", "Demand during incident",
      "demand multiplier; above 1 = a load surge",
      [](S & s) -> auto& { return s.incident.demand_factor; });
  g.choice<FailureClass>(
      "incident.failure", {std::begin(kFailureClassNames), std::begin(kFailureClassNames) + 5},
      "Fails with",
      "timeout: unserved attempts wait and time out; 503, 429, refused, reset: agent, an attempt "
      "that cannot start at once is answered at once with it",
      [](S & s) -> auto& { return s.incident.failure; });
  g.text(
      "incident.service", "Service hit",
      "agent, with services: the service the incident hits; empty: the deepest service with "
      "a server (docs/graph.md)",
      [](S & s) -> auto& { return s.incident.service; });
  add_call_fault_keys(g);
}

// The retrying client: timeouts, layers, retries and backoff (docs/policies.md).
void add_client_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "client");
  g.number(
       "client.timeout_s", 0, 1e7, "s", "Timeout", "client gives up on an attempt after this long",
       [](S & s) -> auto& { return s.client.timeout_s; })
      .above_min();
  g.integer(
      "client.layers", 1, 6, "Retrying layers", "retrying layers stacked above the dependency",
      [](S & s) -> auto& { return s.client.layers; });
  g.integer(
      "client.retries", 0, 100, "Retries per layer",
      "retries per layer; attempts per layer = retries + 1",
      [](S & s) -> auto& { return s.client.retries; });
  g.number(
      "client.deadline_s", 0, 1e7, "s", "Deadline",
      "whole request across attempts and backoff; 0 = none",
      [](S & s) -> auto& { return s.client.deadline_s; });
  g.flag(
      "client.retry_on_timeout", "Retry timeouts",
      "false: a timed-out attempt fails the request (Envoy without "
      "per_try_timeout)",
      [](S & s) -> auto& { return s.client.retry_on_timeout; });
  g.text(
      "client.retry_on", "Retried answers",
      "the answers retried: all, none, or a list of 503, 429, refused, reset (timeouts: "
      "client.retry_on_timeout)",
      [](S & s) -> auto& { return s.client.retry_on; });
  g.choice<Pushback>(
      "client.pushback", {"ignore", "exact", "envoy"}, "Pushback",
      "how a rejection's server.retry_after_s is waited: ignore (the backoff), exact (gRPC), "
      "envoy (rate_limited_retry_back_off: [p, 1.5 p), the backoff above pushback_max_s)",
      [](S & s) -> auto& { return s.client.pushback; });
  g.number(
      "client.pushback_max_s", 0, 1e7, "s", "Longest pushback",
      "envoy pushback: a pushback above this is ignored (Envoy's max_interval, default 300 s)",
      [](S & s) -> auto& { return s.client.pushback_max_s; });
  g.text(
      "client.stack_retries", "Stack retries",
      "retries per layer, outermost first (\"2,1\"); overrides layers and "
      "retries when set",
      [](S & s) -> auto& { return s.client.stack_retries; });
  g.number(
      "client.backoff.base_s", 0, 1e6, "s", "Backoff base", "delay window before the first retry",
      [](S & s) -> auto& { return s.client.backoff.base_s; });
  g.number(
      "client.backoff.multiplier", 1, 100, "x", "Backoff multiplier",
      "growth of the window per retry", [](S & s) -> auto& { return s.client.backoff.multiplier; });
  g.number(
      "client.backoff.cap_s", 0, 1e6, "s", "Backoff cap", "largest window; 0 = no cap",
      [](S & s) -> auto& { return s.client.backoff.cap_s; });
  g.choice<Jitter>(
      "client.backoff.jitter", {"none", "full", "equal", "decorrelated", "grpc"}, "Jitter",
      "none: the window; full: [0, w); equal: [w/2, w); decorrelated: [base, 3^k base); "
      "grpc: w x [0.8, 1.2)",
      [](S & s) -> auto& { return s.client.backoff.jitter; });
}

// The retry budget: its kind and the numbers each kind reads (docs/policies.md).
void add_budget_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "client");
  g.choice<BudgetKind>(
      "client.budget.kind",
      {"none", "token_bucket", "window", "envoy_concurrency", "grpc_throttling", "aws_quota",
       "ratio_ttl"},
      "Retry budget", "how retries are capped: see docs/policies.md",
      [](S & s) -> auto& { return s.client.budget.kind; });
  g.number(
      "client.budget.ratio", 0, 100, "", "Budget ratio",
      "retries allowed per first attempt (0.1 = 10%)",
      [](S & s) -> auto& { return s.client.budget.ratio; });
  g.number(
       "client.budget.window_s", 0, 1e6, "s", "Budget window",
       "token bucket size or rolling window length",
       [](S & s) -> auto& { return s.client.budget.window_s; })
      .above_min();
  g.number(
      "client.budget.min_concurrency", 0, 1e6, "", "Min retry concurrency",
      "envoy_concurrency: retries always allowed per client",
      [](S & s) -> auto& { return s.client.budget.min_concurrency; });
  g.number(
      "client.budget.max_tokens", 0, 1000, "", "Max tokens", "grpc_throttling: tokens per client",
      [](S & s) -> auto& { return s.client.budget.max_tokens; });
  g.number(
      "client.budget.token_ratio", 0, 1000, "", "Token ratio",
      "grpc_throttling: tokens a success returns",
      [](S & s) -> auto& { return s.client.budget.token_ratio; });
  g.number(
      "client.budget.quota_tokens", 0, 1e6, "", "Retry quota", "aws_quota: tokens per client",
      [](S & s) -> auto& { return s.client.budget.quota_tokens; });
  g.number(
      "client.budget.retry_cost", 0, 1e6, "", "Retry cost",
      "aws_quota: tokens a retry after an error answer costs",
      [](S & s) -> auto& { return s.client.budget.retry_cost; });
  g.number(
      "client.budget.timeout_cost", 0, 1e6, "", "Timeout retry cost",
      "aws_quota: tokens a retry after a timeout costs",
      [](S & s) -> auto& { return s.client.budget.timeout_cost; });
  g.number(
      "client.budget.success_reward", 0, 1e6, "", "Success reward",
      "aws_quota: tokens a first-attempt success adds",
      [](S & s) -> auto& { return s.client.budget.success_reward; });
  g.number(
      "client.budget.min_retries_per_s", 0, 1e6, "/s", "Min retries per second",
      "ratio_ttl: retries always allowed per client and second",
      [](S & s) -> auto& { return s.client.budget.min_retries_per_s; });
  g.number(
      "client.budget.ttl_s", 0, 1e6, "s", "Budget ttl", "ratio_ttl: how long deposits last",
      [](S & s) -> auto& { return s.client.budget.ttl_s; });
  g.number(
      "client.budget.clients", 1, 1e7, "", "Clients",
      "client instances sharing the load (per-client budgets scale by it)",
      [](S & s) -> auto& { return s.client.budget.clients; });
}

// What counts as recovered, and the grid the tipping point tries.
void add_recovery_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "run");
  g.number(
       "recovery.goodput_fraction", 0, 1, "", "Recovered at",
       "share of demand goodput must hold to count as recovered",
       [](S & s) -> auto& { return s.recovery.goodput_fraction; })
      .above_min();
  g.choice<RecoveryCriterion>(
      "recovery.criterion", {"failures", "goodput"}, "Recovery means",
      "failures: no more user failures; goodput: goodput back above the fraction",
      [](S & s) -> auto& { return s.recovery.criterion; });
  g.number(
      "tipping.grid_s", 0, 1e7, "s", "Tipping grid",
      "grid of incident lengths the tipping point tries; 0 = ten steps",
      [](S & s) -> auto& { return s.tipping.grid_s; });
}

// How the agent engine's users arrive: a process, or closed-loop clients
// (docs/agent-engine.md, "Closed-loop clients").
void add_agent_demand_keys(KeyGroup& g) {
  using S = Scenario;
  g.choice<DemandProcess>(
      "demand.process", {"deterministic", "poisson", "bursty"}, "Arrivals",
      "agent: evenly spaced, Poisson, or Poisson switching between on and off periods",
      [](S & s) -> auto& { return s.demand.process; });
  g.integer(
      "demand.clients", 0, 10000000, "Closed-loop clients",
      "agent: N clients that each send their next request only after the previous one ended "
      "(and demand.think_s); 0 = open loop at demand.rate_per_s",
      [](S & s) -> auto& { return s.demand.clients; });
  g.number(
       "demand.think_s", 0, 1e6, "s", "Think time",
       "agent, closed loop: a client's pause between the end of a request and the next (fixed; "
       "exponential with demand.process poisson)",
       [](S & s) -> auto& { return s.demand.think_s; })
      .above_min();
  g.number(
       "demand.burst_on_s", 0, 1e6, "s", "Burst length", "agent, bursty: length of an on period",
       [](S & s) -> auto& { return s.demand.burst_on_s; })
      .above_min();
  g.number(
       "demand.burst_off_s", 0, 1e6, "s", "Pause length", "agent, bursty: length of an off period",
       [](S & s) -> auto& { return s.demand.burst_off_s; })
      .above_min();
  g.number(
      "demand.burst_factor", 1, 1000, "x", "Burst factor",
      "agent, bursty: rate multiplier while on; off periods make up the mean when they can",
      [](S & s) -> auto& { return s.demand.burst_factor; });
}

// The agent engine's own keys (docs/agent-engine.md); the fluid engine ignores them.
void add_agent_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "agent");
  add_agent_demand_keys(g);
  g.choice<ServiceDist>(
      "server.service", {"deterministic", "exponential", "lognormal", "two_point"}, "Service time",
      "agent: distribution of service times; mean = slots / capacity",
      [](S & s) -> auto& { return s.server.service; });
  g.number(
      "server.service_sigma", 0, 10, "", "Service spread",
      "agent: lognormal sigma of the log; two_point: mean x (1 - v) or mean x (1 + v), v <= 1",
      [](S & s) -> auto& { return s.server.service_sigma; });
  g.integer(
      "server.slots", 0, 100000, "Slots", "agent: attempts served at once; 0 = one slot",
      [](S & s) -> auto& { return s.server.slots; });
  g.choice<QueueDiscipline>(
      "server.discipline", {"fifo", "lifo", "codel"}, "Queue discipline",
      "agent: order of service; codel drops at the head while the wait stays above target",
      [](S & s) -> auto& { return s.server.discipline; });
  g.number(
       "server.codel_target_s", 0, 1e6, "s", "CoDel target",
       "agent, codel: acceptable queueing delay",
       [](S & s) -> auto& { return s.server.codel_target_s; })
      .above_min();
  g.number(
       "server.codel_interval_s", 0, 1e6, "s", "CoDel interval",
       "agent, codel: how long the delay may stay above target before dropping",
       [](S & s) -> auto& { return s.server.codel_interval_s; })
      .above_min();
  g.number(
      "server.contention", 0, 1000, "", "Contention",
      "agent: service time x (1 + contention x other attempts at the server)",
      [](S & s) -> auto& { return s.server.contention; });
  g.number(
      "server.shed_lag_s", 0, 1e6, "s", "Shed lag",
      "agent, shed_abandoned: the server learns a caller gave up this long after it did",
      [](S & s) -> auto& { return s.server.shed_lag_s; });
  g.number(
      "server.answer_delay_s", 0, 1e6, "s", "Answer delay",
      "agent: an answer reaches its caller this long after the server finishes it",
      [](S & s) -> auto& { return s.server.answer_delay_s; });
  g.text(
      "client.layer_timeouts_s", "Layer timeouts",
      "agent: timeout per layer, outermost first (\"3,1\"); empty = client.timeout_s everywhere",
      [](S & s) -> auto& { return s.client.layer_timeouts_s; });
  g.text(
      "client.hedging", "Hedging",
      "agent: layers that hedge (a new attempt, after the backoff, each client.timeout_s while "
      "none answered): "
      "none, grpc (hedgingPolicy), envoy (hedge_on_per_try_timeout), or retry, grpc or envoy "
      "per layer, outermost first",
      [](S & s) -> auto& { return s.client.hedging; });
  g.choice<RateLimiter>(
      "client.rate_limiter", {"none", "aws_adaptive"}, "Rate limiter",
      "agent: aws_adaptive: each client's attempts wait for a token once a 429 came back "
      "(AWS adaptive retry mode; per client.budget.clients)",
      [](S & s) -> auto& { return s.client.rate_limiter; });
  g.number(
      "seed", 0, kMaxSeed, "", "Seed",
      "agent: seed of the random generator (whole number); the same seed gives the same run",
      [](S & s) -> auto& { return s.seed; });
  g.integer(
      "runs", 1, 10000, "Runs", "agent: Monte Carlo replications of `run` (seed, seed + 1, ...)",
      [](S & s) -> auto& { return s.runs; });
}

// Defenses in the client beside retries and budgets (docs/policies.md,
// "Circuit breakers" and "Client-side throttling"): agent engine.
void add_defense_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "client");
  g.choice<BreakerKind>(
      "client.breaker", {std::begin(kBreakerKindNames), std::end(kBreakerKindNames)},
      "Circuit breaker",
      "agent: a circuit breaker per client (client.budget.clients) before each innermost "
      "attempt, with the rules of opossum, cockatiel's ConsecutiveBreaker (consecutive), "
      "resilience4j or Polly; none = no breaker",
      [](S & s) -> auto& { return s.client.breaker.kind; });
  g.number(
      "client.breaker_failure_rate", 0, 1, "", "Breaker failure rate",
      "opossum, resilience4j, polly: the share of failures that opens the breaker "
      "(errorThresholdPercentage / 100, failureRateThreshold / 100, FailureRatio: Polly's "
      "default is 0.1)",
      [](S & s) -> auto& { return s.client.breaker.failure_rate; });
  g.integer(
      "client.breaker_failures", 1, 1000000, "Breaker failures in a row",
      "consecutive: the failures in a row that open the breaker",
      [](S & s) -> auto& { return s.client.breaker.failures; });
  g.number(
      "client.breaker_window_s", 0.01, 86400, "s", "Breaker window",
      "opossum, polly: the rolling window the failure share is counted over "
      "(rollingCountTimeout, SamplingDuration: Polly's default is 30 s; 10 buckets)",
      [](S & s) -> auto& { return s.client.breaker.window_s; });
  g.integer(
      "client.breaker_window_calls", 1, 100000, "Breaker window calls",
      "resilience4j: the last calls the failure share is counted over (slidingWindowSize)",
      [](S & s) -> auto& { return s.client.breaker.window_calls; });
  g.integer(
      "client.breaker_min_calls", 0, 100000, "Breaker minimum calls",
      "opossum, resilience4j, polly: calls in the window before it may open (volumeThreshold, "
      "minimumNumberOfCalls, MinimumThroughput); 0 = the library's default (0, 100, 100)",
      [](S & s) -> auto& { return s.client.breaker.min_calls; });
  g.number(
      "client.breaker_open_s", 0, 86400, "s", "Breaker open time",
      "how long the breaker stays open before trial calls (resetTimeout, halfOpenAfter, "
      "waitDurationInOpenState, BreakDuration); 0 = the library's default (30 s; resilience4j "
      "60 s, polly 5 s)",
      [](S & s) -> auto& { return s.client.breaker.open_s; });
  g.integer(
      "client.breaker_trials", 0, 10000, "Breaker trial calls",
      "resilience4j: calls let through half-open (permittedNumberOfCallsInHalfOpenState); "
      "the others let one; 0 = the library's default",
      [](S & s) -> auto& { return s.client.breaker.trials; });
  g.integer(
      "client.max_requests", 0, 1000000000, "Max requests in flight",
      "agent: Envoy's cluster circuit_breakers max_requests: each client's attempts in flight "
      "beyond it are answered 503 at once and not retried (overflow); 0 = no limit",
      [](S & s) -> auto& { return s.client.max_requests; });
  g.integer(
      "client.max_connections", 0, 1000000000, "Max connections",
      "agent: Envoy's cluster circuit_breakers max_connections (HTTP/1, one attempt per "
      "connection): each client's attempts beyond it wait for a connection, their per-try "
      "timeout not yet running; 0 = no connection pool",
      [](S & s) -> auto& { return s.client.max_connections; });
  g.integer(
      "client.max_pending_requests", 0, 1000000000, "Max pending requests",
      "agent, with client.max_connections: Envoy's max_pending_requests: attempts that may wait "
      "for a connection per client; beyond it they are answered 503 at once and not retried "
      "(upstream_rq_pending_overflow)",
      [](S & s) -> auto& { return s.client.max_pending_requests; });
  g.number(
      "client.throttle_k", 0, 1000, "", "Throttle K",
      "agent: client-side adaptive throttling (Google SRE book, gRPC): each client rejects a "
      "request locally with probability max(0, (requests - K x accepts) / (requests + "
      "padding)) over the window; 0 = off",
      [](S & s) -> auto& { return s.client.throttle.k; });
  g.number(
      "client.throttle_window_s", 0.1, 86400, "s", "Throttle window",
      "the history the throttle counts requests and accepts over (the SRE book's 2 minutes; "
      "gRPC 30 s)",
      [](S & s) -> auto& { return s.client.throttle.window_s; });
  g.number(
      "client.throttle_padding", 0, 1e6, "", "Throttle padding",
      "added to requests in the throttle's denominator (the SRE book's 1; gRPC's 8)",
      [](S & s) -> auto& { return s.client.throttle.padding; });
}

// A dependency of several hosts and Envoy's outlier detection in each
// client (docs/policies.md, "Outlier detection"): agent engine.
void add_host_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "client");
  g.integer(
      "server.hosts", 1, 100, "Hosts",
      "agent: the dependency's hosts; capacity_per_s, queue_limit and slots are split evenly "
      "among them, each with its own queue; each client picks hosts round robin (Envoy's "
      "default)",
      [](S & s) -> auto& { return s.server.hosts; });
  g.integer(
      "incident.hosts", 0, 100, "Hosts hit",
      "with server.hosts: the incident hits this many of the hosts; 0 = all",
      [](S & s) -> auto& { return s.incident.hosts; });
  g.integer(
      "client.outlier_5xx", 0, 1000000, "Outlier: 5xx in a row",
      "agent: Envoy's outlier detection in each client: this many 5xx in a row from a host (a "
      "timeout counts as 504, a refused connection or a reset as 5xx, a 429 ends the run) eject "
      "it (consecutive_5xx); 0 = off",
      [](S & s) -> auto& { return s.client.outlier.consecutive_5xx; });
  g.number(
      "client.outlier_interval_s", 0.01, 86400, "s", "Outlier interval",
      "how often ejected hosts whose time is up come back (interval)",
      [](S & s) -> auto& { return s.client.outlier.interval_s; });
  g.number(
      "client.outlier_ejection_s", 0.001, 86400, "s", "Outlier ejection time",
      "how long a first ejection lasts; the nth lasts n times longer (base_ejection_time)",
      [](S & s) -> auto& { return s.client.outlier.ejection_s; });
  g.number(
      "client.outlier_max_ejection_s", 0.001, 86400, "s", "Outlier longest ejection",
      "the longest an ejection lasts (max_ejection_time); at least client.outlier_ejection_s",
      [](S & s) -> auto& { return s.client.outlier.max_ejection_s; });
  g.number(
      "client.outlier_max_percent", 0, 100, "%", "Outlier max ejected",
      "the most hosts ejected at once, in percent of all; an ejection beyond it does not happen "
      "(max_ejection_percent: Envoy's and Istio's default 10 ejects none of fewer than 10 "
      "hosts)",
      [](S & s) -> auto& { return s.client.outlier.max_percent; });
  g.number(
      "client.outlier_panic_percent", 0, 100, "%", "Panic threshold",
      "below this percent of hosts not ejected, a client sends to every host "
      "(healthy_panic_threshold: Envoy 50, Istio's minHealthPercent 0 = never)",
      [](S & s) -> auto& { return s.client.outlier.panic_percent; });
}

// The session model's scheduler and sessions (docs/sessions.md); other engines
// ignore them.
void add_session_scheduler_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "sessions");
  g.number(
       "sessions.poll_s", 0, text::kDay, "s", "Scheduler tick",
       "sessions: the scheduler looks every", [](S & s) -> auto& { return s.sessions.poll_s; })
      .above_min();
  g.number(
       "sessions.watchdog_s", 0, text::kDay, "s", "Watchdog",
       "sessions: how often the watchdog looks at a sleeping session past its deadline",
       [](S & s) -> auto& { return s.sessions.watchdog_s; })
      .above_min();
  g.integer(
      "sessions.batch_cap", 1, 10000, "Batch cap", "sessions: items a session claims at most",
      [](S & s) -> auto& { return s.sessions.batch_cap; });
  g.integer(
      "sessions.max_deliveries", 1, 100, "Deliveries",
      "sessions: launches a wake-up chain may cause, the first included (at-least-once retries)",
      [](S & s) -> auto& { return s.sessions.max_deliveries; });
  g.number(
      "sessions.launch_delay_min_s", 0, text::kDay, "s", "Launch delay from",
      "sessions: a launch starts U(min, max) after its tick",
      [](S & s) -> auto& { return s.sessions.launch_delay_min_s; });
  g.number(
      "sessions.launch_delay_max_s", 0, text::kDay, "s", "Launch delay to", "sessions: see min",
      [](S & s) -> auto& { return s.sessions.launch_delay_max_s; });
  g.number(
      "sessions.boot_min_s", 0, text::kDay, "s", "Boot from", "sessions: boot time U(min, max)",
      [](S & s) -> auto& { return s.sessions.boot_min_s; });
  g.number(
      "sessions.boot_max_s", 0, text::kDay, "s", "Boot to", "sessions: see min",
      [](S & s) -> auto& { return s.sessions.boot_max_s; });
  g.number(
      "sessions.scan_min_s", 0, text::kDay, "s", "Scan from",
      "sessions: the scan round's work U(min, max)",
      [](S & s) -> auto& { return s.sessions.scan_min_s; });
  g.number(
      "sessions.scan_max_s", 0, text::kDay, "s", "Scan to", "sessions: see min",
      [](S & s) -> auto& { return s.sessions.scan_max_s; });
  g.number(
       "sessions.round_min_s", 0, text::kDay, "s", "Round from",
       "sessions: work budget of one item round U(min, max)",
       [](S & s) -> auto& { return s.sessions.round_min_s; })
      .above_min();
  g.number(
      "sessions.round_max_s", 0, text::kDay, "s", "Round to", "sessions: see min",
      [](S & s) -> auto& { return s.sessions.round_max_s; });
  g.number(
      "sessions.housekeeping_median_s", 0, text::kDay, "s", "Housekeeping",
      "sessions: housekeeping round, lognormal with this median",
      [](S & s) -> auto& { return s.sessions.housekeeping_median_s; });
  g.number(
      "sessions.housekeeping_sigma", 0, 5, "", "Housekeeping spread",
      "sessions: sigma of the log of the housekeeping time",
      [](S & s) -> auto& { return s.sessions.housekeeping_sigma; });
  g.number(
      "sessions.wrapup_min_s", 0, text::kDay, "s", "Wrap-up from",
      "sessions: the wrap-up round (writes the execution log) U(min, max)",
      [](S & s) -> auto& { return s.sessions.wrapup_min_s; });
  g.number(
      "sessions.wrapup_max_s", 0, text::kDay, "s", "Wrap-up to", "sessions: see min",
      [](S & s) -> auto& { return s.sessions.wrapup_max_s; });
  g.number(
      "sessions.crash_probability", 0, 1, "", "Crash chance",
      "sessions: chance of an unrelated crash early in a session",
      [](S & s) -> auto& { return s.sessions.crash_probability; });
  g.number(
      "sessions.crash_within_s", 0, text::kDay, "s", "Crash window",
      "sessions: a crash comes U(0, this) after the start",
      [](S & s) -> auto& { return s.sessions.crash_within_s; });
}

// The session model's two fixes, and the window the run and its headline cover.
void add_session_fix_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "sessions");
  g.flag(
      "sessions.deadline_aware", "Deadline-aware backoff",
      "sessions, fix one: fail fast when the rest of the ladder cannot finish before the deadline",
      [](S & s) -> auto& { return s.sessions.deadline_aware; });
  g.number(
      "sessions.fail_fast_s", 0, text::kDay, "s", "Fail-fast time",
      "sessions: how long failing fast takes",
      [](S & s) -> auto& { return s.sessions.fail_fast_s; });
  g.flag(
      "sessions.anchor_first", "Anchor first",
      "sessions, fix two: a session opening with a full batch does the anchors first, then a few "
      "others, and leaves the rest unread",
      [](S & s) -> auto& { return s.sessions.anchor_first; });
  g.integer(
      "sessions.anchor_threshold", 1, 10000, "Anchor rule from",
      "sessions: batch size from which the anchor rule applies",
      [](S & s) -> auto& { return s.sessions.anchor_threshold; });
  g.integer(
      "sessions.anchor_others", 0, 10000, "Others after anchors",
      "sessions: items other than anchors a session under the anchor rule does at most",
      [](S & s) -> auto& { return s.sessions.anchor_others; });
  g.flag(
      "sessions.deterministic", "Deterministic",
      "sessions: every random draw at its median (a replay with no randomness)",
      [](S & s) -> auto& { return s.sessions.deterministic; });
  g.number(
      "sessions.start_s", 0, kWeek, "s", "Start",
      "sessions: time of the first scheduler tick; nothing earlier is simulated",
      [](S & s) -> auto& { return s.sessions.start_s; });
  g.number(
      "sessions.focus_from_s", 0, kWeek, "s", "Focus from",
      "sessions: start of the window the headline figures cover, at or after sessions.start_s "
      "(0 and 0: the whole run)",
      [](S & s) -> auto& { return s.sessions.focus_from_s; });
  g.number(
      "sessions.focus_to_s", 0, kWeek, "s", "Focus to", "sessions: end of that window",
      [](S & s) -> auto& { return s.sessions.focus_to_s; });
}

// The API the sessions call: its states over time and its answer times.
void add_session_api_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "sessions");
  g.text(
      "api.timeline", "API timeline",
      "sessions: the API's states, \"WHEN STATE, ...\" with WHEN in seconds or [Nd]HH:MM and STATE "
      "healthy, dead, 429:P or 401; healthy before the first entry",
      [](S & s) -> auto& { return s.api.timeline; });
  g.number(
      "api.success_min_s", 0, text::kDay, "s", "Answer from",
      "sessions: a successful call takes U(min, max)",
      [](S & s) -> auto& { return s.api.success_min_s; });
  g.number(
      "api.success_max_s", 0, text::kDay, "s", "Answer to", "sessions: see min",
      [](S & s) -> auto& { return s.api.success_max_s; });
  g.number(
      "api.error_min_s", 0, text::kDay, "s", "429 from", "sessions: a 429 answer takes U(min, max)",
      [](S & s) -> auto& { return s.api.error_min_s; });
  g.number(
      "api.error_max_s", 0, text::kDay, "s", "429 to", "sessions: see min",
      [](S & s) -> auto& { return s.api.error_max_s; });
  g.number(
      "api.auth_min_s", 0, text::kDay, "s", "401 from", "sessions: a 401 answer takes U(min, max)",
      [](S & s) -> auto& { return s.api.auth_min_s; });
  g.number(
      "api.auth_max_s", 0, text::kDay, "s", "401 to", "sessions: see min",
      [](S & s) -> auto& { return s.api.auth_max_s; });
}

// The items the sessions work on: pings, notifications, the daily anchor.
void add_session_item_keys(std::vector<KeySpec>& keys) {
  using S = Scenario;
  KeyGroup g(keys, "sessions");
  g.text(
      "items.ping_rates_per_h", "Pings per hour",
      "sessions: 24 rates, 0 to 3600 pings per hour for each hour of the day from 00",
      [](S & s) -> auto& { return s.items.ping_rates_per_h; });
  g.text(
      "items.ping_day_factors", "Ping day factors",
      "sessions: multiplier of the ping rates per day (\"1,1,0.5\"), 0 to 100; the last one "
      "repeats",
      [](S & s) -> auto& { return s.items.ping_day_factors; });
  g.integer(
      "items.ping_channels", 1, 10000, "Ping channels",
      "sessions: a new ping replaces an unread, unclaimed one on its channel",
      [](S & s) -> auto& { return s.items.ping_channels; });
  g.number(
      "items.ping_work_median_s", 0, text::kDay, "s", "Ping work",
      "sessions: lognormal median of a ping's work",
      [](S & s) -> auto& { return s.items.ping_work_median_s; });
  g.number(
      "items.ping_work_sigma", 0, 5, "", "Ping work spread", "sessions: sigma of its log",
      [](S & s) -> auto& { return s.items.ping_work_sigma; });
  g.integer(
      "items.notifications_per_day", 0, 10000, "Notifications",
      "sessions: notifications arriving together once a day",
      [](S & s) -> auto& { return s.items.notifications_per_day; });
  g.number(
      "items.notification_at_s", 0, text::kDay, "s", "Notifications at",
      "sessions: their time of day", [](S & s) -> auto& { return s.items.notification_at_s; });
  g.number(
      "items.notification_fresh_min_s", 0, text::kDay, "s", "Fresh from",
      "sessions: work of a fresh notification U(min, max)",
      [](S & s) -> auto& { return s.items.notification_fresh_min_s; });
  g.number(
      "items.notification_fresh_max_s", 0, text::kDay, "s", "Fresh to", "sessions: see min",
      [](S & s) -> auto& { return s.items.notification_fresh_max_s; });
  g.number(
      "items.notification_stale_after_s", 0, kWeek, "s", "Stale after",
      "sessions: age from which a notification is stale and slower to triage",
      [](S & s) -> auto& { return s.items.notification_stale_after_s; });
  g.number(
      "items.notification_stale_min_s", 0, text::kDay, "s", "Stale from",
      "sessions: work of a stale notification U(min, max)",
      [](S & s) -> auto& { return s.items.notification_stale_min_s; });
  g.number(
      "items.notification_stale_max_s", 0, text::kDay, "s", "Stale to", "sessions: see min",
      [](S & s) -> auto& { return s.items.notification_stale_max_s; });
  g.number(
      "items.anchor_at_s", -1, text::kDay, "s", "Anchor at",
      "sessions: time of day of the daily anchor job; -1 = none",
      [](S & s) -> auto& { return s.items.anchor_at_s; });
  g.number(
      "items.anchor_work_median_s", 0, text::kDay, "s", "Anchor work",
      "sessions: lognormal median of the anchor's work",
      [](S & s) -> auto& { return s.items.anchor_work_median_s; });
  g.number(
      "items.anchor_work_sigma", 0, 5, "", "Anchor work spread", "sessions: sigma of its log",
      [](S & s) -> auto& { return s.items.anchor_work_sigma; });
  g.text(
      "items.initial_queue", "Queue at start",
      "sessions: items queued at sessions.start_s, \"14 notification @2d06:30, anchor @2d18:00, "
      "5 ping @2d21:00-2d21:48\"",
      [](S & s) -> auto& { return s.items.initial_queue; });
}

// The limiters' own keys matter only with the limiter that reads them.
void set_limiter_when(KeySpec& k) {
  static const std::set<std::string> envoy = {
      "server.concurrency_update_s", "server.min_rtt_interval_s",     "server.min_rtt_jitter",
      "server.min_rtt_buffer",       "server.concurrency_percentile", "server.min_rtt_requests",
      "server.min_concurrency",      "server.max_concurrency"};
  static const std::map<std::string, std::vector<std::string>> netflix = {
      {"server.initial_limit", {"gradient2", "vegas"}},
      {"server.max_limit", {"gradient2", "vegas"}},
      {"server.limit_smoothing", {"gradient2", "vegas"}},
      {"server.min_limit", {"gradient2"}},
      {"server.limit_queue_size", {"gradient2"}},
      {"server.limit_long_window", {"gradient2"}},
      {"server.limit_rtt_tolerance", {"gradient2"}},
      {"server.limit_probe_multiplier", {"vegas"}}};
  auto it = netflix.find(k.path);
  if (!envoy.count(k.path) && it == netflix.end()) return;
  k.when_path = "server.adaptive_concurrency";
  k.when_values = it == netflix.end() ? std::vector<std::string>{"envoy"} : it->second;
}

// When each key matters (the page hides the others): an engine's own keys
// with that engine, the budget numbers with the budgets that read them.
void set_when_rules(std::vector<KeySpec>& keys) {
  // Budget parameters matter only with the budgets that read them.
  const std::map<std::string, std::vector<std::string>> budget_uses = {
      {"client.budget.ratio", {"token_bucket", "window", "envoy_concurrency", "ratio_ttl"}},
      {"client.budget.window_s", {"token_bucket", "window"}},
      {"client.budget.min_concurrency", {"envoy_concurrency"}},
      {"client.budget.max_tokens", {"grpc_throttling"}},
      {"client.budget.token_ratio", {"grpc_throttling"}},
      {"client.budget.quota_tokens", {"aws_quota"}},
      {"client.budget.retry_cost", {"aws_quota"}},
      {"client.budget.timeout_cost", {"aws_quota"}},
      {"client.budget.success_reward", {"aws_quota"}},
      {"client.budget.min_retries_per_s", {"ratio_ttl"}},
      {"client.budget.ttl_s", {"ratio_ttl"}},
  };
  // client.budget.clients has no rule: besides the per-client budgets it
  // counts the clients of the rate limiter, breaker, throttle and max_requests.
  for (KeySpec& k : keys) {
    if (k.group == "agent") {  // the agent engine's own keys
      k.when_path = "engine";
      k.when_values = {"agent", "sessions"};
    }
    if (k.group == "sessions") {
      k.when_path = "engine";
      k.when_values = {"sessions"};
    }
    // A dependency of several hosts is the agent engine's; what hits or
    // ejects hosts matters only with more than one.
    if (k.path == "server.hosts") {
      k.when_path = "engine";
      k.when_values = {"agent"};
    }
    if (k.path == "incident.hosts" || k.path.starts_with("client.outlier_")) {
      k.when_path = "server.hosts";
      k.when_values.clear();
      for (int n = 2; n <= 100; ++n) k.when_values.push_back(std::to_string(n));
      k.when_text = "server.hosts is above 1";
    }
    // Keys of the per-step engines only (the session model has its own).
    static const std::set<std::string> step_only = {
        "service_completes",       "client.timeout_s",          "client.layers",
        "client.retry_on_timeout", "client.stack_retries",      "client.budget.kind",
        "client.retry_on",         "recovery.goodput_fraction", "recovery.criterion",
        "tipping.grid_s",          "client.pushback",           "client.pushback_max_s"};
    if (k.group == "incident" || k.group == "demand_server" || step_only.count(k.path)) {
      k.when_path = "engine";
      k.when_values = {"fluid", "agent"};
    }
    // The incident's service and a fault on a call: a graph's only.
    static const std::set<std::string> graph_only = {
        "incident.service",     "incident.call",         "incident.delay_s", "incident.delay_share",
        "incident.abort_share", "incident.abort_status", "incident.fault_on"};
    if (graph_only.count(k.path)) {
      k.when_path = "services";
      k.when_values.clear();
      k.when_present = true;
      k.when_text = "the scenario has services (a graph)";
    }
    set_limiter_when(k);
    auto it = budget_uses.find(k.path);
    if (it == budget_uses.end()) continue;
    k.when_path = "client.budget.kind";
    k.when_values = it->second;
  }
}

// The table, group by group in the order the page and docs/configs.md list them.
std::vector<KeySpec> build_keys() {
  std::vector<KeySpec> keys;
  add_run_keys(keys);
  add_demand_server_keys(keys);
  add_incident_keys(keys);
  add_client_keys(keys);
  add_budget_keys(keys);
  add_recovery_keys(keys);
  add_agent_keys(keys);
  add_defense_keys(keys);
  add_host_keys(keys);
  add_session_scheduler_keys(keys);
  add_session_fix_keys(keys);
  add_session_api_keys(keys);
  add_session_item_keys(keys);
  set_when_rules(keys);
  return keys;
}

double parse_number(const std::string& path, const std::string& text) {
  double v = 0;
  switch (parse_decimal(text, v)) {
    case NumberText::ok:
      return v;
    case NumberText::out_of_range:
      throw InputError(path + ": '" + clip(text) + "' is outside the range of numbers");
    case NumberText::not_a_number:
      break;
  }
  throw InputError(path + ": '" + clip(text) + "' is not a number");
}

}  // namespace

const std::vector<KeySpec>& scenario_keys() {
  static const std::vector<KeySpec> keys = build_keys();
  return keys;
}

const KeySpec* find_key(const std::string& path) {
  for (const auto& k : scenario_keys())
    if (k.path == path) return &k;
  return nullptr;
}

namespace {

// Edits (insert, delete, replace a character) from `a` to `b`, stopping at
// `limit` + 1: a path far from every key costs no more than a short one.
size_t edits(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0], best = row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

// The keys nearest a mistyped path: within a few edits, or with the same
// last part ("retries" for "server.retries"), at most three.
std::vector<std::string> nearest_keys(const std::string& path) {
  size_t limit = std::max<size_t>(2, path.size() / 5);
  std::string last = path.substr(path.rfind('.') + 1);
  std::vector<std::pair<size_t, std::string>> near;
  for (const auto& k : scenario_keys()) {
    size_t d = edits(path, k.path, limit);
    bool same_last =
        !last.empty() && k.path.size() > last.size() &&
        k.path.compare(k.path.size() - last.size() - 1, std::string::npos, "." + last) == 0;
    if (d <= limit || same_last) near.emplace_back(same_last ? std::min(d, limit) : d, k.path);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < 3; ++i) out.push_back(near[i].second);
  return out;
}

}  // namespace

const KeySpec& key_or_throw(const std::string& path) {
  if (const KeySpec* k = find_key(path)) return *k;
  std::vector<std::string> near = nearest_keys(path);
  std::string hint;
  for (size_t i = 0; i < near.size(); ++i)
    hint += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + near[i];
  throw InputError(
      "unknown key '" + clip(path) + "'; " +
      (hint.empty() ? std::string("no key is close to it") : "did you mean " + hint + "?") +
      " (`retrystorm keys` lists all " + std::to_string(scenario_keys().size()) + ")");
}

std::string to_string(const KeyValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const double* d = std::get_if<double>(&v)) return number_text(*d);
  return std::get<std::string>(v);
}

bool parse_number_list(const std::string& text, std::vector<double>& out, std::string& bad) {
  for (std::string_view item : text::list_items(text)) {
    double v = 0;
    if (parse_decimal(item, v) != NumberText::ok) {
      bad = item;
      return false;
    }
    out.push_back(v);
  }
  return true;
}

void set_key(Scenario& s, const std::string& path, const KeyValue& value) {
  if (is_graph_path(path)) return set_graph_key(s, path, value);  // model/graph.hpp
  const KeySpec& k = key_or_throw(path);
  switch (k.type) {
    case KeyType::number:
    case KeyType::integer: {
      const double* d = std::get_if<double>(&value);
      if (!d) throw InputError(path + ": '" + clip(to_string(value)) + "' is not a number");
      if (!std::isfinite(*d)) throw InputError(path + ": the value must be finite");
      bool below = k.min_exclusive ? *d <= k.min : *d < k.min;
      if (below || *d > k.max)
        throw InputError(path + ": " + number_text(*d) + " is out of range; allowed " +
                         (k.min_exclusive ? "above " : "from ") + number_text(k.min) +
                         (k.min_exclusive ? " up to " : " to ") + number_text(k.max) +
                         (k.unit.empty() || k.unit == "x" ? "" : " " + k.unit));
      if (k.type == KeyType::integer && *d != std::floor(*d))
        throw InputError(path + ": " + number_text(*d) + " must be a whole number");
      break;
    }
    case KeyType::boolean:
      if (!std::holds_alternative<bool>(value))
        throw InputError(path + ": '" + clip(to_string(value)) + "' is not true or false");
      break;
    case KeyType::choice: {
      const std::string* t = std::get_if<std::string>(&value);
      bool ok = t && std::find(k.choices.begin(), k.choices.end(), *t) != k.choices.end();
      if (!ok) {
        std::string allowed;
        for (const auto& c : k.choices) allowed += (allowed.empty() ? "" : ", ") + c;
        // The value clipped, so that what is allowed stays in the message.
        throw InputError(path + ": '" + clip(to_string(value)) +
                         "' is not allowed; choose one of " + allowed);
      }
      break;
    }
    case KeyType::text:
      if (!std::holds_alternative<std::string>(value))
        throw InputError(path + ": '" + clip(to_string(value)) + "' must be text");
      break;
  }
  k.put(s, value);
}

void set_key_text(Scenario& s, const std::string& path, const std::string& text) {
  KeyType type = is_graph_path(path) ? graph_key_type(path) : key_or_throw(path).type;
  switch (type) {
    case KeyType::number:
    case KeyType::integer:
      return set_key(s, path, parse_number(path, text));
    case KeyType::boolean:
      // Only the words a scenario file takes: anything else (yes, 1, on) is
      // refused by set_key, as the same value in a file is.
      if (text == "true" || text == "false") return set_key(s, path, text == "true");
      return set_key(s, path, text);
    case KeyType::choice:
    case KeyType::text:
      return set_key(s, path, text);
  }
}

namespace {

// The key at k's when_path has one of k's when_values.
bool key_holds(const KeySpec& k, const Scenario& s) {
  const std::string now = to_string(key_or_throw(k.when_path).get(s));
  return std::find(k.when_values.begin(), k.when_values.end(), now) != k.when_values.end();
}

}  // namespace

std::vector<std::string> ignored_keys(const Scenario& s, const std::vector<std::string>& given) {
  static const Scenario defaults;
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& path : given) {
    const KeySpec* k = find_key(path);
    if (!k || k->when_path.empty() || !seen.insert(path).second) continue;
    if (k->when_present ? !s.graph.empty() : key_holds(*k, s)) continue;
    if (to_string(k->get(s)) == to_string(k->get(defaults))) continue;
    std::string list;
    for (const auto& v : k->when_values) list += (list.empty() ? "" : ", ") + v;
    const std::string when = k->when_text.empty() ? k->when_path + " is " + list : k->when_text;
    const std::string now =
        k->when_present ? std::string("it has none")
                        : k->when_path + " is " + to_string(key_or_throw(k->when_path).get(s));
    out.push_back(path + ": ignored: it applies when " + when + ", and here " + now);
  }
  return out;
}

double get_number(const Scenario& s, const std::string& path) {
  if (is_graph_path(path)) {
    KeyType type = graph_key_type(path);
    if (type != KeyType::number && type != KeyType::integer)
      throw InputError(path + ": is not a numeric key");
    return std::get<double>(graph_key_value(s, path));
  }
  const KeySpec& k = key_or_throw(path);
  if (k.type != KeyType::number && k.type != KeyType::integer)
    throw InputError(path + ": is not a numeric key");
  return std::get<double>(k.get(s));
}

void validate_horizon(const Scenario& s, const RunLimits& limits) {
  if (!whole_multiple(s.horizon_s, s.step_s))
    throw InputError("horizon_s: " + number_text(s.horizon_s) +
                     " is not a whole number of steps of step_s = " + number_text(s.step_s));
  double steps = std::round(s.horizon_s / s.step_s);
  if (steps > limits.max_steps)
    throw InputError("horizon_s: " + number_text(s.horizon_s) + " s at step_s " +
                     number_text(s.step_s) + " is " + number_text(steps) + " steps; the limit is " +
                     std::to_string(limits.max_steps));
}

void validate_step_keys(const Scenario& s, const RunLimits& limits) {
  // An incident that starts when the run is over never happens: the verdict
  // would measure recovery from a moment the run never reached.
  if (s.incident.random_per_h > 0 && !(s.incident.duration_s > 0))
    throw InputError("incident.random_per_h: " + number_text(s.incident.random_per_h) +
                     " incidents per hour of incident.duration_s 0 s are none; give "
                     "incident.duration_s above 0");
  const bool scripted = s.incident.random_per_h <= 0 && s.incident.duration_s > 0;
  if (scripted && s.incident.start_s >= s.horizon_s)
    throw InputError("incident.start_s: " + number_text(s.incident.start_s) +
                     " s is not inside the run (horizon_s = " + number_text(s.horizon_s) +
                     " s); start the incident before the run ends");
  if (!whole_multiple(s.client.timeout_s, s.step_s))
    throw InputError("client.timeout_s: " + number_text(s.client.timeout_s) +
                     " is not a whole number of steps of step_s = " + number_text(s.step_s));
  if (s.client.budget.kind == BudgetKind::window &&
      !whole_multiple(s.client.budget.window_s, s.step_s))
    throw InputError("client.budget.window_s: " + number_text(s.client.budget.window_s) +
                     " is not a whole number of steps of step_s = " + number_text(s.step_s));
  double attempts = attempts_of(s.layer_retries());  // also checks client.stack_retries
  if (attempts > limits.max_attempts) {
    std::string what = s.client.stack_retries.empty()
                           ? "client.retries: " + std::to_string(s.client.retries) +
                                 " retries at " + std::to_string(s.client.layers) + " layers"
                           : "client.stack_retries: '" + s.client.stack_retries + "'";
    throw InputError(what + " make " + number_text(attempts) +
                     " attempts per request; the limit is " + std::to_string(limits.max_attempts));
  }
  s.retried_answers();  // checks client.retry_on
  s.hedged_layers();    // checks client.hedging
  s.demand_profile();   // checks demand.profile and server.capacity_profile
  s.capacity_profile_over_time();
  if (!s.graph.empty() && !(s.demand.profile.empty() && s.server.capacity_profile.empty()))
    throw InputError(
        "demand.profile, server.capacity_profile: not with services yet; give the graph's "
        "load with incident.demand_factor and its capacity with each service's keys");
  if (!s.graph.empty() && s.incident.random_per_h > 0)
    throw InputError(
        "incident.random_per_h: incidents at random are not with services yet; give the "
        "graph's incident with incident.start_s and incident.duration_s");
  if (s.client.budget.kind == BudgetKind::ratio_ttl &&
      !whole_multiple(s.client.budget.ttl_s, s.step_s))
    throw InputError("client.budget.ttl_s: " + number_text(s.client.budget.ttl_s) +
                     " is not a whole number of steps of step_s = " + number_text(s.step_s));
}

int Scenario::steps() const {
  return static_cast<int>(std::lround(horizon_s / step_s));
}
int Scenario::timeout_steps() const {
  return static_cast<int>(std::lround(client.timeout_s / step_s));
}
std::vector<int> Scenario::layer_retries() const {
  if (client.stack_retries.empty()) return std::vector<int>(client.layers, client.retries);
  std::vector<int> out;
  for (std::string_view item : text::list_items(client.stack_retries)) {
    int r = -1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), r);
    if (ec != std::errc() || end != item.data() + item.size() || r < 0 || r > 100)
      throw InputError("client.stack_retries: '" + client.stack_retries +
                       "' must be retries per layer, whole numbers 0 to 100, like 2,1");
    out.push_back(r);
  }
  if (out.empty() || out.size() > 6)
    throw InputError("client.stack_retries: '" + client.stack_retries +
                     "' must name 1 to 6 layers, like 2,1");
  return out;
}

std::vector<Hedging> Scenario::hedged_layers() const {
  size_t layers = layer_retries().size();
  auto named = [](std::string_view name) -> std::optional<Hedging> {
    for (int h = 0; h < 3; ++h)
      if (name == kHedgingNames[h]) return static_cast<Hedging>(h);
    return std::nullopt;
  };
  const std::string& text = client.hedging;
  if (text == "none") return std::vector<Hedging>(layers, Hedging::none);
  if (text == "grpc" || text == "envoy") return std::vector<Hedging>(layers, *named(text));
  std::vector<Hedging> out;
  for (std::string_view item : text::list_items(text)) {
    auto h = named(item);
    if (!h)
      throw InputError("client.hedging: '" + text +
                       "' must be none, grpc, envoy, or retry, grpc or envoy per layer, like "
                       "grpc,retry");
    out.push_back(*h);
  }
  if (out.size() != layers)
    throw InputError("client.hedging: '" + text + "' names " + std::to_string(out.size()) +
                     " layers for " + std::to_string(layers) +
                     " retrying layers; give one per layer, outermost first");
  return out;
}

std::string answer_list(AnswerSet answers, const std::string& separator) {
  std::string out;
  for (int c = 0; c < 4; ++c)
    if (answers & answer_bit(static_cast<FailureClass>(c)))
      out += (out.empty() ? "" : separator) + kFailureClassNames[c];
  return out;
}

std::string answer_set_text(AnswerSet answers) {
  if (answers == kAllAnswers) return "all";
  if (answers == 0) return "none";
  return answer_list(answers, ",");
}

AnswerSet Scenario::retried_answers() const {
  if (client.retry_on == "all") return kAllAnswers;
  if (client.retry_on == "none") return 0;
  AnswerSet out = 0;
  for (std::string_view item : text::list_items(client.retry_on)) {
    bool known = false;
    for (int c = 0; c < 4; ++c)
      if (item == kFailureClassNames[c]) {
        out |= answer_bit(static_cast<FailureClass>(c));
        known = true;
      }
    if (!known)
      throw InputError("client.retry_on: '" + client.retry_on + "' names '" + std::string(item) +
                       "'; allowed: all, none, or a list of 503, 429, refused, reset");
  }
  return out;
}

int Scenario::retrying_layers() const {
  return static_cast<int>(layer_retries().size());
}

double attempts_of(const std::vector<int>& layer_retries) {
  double product = 1;
  for (int r : layer_retries) product *= r + 1.0;
  return product;
}

int Scenario::attempts() const {
  return static_cast<int>(std::min(attempts_of(layer_retries()), 1e9));
}
double Scenario::requests_bound() const {
  // Closed loop: each client sends at most one request per think time (on
  // average, when the think time is drawn).
  if (demand.clients > 0) return demand.clients * std::ceil(horizon_s / demand.think_s + 1);
  double surge =
      std::max(1.0, incident.demand_factor) *
      std::max(1.0,
               parse_profile(demand.profile, demand.profile_period_s, "demand.profile").highest());
  if (demand.process == DemandProcess::bursty) surge *= demand.burst_factor;
  return demand.rate_per_s * horizon_s * surge;
}
Profile Scenario::demand_profile() const {
  return parse_profile(demand.profile, demand.profile_period_s, "demand.profile");
}
Profile Scenario::capacity_profile_over_time() const {
  return parse_profile(server.capacity_profile, server.capacity_profile_period_s,
                       "server.capacity_profile");
}
double Scenario::incident_end_s() const {
  return incident.start_s + incident.duration_s;
}
bool Scenario::in_incident(int step) const {
  // Compared in step units so that 10 s / 0.05 s lands on step 200 exactly.
  double t = step;
  double start = incident.start_s / step_s, end = incident_end_s() / step_s;
  return start - kStepEpsilon <= t && t < end - kStepEpsilon;
}

}  // namespace retrystorm
