// Error injection whatever the load and the client-side defenses in the
// agent engine (issue 29, parts 1, 4 and 6; docs/policies.md, "Circuit
// breakers", "Client-side throttling", "Error injection"): Brooker's
// amplification against failure rate (mbrooker/simulator_example,
// retry_sim/retry_sim.py run_sims: 100 clients, no retries, 3 retries, a
// 10% token bucket, a breaker), a breaker that rescues a collapsing preset
// and one that hurts on a brief blip, throttling that rescues but recovers
// one window at a time, and the messages that refuse what is not modelled.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "policies/client_guards.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

// A dependency with room to spare failing a share of attempts: 100 clients,
// 1,000 requests a second, capacity 5,000/s, no incident.
Scenario flaky(double share, std::map<std::string, std::string> sets = {}) {
  Scenario s;
  s.engine = Engine::agent;
  s.horizon_s = 60;
  s.demand.rate_per_s = 1000;
  s.server.capacity_per_s = 5000;
  s.server.slots = 50;
  s.incident.start_s = 10;  // an incident that changes nothing
  s.incident.capacity_factor = 1;
  s.client.timeout_s = 1;
  s.client.retries = 3;
  s.client.backoff.base_s = 0.01;
  s.client.budget.clients = 100;
  s.server.error_share = share;
  for (const auto& [path, value] : sets) set_key_text(s, path, value);
  validate(s);
  return s;
}

// Attempts that left the clients per user request, over the whole run.
double sent_per_request(const RunResult& r) {
  double sent = 0, users = 0;
  for (size_t i = 0; i < r.series.size(); ++i) {
    sent += attempts_sent(r.series, i);
    users += r.series.first_attempts[i];
  }
  return sent / users;
}

TEST(ErrorInjection, AmplificationIsTheGeometricSumOfTheFailureRate) {
  for (double p : {0.01, 0.1, 0.2, 0.3, 0.5}) {
    RunResult three = run_engine(flaky(p));
    double expected = 1 + p + p * p + p * p * p;
    EXPECT_NEAR(sent_per_request(three), expected, 0.02 * expected) << "p = " << p;
    EXPECT_NEAR(three.failed / three.user_requests, std::pow(p, 4), 0.2 * std::pow(p, 4) + 0.001)
        << "p = " << p;
    RunResult none = run_engine(flaky(p, {{"client.retries", "0"}}));
    EXPECT_DOUBLE_EQ(sent_per_request(none), 1) << "p = " << p;
    EXPECT_NEAR(none.failed / none.user_requests, p, 0.05 * p) << "p = " << p;
  }
}

TEST(ErrorInjection, AnInjectedTimeoutIsNeverAnsweredAndItsRetryFollowsTheTimeout) {
  RunResult r = run_engine(flaky(0.2, {{"server.error_status", "timeout"}}));
  EXPECT_NEAR(sent_per_request(r), 1.248, 0.03);
  double rejected = 0, gave_up = 0, shed = 0, served = 0, sent = 0;
  for (size_t i = 0; i < r.series.size(); ++i) {
    rejected += r.series.rejected[i], gave_up += r.series.gave_up[i];
    shed += r.series.shed[i], served += r.series.goodput[i] + r.series.served_late[i];
    sent += r.series.first_attempts[i] + r.series.retries[i];
  }
  EXPECT_EQ(rejected, 0);  // nothing is answered at once
  EXPECT_GT(gave_up, 0.19 * r.user_requests);
  // Dropped unanswered, each is counted as shed: every attempt sent is accounted for.
  EXPECT_GT(shed, 0.19 * r.user_requests);
  EXPECT_EQ(sent, served + shed + r.series.backlog.back());
  EXPECT_GT(compute_metrics(r).latency_p99_s.value_or(0), 1) << "a retry waits the timeout";
}

