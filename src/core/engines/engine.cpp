#include "engines/engine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "engines/agent/agent.hpp"
#include "engines/fluid.hpp"
#include "engines/sessions/session_engine.hpp"
#include "model/graph.hpp"
#include "policies/client_policy.hpp"
#include "text/list.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// A graph's hops each have their own queue and retrying client; the step
// rules of one population before one dependency do not carry over.
void refuse_graph(const Scenario& s) {
  if (!s.graph.empty())
    throw InputError(std::string("services: a graph of services runs with engine=agent; engine=") +
                     engine_name(s.engine) +
                     " models one population of clients before one "
                     "dependency (docs/graph.md)");
}

// Injected errors are drawn per attempt, at the instant it reaches the
// dependency: a per-request engine's.
// So are a client's breaker and throttle, which judge attempt by attempt.
void refuse_error_injection(const Scenario& s) {
  if (s.server.error_share > 0)
    throw InputError("server.error_share: " + number_text(s.server.error_share) +
                     " (error injection) runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no single attempts to fail");
  if (s.server.concurrency.kind != ConcurrencyLimiter::none)
    throw InputError(std::string("server.adaptive_concurrency: ") +
                     kConcurrencyLimiterNames[static_cast<int>(s.server.concurrency.kind)] +
                     " runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no single attempts for the limiter to count and time");
  if (s.client.breaker.kind != BreakerKind::none)
    throw InputError(std::string("client.breaker: ") +
                     kBreakerKindNames[static_cast<int>(s.client.breaker.kind)] +
                     " runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no single attempts for a breaker to count");
  if (s.demand.clients > 0)
    throw InputError("demand.clients: " + std::to_string(s.demand.clients) +
                     " closed-loop clients run with engine=agent; engine=" + engine_name(s.engine) +
                     " has open-loop demand (demand.rate_per_s)");
  if (s.client.max_requests > 0)
    throw InputError("client.max_requests: " + std::to_string(s.client.max_requests) +
                     " runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no attempts in flight to count");
  if (s.client.max_connections > 0)
    throw InputError("client.max_connections: " + std::to_string(s.client.max_connections) +
                     " runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no attempts to hold in a connection pool");
  if (s.client.throttle.k > 0)
    throw InputError("client.throttle_k: " + number_text(s.client.throttle.k) +
                     " runs with engine=agent; engine=" + engine_name(s.engine) +
                     " has no single attempts to throttle");
  if (s.server.hosts > 1)
    throw InputError("server.hosts: " + std::to_string(s.server.hosts) +
                     " hosts run with engine=agent; engine=" + engine_name(s.engine) +
                     " has one queue and no attempts to send to one host or another");
  if (s.client.outlier.consecutive_5xx > 0)
    throw InputError("client.outlier_5xx: " + std::to_string(s.client.outlier.consecutive_5xx) +
                     " (outlier detection) runs with engine=agent; engine=" +
                     engine_name(s.engine) + " has no single answers to count");
}

void validate_fluid(const Scenario& s, const RunLimits& limits) {
  refuse_graph(s);
  refuse_error_injection(s);
  validate_step_keys(s, limits);
  // Cohorts have no instant at which one attempt finds the server busy.
  if (s.incident.failure != FailureClass::timeout)
    throw InputError(std::string("incident.failure: ") + failure_class_name(s.incident.failure) +
                     " (answered at once when the attempt cannot start) runs with engine=agent; "
                     "the fluid engine's incident is timeout: unserved attempts wait");
  // A cohort's retries are spread over the backoff's range; a pushback that
  // sends them all at one instant is the agent engine's.
  if (s.client.pushback != Pushback::ignore && s.server.retry_after_s > 0)
    throw InputError(
        "client.pushback: waiting a rejection's server.retry_after_s runs with "
        "engine=agent; the fluid engine retries after the backoff (client.pushback="
        "ignore, or server.retry_after_s=0)");
  // Without 429 answers the limiter never turns on, and the run is exact.
  if (s.client.rate_limiter != RateLimiter::none &&
      s.server.reject_status == FailureClass::http_429)
    throw InputError(
        "client.rate_limiter: aws_adaptive slows each client down after a 429 "
        "(server.reject_status=429), which runs with engine=agent; the fluid engine has no "
        "per-client send rate");
}

void validate_agent_scenario(const Scenario& s, const RunLimits& limits) {
  validate_step_keys(s, limits);
  validate_agent(s, limits);  // engines/agent/agent.hpp
}

void validate_sessions_scenario(const Scenario& s, const RunLimits& limits) {
  refuse_graph(s);
  refuse_error_injection(s);
  sessions::validate_sessions(s, limits);
}

RunResult run_agent_once(const Scenario& s) {
  return run_agent(s);
}