// Brooker's figure: the 10% token bucket holds load near 1.1x at every
// failure rate; a breaker at 10% follows 3 retries while failures stay
// below its rate and, above it, sends less than one attempt per request:
// unlike retry_sim's breaker, which only stops retries (it stays at 1x),
// a library breaker refuses first attempts as well.
TEST(ErrorInjection, BrookersFigureBudgetsAndBreakersAgainstTheFailureRate) {
  auto bucket = [](double p) {
    return sent_per_request(run_engine(flaky(p, {{"client.budget.kind", "token_bucket"}})));
  };
  EXPECT_NEAR(bucket(0.01), 1.0101, 0.005);
  for (double p : {0.2, 0.5}) EXPECT_LT(bucket(p), 1.13) << "p = " << p;
  auto breaker = [](double p, const char* volume) {
    return sent_per_request(run_engine(flaky(p, {{"client.breaker", "opossum"},
                                                 {"client.breaker_failure_rate", "0.1"},
                                                 {"client.breaker_min_calls", volume}})));
  };
  EXPECT_NEAR(breaker(0.01, "20"), 1.0101, 0.005);
  for (double p : {0.3, 0.5}) EXPECT_LT(breaker(p, "20"), 1) << "p = " << p;
  // opossum's default volumeThreshold of 0: one failure among a client's
  // first few calls is above 10% of its fires, and opens it for 30 s.
  EXPECT_LT(breaker(0.01, "0"), 0.99);
}

double failed_share(const Scenario& s) {
  RunResult r = run_engine(s);
  return r.failed / r.user_requests;
}

TEST(CircuitBreaker, RescuesTheCollapsingOrderStatus) {
  using testing::preset;
  Metrics stuck = compute_metrics(run_engine(preset("order-status", {{"engine", "agent"}})));
  ASSERT_FALSE(stuck.recovered);
  for (const char* kind : {"opossum", "consecutive", "resilience4j"}) {
    Metrics with = compute_metrics(
        run_engine(preset("order-status", {{"engine", "agent"}, {"client.breaker", kind}})));
    EXPECT_TRUE(with.recovered) << kind;
    EXPECT_LT(with.failed_fraction, stuck.failed_fraction / 2) << kind;
  }
}

// A one-second blip of 503s that retries ride out: five failures in a row
// open each client's breaker for 30 s, which fails requests that would have
// succeeded. opossum (50% of fires over 10 s) does not open.
TEST(CircuitBreaker, HurtsOnABriefBlipThatRetriesRideOut) {
  using testing::preset;
  std::map<std::string, std::string> blip = {{"engine", "agent"}, {"incident.failure", "503"}};
  double without = failed_share(preset("brief-outage", blip));
  EXPECT_LT(without, 0.02);
  blip["client.breaker"] = "consecutive";
  EXPECT_GT(failed_share(preset("brief-outage", blip)), 0.3);
  blip["client.breaker"] = "opossum";
  EXPECT_DOUBLE_EQ(failed_share(preset("brief-outage", blip)), without);
}

// The throttle gets order-status out, but its own refusals fade one window
// at a time: it lets twice the accepts through, so the share it sends
// doubles per window once the server answers again.
TEST(AdaptiveThrottling, RescuesOrderStatusAndRecoversFasterWithAShorterWindow) {
  using testing::preset;
  std::map<std::string, std::string> set = {{"engine", "agent"}, {"horizon_s", "900"}};
  ASSERT_FALSE(compute_metrics(run_engine(preset("order-status", set))).recovered);
  set["client.throttle_k"] = "2";
  Metrics book = compute_metrics(run_engine(preset("order-status", set)));
  set["client.throttle_window_s"] = "30";
  Metrics grpc = compute_metrics(run_engine(preset("order-status", set)));
  ASSERT_TRUE(book.recovered);
  ASSERT_TRUE(grpc.recovered);
  EXPECT_LT(*grpc.goodput_recovery_s * 2, *book.goodput_recovery_s);
  // docs/policies.md: about 730 s and 160 s after the incident.
  EXPECT_NEAR(*book.goodput_recovery_s, 730, 40);
  EXPECT_NEAR(*grpc.goodput_recovery_s, 160, 20);
}

// examples/flaky-dependency.yaml's ladder, as docs/policies.md reads it.
TEST(ErrorInjection, TheFlakyDependencyExampleLadder) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/examples/flaky-dependency.yaml");
  std::stringstream text;
  text << in.rdbuf();
  Scenario s = scenario_from_text(text.str(), "flaky-dependency.yaml");
  validate(s);
  std::map<std::string, double> failed;
  for (const LadderResult& row : run_ladder(s)) failed[row.row.name] = row.metrics.failed_fraction;
  EXPECT_NEAR(failed["3 retries"], 0.0016, 0.001);  // 0.2^4
  EXPECT_NEAR(failed["No retries"], 0.2, 0.01);
  EXPECT_GT(failed["10% token bucket"], failed["3 retries"]);
  EXPECT_LT(failed["10% token bucket"], failed["No retries"]);
  EXPECT_GT(failed["Breaker (opossum)"], 0.85) << "a breaker at 10% fails nine in ten";
}

// Envoy's cluster circuit breaker max_requests as a bulkhead: each of the
// 100 clients holds at most 2 attempts in flight; the ones beyond are
// answered at once and never retried (Envoy: retry_state_impl.cc,
// wouldRetryFromReset; upstream_rq_pending_overflow). On order-status
// (agent) it keeps the queue short: it recovers, and no client ever holds
// more than its share.
TEST(Bulkhead, EnvoyMaxRequestsOverflowsAtOnceAndIsNotRetried) {
  using testing::preset;
  std::map<std::string, std::string> set = {{"engine", "agent"}, {"client.max_requests", "2"}};
  RunResult r = run_engine(preset("order-status", set));
  Metrics m = compute_metrics(r);
  double refused = 0, backlog = 0;
  for (size_t i = 0; i < r.series.size(); ++i)
    refused += r.series.refused_locally[i], backlog = std::max(backlog, r.series.backlog[i]);
  EXPECT_GT(refused, 0);
  EXPECT_LE(backlog, 2 * 100) << "100 clients x 2 attempts in flight";
  EXPECT_TRUE(m.recovered);
  // A limit no client reaches changes nothing.
  set["client.max_requests"] = "1000";
  Scenario roomy = preset("order-status", set);
  set.erase("client.max_requests");
  RunResult a = run_engine(roomy), b = run_engine(preset("order-status", set));
  for (const SeriesField& f : kSeriesFields) {
    auto x = a.series.*f.member, y = b.series.*f.member;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << f.name;
  }
}

// Envoy's HTTP/1 connection pool (source/common/conn_pool/conn_pool_base.cc):
// newStream attaches to a ready connection, else queues the stream while
// pendingRequests().canCreate(), else overflows (upstream_rq_pending_overflow);
// onUpstreamReady hands a freed connection to the oldest pending stream
// ("pushed onto the front, so pull from the back").
TEST(ConnectionPool, GoesWaitsInOrderAndOverflows) {
  Scenario s;
  s.client.budget.clients = 1;
  s.client.max_connections = 2;
  s.client.max_pending_requests = 2;
  ClientGuards pool(s);
  using Answer = ClientGuards::PoolAnswer;
  uint32_t t[6] = {};
  EXPECT_EQ(pool.ask_connection(0, 1, t[1]), Answer::go);
  EXPECT_EQ(pool.ask_connection(0, 2, t[2]), Answer::go);
  EXPECT_EQ(pool.ask_connection(0, 3, t[3]), Answer::wait);
  EXPECT_EQ(pool.ask_connection(0, 4, t[4]), Answer::wait);
  EXPECT_EQ(pool.ask_connection(0, 5, t[5]), Answer::overflow);
  auto all = [](uint64_t) { return true; };
  EXPECT_EQ(pool.release(0, t[1], all), std::optional<uint64_t>(3));  // the oldest first
  // Waiter 4 leaves (its request's route timeout): the next connection skips
  // it and is idle again, and the queue has room for two.
  pool.left_pending(0);
  auto not_four = [](uint64_t w) { return w != 4; };
  EXPECT_EQ(pool.release(0, t[2], not_four), std::nullopt);
  EXPECT_EQ(pool.ask_connection(0, 6, t[0]), Answer::go);
  EXPECT_TRUE(ClientGuards::holds_connection(t[0]));
}

// With no room to wait, the pool is max_requests: the same run, byte for byte.
TEST(ConnectionPool, WithoutPendingRoomItIsMaxRequests) {
  using testing::preset;
  RunResult a = run_engine(preset("order-status", {{"engine", "agent"},
                                                   {"client.max_connections", "2"},
                                                   {"client.max_pending_requests", "0"}}));
  RunResult b =
      run_engine(preset("order-status", {{"engine", "agent"}, {"client.max_requests", "2"}}));
  for (const SeriesField& f : kSeriesFields) {
    auto x = a.series.*f.member, y = b.series.*f.member;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << f.name;
  }
}