// In the order of enum Engine. The session model has no per-step run; its
// step cost of 1 only keeps estimates that divide by it finite.
constexpr EngineFacts kEngines[] = {
    {Engine::fluid, validate_fluid, run_fluid, 1, false, false, true},
    {Engine::agent, validate_agent_scenario, run_agent_once, 30, true, true, true},
    {Engine::sessions, validate_sessions_scenario, nullptr, 1, true, true, false},
};

static_assert(kEngines[static_cast<int>(Engine::fluid)].engine == Engine::fluid &&
              kEngines[static_cast<int>(Engine::agent)].engine == Engine::agent &&
              kEngines[static_cast<int>(Engine::sessions)].engine == Engine::sessions);

// The form of every text key an engine parses, whatever the engine: a value
// the scenario's engine ignores is still written into the scenario it
// reports (`run --format json`), which must run with the engine that reads
// it. Each text goes through that engine's own parser, alone in a default
// scenario, so that the rules tying it to other keys stay with its engine.
void validate_session_texts(const Scenario& s, const RunLimits& limits) {
  // The sessions engine checked them with the rest of its keys.
  if (s.engine == Engine::sessions) return;
  // A ladder, sweep or tipping point validates the same texts for each of
  // its runs, and the initial queue is expanded to be checked (up to 100,000
  // items): texts that passed last on this thread are not checked again.
  // Kept apart, not joined: a text may hold any separator.
  thread_local std::array<std::string, 4> passed;
  std::array<std::string, 4> texts{s.api.timeline, s.items.ping_rates_per_h,
                                   s.items.ping_day_factors, s.items.initial_queue};
  if (texts == passed) return;
  Scenario session_texts;
  session_texts.engine = Engine::sessions;
  session_texts.api.timeline = s.api.timeline;
  session_texts.items.ping_rates_per_h = s.items.ping_rates_per_h;
  session_texts.items.ping_day_factors = s.items.ping_day_factors;
  session_texts.items.initial_queue = s.items.initial_queue;
  // The latest start: the queue's times against sessions.start_s are its engine's rule.
  session_texts.sessions.start_s = std::numeric_limits<double>::max();
  session_texts.horizon_s = INFINITY;
  sessions::validate_sessions(session_texts, limits);
  passed = std::move(texts);
}

void validate_text_keys(const Scenario& s, const RunLimits& limits) {
  validate_session_texts(s, limits);

  // The number of timeouts per layer is checked against the layers by the agent engine.
  std::vector<double> timeouts;
  std::string bad;
  parse_number_list(s.client.layer_timeouts_s, timeouts, bad);
  ClientPolicy::parse_layer_timeouts(s.client.layer_timeouts_s, static_cast<int>(timeouts.size()),
                                     s.client.timeout_s);

  Scenario client_texts;
  client_texts.client.retry_on = s.client.retry_on;
  client_texts.client.stack_retries = s.client.stack_retries;
  client_texts.demand.profile = s.demand.profile;
  client_texts.server.capacity_profile = s.server.capacity_profile;
  client_texts.retried_answers();
  client_texts.layer_retries();
  client_texts.demand_profile();
  client_texts.capacity_profile_over_time();
  // Hedging per layer: as many layers as it names (the count is its engine's rule).
  Scenario hedging_text;
  hedging_text.client.hedging = s.client.hedging;
  hedging_text.client.layers =
      std::max(1, static_cast<int>(text::list_items(s.client.hedging).size()));
  hedging_text.hedged_layers();
}

}  // namespace

const EngineFacts& engine_facts(Engine e) {
  return kEngines[static_cast<int>(e)];
}

// Declared in model/keys.hpp: the model's rules, then the engine's.
void validate(const Scenario& s, const RunLimits& limits) {
  // The generator takes a whole seed: 1.5 ran as 1 while the report said 1.5.
  if (std::floor(s.seed) != s.seed)
    throw InputError("seed: " + number_text(s.seed) +
                     " is not a whole number; give one from 0 to " + number_text(kMaxSeed));
  validate_horizon(s, limits);
  validate_call_fault(s);
  engine_facts(s).validate(s, limits);
  validate_text_keys(s, limits);
}

void require_step_run(const Scenario& s) {
  // Ladders, tipping points, sweeps and traces are built on per-step runs.
  if (!engine_facts(s).run)
    throw InputError(std::string("engine: ") + engine_name(s.engine) +
                     " runs with `run` (and `run --runs N`); it has no per-step run for "
                     "ladders, tipping points, sweeps or traces");
}

RunResult run_engine(const Scenario& s) {
  require_step_run(s);
  return engine_facts(s).run(s);
}

}  // namespace retrystorm