// Envoy arms the per-try timeout when the pool hands the attempt a
// connection (source/common/router/upstream_request.cc,
// UpstreamRequest::onPoolReady -> setupPerTryTimeout), so time spent pending
// is not timed by it. On order-status, two connections per client hold the
// server's queue to 200: no attempt waits there past its 5 s timeout, every
// request succeeds, and the wait moves to the clients (p99 above 5 s). The
// route timeout (client.deadline_s) bounds that wait: past 10 s a waiting
// request fails, none succeeds later.
TEST(ConnectionPool, WaitingIsNotTimedByThePerTryTimeoutButByTheRoute) {
  using testing::preset;
  std::map<std::string, std::string> set = {{"engine", "agent"},
                                            {"client.max_connections", "2"},
                                            {"client.max_pending_requests", "1024"}};
  RunResult pooled = run_engine(preset("order-status", set));
  Metrics m = compute_metrics(pooled);
  EXPECT_FALSE(
      compute_metrics(run_engine(preset("order-status", {{"engine", "agent"}}))).recovered);
  EXPECT_TRUE(m.recovered);
  EXPECT_EQ(m.failed, 0);
  EXPECT_GT(*pooled.success_latency.quantile(0.99), 5.0);
  double backlog = 0;
  for (size_t i = 0; i < pooled.series.size(); ++i)
    backlog = std::max(backlog, pooled.series.backlog[i]);
  EXPECT_LE(backlog, 2 * 100);
  set["client.deadline_s"] = "10";
  RunResult routed = run_engine(preset("order-status", set));
  Metrics r = compute_metrics(routed);
  EXPECT_GT(r.failed, 0);
  EXPECT_LE(*routed.success_latency.quantile(1.0), 10.0 + 1e-9);
  EXPECT_NEAR(r.succeeded + r.failed + r.in_flight, r.user_requests, 1e-9);
}

// Where retries ride a one-second outage out (brief-outage: nothing fails),
// one connection per client without room to wait fails 1.4% of requests: the
// overflow is never retried.
TEST(ConnectionPool, HurtsOnABlipWithoutRoomToWait) {
  using testing::preset;
  Metrics base = compute_metrics(run_engine(preset("brief-outage", {{"engine", "agent"}})));
  RunResult tight = run_engine(preset("brief-outage", {{"engine", "agent"},
                                                       {"client.max_connections", "1"},
                                                       {"client.max_pending_requests", "0"}}));
  EXPECT_EQ(base.failed, 0);
  EXPECT_GT(compute_metrics(tight).failed_fraction, 0.01);
}

TEST(ClientDefenses, OffTheirKeysChangeNothing) {
  Scenario plain = flaky(0.1);
  Scenario tuned = flaky(0.1, {{"client.breaker_failures", "2"},
                               {"client.breaker_open_s", "3"},
                               {"client.throttle_window_s", "5"}});
  RunResult a = run_engine(plain), b = run_engine(tuned);
  for (const SeriesField& f : kSeriesFields) {
    auto x = a.series.*f.member, y = b.series.*f.member;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << f.name;
  }
}

// The breaker, throttle and bulkhead are one per client: the number of
// clients matters to them without a budget, and is not called ignored.
TEST(ClientDefenses, TheirClientCountIsNotWarnedAsIgnored) {
  Scenario s = flaky(0.1, {{"client.breaker", "consecutive"}, {"client.budget.clients", "4"}});
  EXPECT_TRUE(ignored_keys(s, {"client.budget.clients"}).empty());
  EXPECT_NE(run_engine(s).series.refused_locally.size(), 0u);
}

TEST(ClientDefenses, WhatIsNotModelledIsRefusedWithTheKeyNamed) {
  auto refused = [](std::map<std::string, std::string> sets, const std::string& words) {
    Scenario s;
    try {
      for (const auto& [path, value] : sets) set_key_text(s, path, value);
      validate(s);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << words;
  };
  refused({{"client.breaker", "opossum"}}, "client.breaker: opossum runs with engine=agent");
  refused({{"client.throttle_k", "2"}}, "client.throttle_k: 2 runs with engine=agent");
  refused({{"server.error_share", "0.1"}}, "server.error_share: 0.1 (error injection)");
  refused({{"client.max_requests", "5"}}, "client.max_requests: 5 runs with engine=agent");
  refused({{"client.max_connections", "5"}}, "client.max_connections: 5 runs with engine=agent");
  refused({{"engine", "agent"}, {"client.max_connections", "2"}, {"client.hedging", "envoy"}},
          "client.hedging makes it hedge");
  refused({{"engine", "agent"}, {"client.breaker", "opossum"}, {"client.breaker_trials", "3"}},
          "client.breaker_trials: 3");
  refused({{"engine", "agent"}, {"client.breaker", "consecutive"}, {"client.hedging", "grpc"}},
          "client.hedging makes it hedge");
  // Polly's own option ranges (CircuitBreakerStrategyOptions' attributes).
  refused({{"engine", "agent"}, {"client.breaker", "polly"}, {"client.breaker_min_calls", "1"}},
          "MinimumThroughput is at least 2");
  refused({{"engine", "agent"}, {"client.breaker", "polly"}, {"client.breaker_window_s", "0.2"}},
          "client.breaker_window_s: 0.2 s with client.breaker polly");
  refused({{"engine", "agent"}, {"client.breaker", "polly"}, {"client.breaker_open_s", "0.1"}},
          "BreakDuration is 0.5 s to a day");
}

// Polly's defaults count 100 calls in 30 s per client before judging: on
// order-status each of 100 clients sends under one a second, and retries
// do not bring it there, so the breaker never opens. Judged over 20 calls
// it gets the queue out; on a one-second blip of 503s its 5 s break fails
// requests that retries would have carried.
TEST(CircuitBreaker, PollyNeedsAThroughputItsClientsReach) {
  using testing::preset;
  std::map<std::string, std::string> polly = {{"engine", "agent"},
                                              {"client.breaker", "polly"},
                                              {"client.breaker_failure_rate", "0.1"},
                                              {"client.breaker_window_s", "30"}};
  Metrics stuck = compute_metrics(run_engine(preset("order-status", {{"engine", "agent"}})));
  Metrics as_is = compute_metrics(run_engine(preset("order-status", polly)));
  EXPECT_FALSE(as_is.recovered);
  EXPECT_EQ(as_is.failed_fraction, stuck.failed_fraction);
  polly["client.breaker_min_calls"] = "20";
  Metrics judged = compute_metrics(run_engine(preset("order-status", polly)));
  EXPECT_TRUE(judged.recovered);
  EXPECT_LT(judged.failed_fraction, 0.1);
  std::map<std::string, std::string> blip = polly;
  blip["incident.failure"] = "503";
  std::map<std::string, std::string> bare = {{"engine", "agent"}, {"incident.failure", "503"}};
  EXPECT_LT(failed_share(preset("brief-outage", bare)), 0.02);
  EXPECT_GT(failed_share(preset("brief-outage", blip)), 0.06);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// The generic ladder sets a stack of its own (client.stack_retries) layer by
// layer: its "No retries" row set client.retries, which the stack overrides,
// and kept retrying at 6x; "Immediate retries" said 9 attempts and sent 6.
TEST(GenericLadder, AStackOfItsOwnIsSetLayerByLayer) {
  Scenario s = preset_or_throw("two-layer-stack").scenario;
  set_key(s, "client.stack_retries", KeyValue{std::string("2,1")});
  s.ladder.rows.clear();
  validate(s);
  const std::vector<LadderResult> rows = run_ladder(s);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].row.name, "No retries");
  EXPECT_EQ(rows[0].metrics.peak_amplification, 1);
  EXPECT_EQ(rows[1].row.change.rfind("9 attempts per request", 0), 0u) << rows[1].row.change;
  EXPECT_EQ(rows[1].metrics.peak_amplification, 9);
}

// A user's deadline that abandons the attempt a half-open breaker let
// through is heard by the breaker as that attempt's timeout (docs/
// agent-engine.md, "Deadlines": abandoned like a timeout). Unheard, the
// trial never ended and the breaker refused every request to the end.
TEST(ClientDefenses, ADeadlineEndsTheBreakersTrial) {
  Scenario s = scenario_from_text(R"(
engine: agent
horizon_s: 200
step_s: 1
demand: {rate_per_s: 80}
server: {capacity_per_s: 100, queue_limit: 100}
incident: {start_s: 60, duration_s: 20, capacity_factor: 0.4}
client:
  timeout_s: 5
  deadline_s: 1
  retries: 0
  breaker: consecutive
  breaker_open_s: 0.5
  budget: {kind: none, clients: 1}
)",
                                  "breaker.yaml");
  RunResult r = run_engine(s);
  double refused_late = 0, goodput_late = 0;
  for (size_t i = 100; i < r.series.size(); ++i) {
    refused_late += r.series.refused_locally[i];
    goodput_late += r.series.goodput[i];
  }
  EXPECT_EQ(refused_late, 0) << "the breaker closed again after the incident";
  EXPECT_NEAR(goodput_late, 80 * 100, 80);
}

// Every attempt is accounted for when a deadline fires while the attempt
// waits for its rate limiter's token: never sent, refused at the client.
TEST(ClientDefenses, AnAttemptHeldForATokenAtItsDeadlineIsRefusedLocally) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"},
                                                {"client.rate_limiter", "aws_adaptive"},
                                                {"server.reject_status", "429"},
                                                {"server.queue_limit", "50"},
                                                {"client.deadline_s", "8"},
                                                {"client.retries", "0"}});
  RunResult r = run_engine(s);
  double sent = 0, ended = 0, refused = 0;
  for (size_t i = 0; i < r.series.size(); ++i) {
    sent += r.series.first_attempts[i] + r.series.retries[i];
    ended +=
        r.series.goodput[i] + r.series.served_late[i] + r.series.shed[i] + r.series.rejected[i];
    refused += r.series.refused_locally[i];
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(sent - refused, ended + r.series.backlog.back());
  EXPECT_EQ(r.user_requests, r.succeeded + r.failed + r.in_flight);
}

// A layer whose budget refuses its retry answers the layer above with what
// it heard last (docs/policies.md), not a 503: an outer layer that retries
// 429s only retries it, on tokens of its own.
TEST(ClientDefenses, ARetryTheBudgetRefusesPassesTheLastAnswerUp) {
  Scenario s = scenario_from_text(R"(
engine: agent
horizon_s: 40
step_s: 1
demand: {rate_per_s: 2}
server: {capacity_per_s: 100, reject_status: "429"}
incident: {start_s: 10, duration_s: 20, capacity_factor: 0, failure: "429"}
client:
  timeout_s: 5
  layers: 2
  stack_retries: "3,3"
  retry_on: "429"
  backoff: {base_s: 0.1, multiplier: 1, cap_s: 0, jitter: none}
  budget: {kind: grpc_throttling, max_tokens: 10, token_ratio: 0.1, clients: 1}
)",
                                  "denied.yaml");
  // Every answer is a 429: retrying 429s only must do what retrying every
  // failure does. Told a 503 after a refusal, the outer layer stopped.
  Scenario every_failure = s;
  set_key_text(every_failure, "client.retry_on", "all");
  validate(every_failure);
  RunResult r = run_engine(s), all = run_engine(every_failure);
  double denied = 0;
  for (size_t i = 0; i < r.series.size(); ++i) denied += r.series.budget_denied[i];
  ASSERT_GT(denied, 0);
  auto retries = [](const RunResult& run) {
    return std::vector<double>(run.series.retries.begin(), run.series.retries.end());
  };
  EXPECT_EQ(retries(r), retries(all));
  EXPECT_EQ(r.failed, all.failed);
}

// gRPC's throttling keeps each channel's tokens: a client count that would
// make millions of them is refused before the run.
TEST(ClientDefenses, TooManyChannelsAreRefusedBeforeTheRun) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"}});
  s.client.budget.kind = BudgetKind::grpc_throttling;
  s.client.budget.clients = 60000;
  s.client.layers = 2;
  try {
    validate(s);
    ADD_FAILURE() << "120,000 channels accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("grpc_throttling (a channel's tokens at each of 2 "
                                         "layers): one per client and layer, at most 100000 in "
                                         "all"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace retrystorm
