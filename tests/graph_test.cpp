// A graph of services (docs/graph.md): a chain of a proxy and one server is
// the stacked engine's two layers, byte for byte; the invariants on
// generated graphs; the reader's and the shape's messages.
#include "model/graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

#include "analysis/graph_report.hpp"
#include "analysis/ladder.hpp"
#include "analysis/report.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "formats/text_report.hpp"
#include "model/keys.hpp"
#include "random/rng.hpp"
#include "systems/lint.hpp"
#include "text/number.hpp"

namespace retrystorm {
namespace {

// The run's own bytes: the series and the end state, without the scenario
// (which differs by construction) or the graph's tables.
std::string run_bytes(const RunResult& r) {
  nlohmann::json j = series_json(r.series);
  j["user_requests"] = r.user_requests;
  j["succeeded"] = r.succeeded;
  j["failed"] = r.failed;
  j["in_flight"] = r.in_flight;
  j["latency_count"] = r.success_latency.count();
  j["latency_p50"] = r.success_latency.quantile(0.5).value_or(-1);
  j["latency_p99"] = r.success_latency.quantile(0.99).value_or(-1);
  return j.dump();
}

Scenario read(const std::string& text) {
  Scenario s = scenario_from_text(text, "test.yaml");
  validate(s);
  return s;
}

// The stacked scenario and its chain: user -> gateway (a proxy) -> db.
struct Pair {
  std::string common;  // keys both share
  std::string outer;   // the outer layer's client keys, "retries: 2, timeout_s: 2"
  std::string inner;
};

std::string stacked_text(const Pair& p, int outer_retries, int inner_retries, double outer_t,
                         double inner_t) {
  return p.common + "engine: agent\nclient: {layers: 2, stack_retries: '" +
         std::to_string(outer_retries) + "," + std::to_string(inner_retries) +
         "', layer_timeouts_s: '" + number_text(outer_t) + "," + number_text(inner_t) + "'" +
         p.outer + "}\n";
}

std::string chain_text(const Pair& p, int outer_retries, int inner_retries, double outer_t,
                       double inner_t, double capacity) {
  return p.common + "engine: agent\nclient: {layers: 1" + p.outer +
         "}\nservices:\n  gateway: {}\n  db: {capacity_per_s: " + number_text(capacity) +
         "}\ncalls:\n  - {from: user, to: gateway, retries: " + std::to_string(outer_retries) +
         ", timeout_s: " + number_text(outer_t) +
         "}\n  - {from: gateway, to: db, retries: " + std::to_string(inner_retries) +
         ", timeout_s: " + number_text(inner_t) + p.inner + "}\n";
}

const char* kBase =
    "horizon_s: 120\nstep_s: 0.1\nservice_completes: end\n"
    "demand: {rate_per_s: 300, process: poisson}\n"
    "server: {capacity_per_s: 1000, service: exponential, slots: 4}\n"
    "incident: {start_s: 30, duration_s: 20, capacity_factor: 0.25}\n";

// requests.csv's rows, kept (without the graph's call column, which the stack has not).
struct RowLog : AttemptSink {
  std::vector<AttemptRow> rows;
  void row(const AttemptRow& r) override { rows.push_back(r); }
  std::string text(size_t i) const {
    const AttemptRow& r = rows[i];
    return std::to_string(r.request_id) + "," + std::to_string(r.attempt) + "," +
           number_text(r.sent_s) + "," + (std::isnan(r.done_s) ? "" : number_text(r.done_s)) + "," +
           request_log::outcome_name(r.outcome) + "," + std::to_string(r.layer);
  }
};

TEST(Graph, ATwoServiceChainIsTheStackedEngineByteForByte) {
  struct Case {
    const char* name;
    std::string extra;         // more common keys
    std::string outer;         // more client keys (the scenario's block: both layers)
    std::string inner;         // the same keys on the inner call of the chain
    std::string stacked = "";  // client keys of the stacked scenario only
  };
  const Case cases[] = {
      {"plain", "", ", backoff: {base_s: 0.1, multiplier: 2, cap_s: 1, jitter: full}",
       ", backoff: {base_s: 0.1, multiplier: 2, cap_s: 1, jitter: full}"},
      {"queue limit, 429 with pushback",
       "server: {queue_limit: 50, reject_status: '429', "
       "retry_after_s: 0.3}\n",
       ", pushback: exact", ", pushback: exact"},
      // Envoy's rate-limited retry leaves the ladder where it was; gRPC's starts it again.
      {"queue limit, 429 with Envoy's pushback",
       "server: {queue_limit: 50, reject_status: '429', retry_after_s: 0.3}\n", ", pushback: envoy",
       ", pushback: envoy"},
      {"shed abandoned", "server: {shed_abandoned: true}\n", "", ""},
      // The delays between caller and server (docs/agent-engine.md): the server sheds
      // late, and an answer reaches its caller a little later (or after it gave up).
      {"shed lag and answer delay",
       "server: {shed_abandoned: true, shed_lag_s: 0.02, answer_delay_s: 0.01}\n", "", ""},
      {"deadline on the user", "", ", deadline_s: 3", ""},
      {"token bucket budget", "", ", budget: {kind: token_bucket, ratio: 0.2}",
       ", budget: {kind: token_bucket, ratio: 0.2}"},
      {"envoy budget", "", ", budget: {kind: envoy_concurrency, ratio: 0.2}",
       ", budget: {kind: envoy_concurrency, ratio: 0.2}"},
      {"503 outage", "incident: {failure: '503', capacity_factor: 0}\n", ", retry_on: '503'",
       ", retry_on: '503'"},
      // The stacked engine's limiter paces its innermost layer: the chain's inner call.
      // Hedging on the inner layer: a new attempt each timeout while none answered,
      // the others cancelled by the first answer (docs/policies.md, "Hedging").
      {"gRPC hedging on the inner call", "", ", backoff: {base_s: 0}", ", hedging: grpc",
       ", hedging: 'retry,grpc'"},
      {"Envoy hedging on the inner call, 503s",
       "server: {queue_limit: 30}\nincident: {failure: '503'}\n",
       ", retry_on: '503', backoff: {base_s: 0.05, jitter: full}", ", hedging: envoy",
       ", hedging: 'retry,envoy'"},
      {"AWS adaptive rate limiter, 429s",
       "server: {queue_limit: 40, reject_status: '429'}\nclient: {budget: {clients: 3}}\n", "",
       ", rate_limiter: aws_adaptive", ", rate_limiter: aws_adaptive"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pair p{kBase, c.outer, c.inner};
    Scenario stacked = read(stacked_text(Pair{kBase, c.outer + c.stacked, c.inner}, 2, 1, 2, 0.5));
    Scenario chain = read(chain_text(p, 2, 1, 2, 0.5, 1000));
    if (!c.extra.empty()) {  // the extra keys over both
      std::vector<std::string> paths;
      Scenario over = scenario_from_text(c.extra, "extra.yaml", &paths);
      for (const std::string& path : paths) {
        set_key(stacked, path, key_or_throw(path).get(over));
        set_key(chain, path, key_or_throw(path).get(over));
      }
      validate(stacked);
      validate(chain);
    }
    RunResult a = run_engine(stacked);
    RunResult b = run_engine(chain);
    EXPECT_GT(a.user_requests, 30000);
    EXPECT_EQ(run_bytes(a), run_bytes(b));
    // The per-request log too, row for row: the chain's hops are the stack's layers.
    RowLog stack_log, chain_log;
    run_agent(stacked, {&stack_log, nullptr});
    run_agent(chain, {&chain_log, nullptr});
    EXPECT_GT(stack_log.rows.size(), 50000u);
    ASSERT_EQ(stack_log.rows.size(), chain_log.rows.size());
    for (size_t i = 0; i < stack_log.rows.size(); ++i) {
      EXPECT_EQ(stack_log.text(i), chain_log.text(i)) << "row " << i;
      if (stack_log.text(i) != chain_log.text(i)) break;
    }
  }
}

// The server's tipping cache tells graphs apart by their services and
// calls, which are not keys of the table: a graph that differs there only
// gets its own answer, not the one cached for the other.
TEST(Graph, TheTippingCacheKeepsGraphsThatDifferOnlyInTheirServicesApart) {
  Scenario base = preset_or_throw("shared-database").scenario;
  Scenario bigger = base, calmer = base;
  set_graph_key(bigger, "services.db.capacity_per_s", 900.0);
  set_graph_key(calmer, "calls[4].retries", 0.0);
  TippingCache cache;
  TippingResult a = cache.get(base), b = cache.get(bigger), c = cache.get(calmer);
  EXPECT_EQ(a.exact_s, tipping_point(base).exact_s);
  EXPECT_EQ(b.exact_s, tipping_point(bigger).exact_s);
  EXPECT_EQ(c.exact_s, tipping_point(calmer).exact_s);
  EXPECT_NE(a.exact_s, b.exact_s);
  EXPECT_NE(a.exact_s, c.exact_s);
}

// The cache is bounded by its keys' bytes too: requests with long profiles
// (a megabyte of key text each) no longer stay held by the hundred.
TEST(Graph, TheTippingCacheIsBoundedByItsKeysBytes) {
  Scenario a = preset_or_throw("order-status").scenario;
  Scenario b = a;
  b.client.retries = 1;
  TippingCache cache(256, 1);  // room for the latest entry only
  cache.get(a);
  const size_t one = cache.key_bytes();
  ASSERT_GT(one, 0u);
  cache.get(b);
  EXPECT_LT(cache.key_bytes(), 2 * one);  // a's key went
  EXPECT_EQ(cache.get(b).exact_s, tipping_point(b).exact_s);
}

TEST(Graph, WithoutServicesAScenarioIsTodaysModel) {
  Scenario s = preset_or_throw("two-layer-stack").scenario;
  EXPECT_TRUE(s.graph.empty());
  nlohmann::json j = scenario_to_json(s);
  EXPECT_FALSE(j.contains("services"));
  EXPECT_FALSE(j.contains("calls"));
  s.engine = Engine::agent;
  validate(s);
  EXPECT_TRUE(run_engine(s).graph.empty());
}

// A generated graph: layers of services, each calling one to three of the
// next layer's, in sequence or in parallel, some optional, with random
// policies; a server at some services.
std::string generated_graph(uint64_t seed) {
  Rng rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng.uniform() * n); };
  int tiers = 2 + pick(3);
  std::vector<std::vector<std::string>> names(static_cast<size_t>(tiers));
  std::string services = "services:\n", calls = "calls:\n";
  for (int t = 0; t < tiers; ++t) {
    int width = t == 0 ? 1 : 1 + pick(3);
    for (int i = 0; i < width; ++i) {
      std::string name = "s" + std::to_string(t) + "_" + std::to_string(i);
      names[static_cast<size_t>(t)].push_back(name);
      bool leaf = t + 1 == tiers;
      std::string body = leaf || pick(2) ? "capacity_per_s: " + std::to_string(400 + pick(800)) +
                                               ", slots: " + std::to_string(1 + pick(4)) +
                                               ", queue_limit: " + std::to_string(pick(3) * 100)
                                         : "";
      if (pick(2)) body += std::string(body.empty() ? "" : ", ") + "pattern: parallel";
      if (pick(3) == 0) body += std::string(body.empty() ? "" : ", ") + "shed_abandoned: true";
      services += "  " + name + ": {" + body + "}\n";
    }
  }
  auto policy = [&] {
    return "retries: " + std::to_string(pick(3)) +
           ", timeout_s: " + number_text(0.2 + 0.1 * pick(10)) +
           ", backoff: {base_s: 0.05, jitter: full}" +
           (pick(3) == 0 ? ", budget: {kind: token_bucket, ratio: 0.1}" : "") +
           (pick(3) == 0 ? ", propagate_deadline: true" : "");
  };
  calls += "  - {from: user, to: s0_0, deadline_s: " + std::to_string(2 + pick(3)) + ", " +
           policy() + "}\n";
  for (int t = 0; t + 1 < tiers; ++t)
    for (const std::string& from : names[static_cast<size_t>(t)]) {
      const auto& next = names[static_cast<size_t>(t + 1)];
      // Every service of the next tier is called by the first of this one.
      for (size_t j = 0; j < next.size(); ++j)
        if (from == names[static_cast<size_t>(t)][0] || pick(2))
          calls += "  - {from: " + from + ", to: " + next[j] + ", " + policy() +
                   (pick(4) == 0 ? ", optional: true" : "") + (pick(4) == 0 ? ", count: 2" : "") +
                   "}\n";
    }
  std::string head =
      "horizon_s: 60\nstep_s: 0.1\nservice_completes: end\nengine: agent\nseed: " +
      std::to_string(seed) + "\ndemand: {rate_per_s: " + std::to_string(100 + pick(300)) +
      ", process: poisson}\nserver: {service: exponential}\n"
      "incident: {start_s: 10, duration_s: " +
      std::to_string(5 + pick(20)) + ", capacity_factor: " + number_text(0.1 * pick(8));
  // One graph in three: a fault on one call as well (drawn last, so that the
  // others keep the graphs they had).
  if (pick(3) == 0) {
    size_t n = 0;
    for (size_t at = calls.find("  - {"); at != std::string::npos; at = calls.find("  - {", at + 1))
      ++n;
    head += ", call: " + std::to_string(pick(static_cast<int>(n))) +
            ", service: " + names.back()[0] + ", delay_s: " + number_text(0.1 * pick(6)) +
            ", delay_share: " + number_text(0.25 * (1 + pick(4))) +
            ", abort_share: " + number_text(0.2 * (1 + pick(3))) +
            ", abort_status: " + (pick(2) ? "'503'" : "reset") +
            ", fault_on: " + (pick(2) ? "attempts" : "calls");
  }
  // One in four: AWS adaptive mode on every call, the incident answering 429;
  // one in four without a fault: every call hedges (drawn last too).
  std::string client;
  int extra = pick(4);
  if (extra == 0) {
    head += ", failure: '429'";
    client = "client: {rate_limiter: aws_adaptive, budget: {clients: 4}}\n";
  } else if (extra == 1 && head.find(", call: ") == std::string::npos) {
    client = std::string("client: {hedging: ") + (pick(2) ? "grpc" : "envoy") + "}\n";
  }
  return head + "}\n" + client + services + calls;
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

// AWS adaptive mode on one call: once its callee answers 429, that call's
// clients send at the rate the limiter allows (docs/policies.md), so fewer
// attempts reach the callee than without it; the other call is untouched.
TEST(Graph, AnAdaptiveRateLimiterOnACallPacesOnlyThatCall) {
  std::string base = std::string(kBase) +
                     "engine: agent\nclient: {budget: {clients: 2}}\n"
                     "services:\n  gateway: {}\n  db: {capacity_per_s: 1000, queue_limit: 40, "
                     "reject_status: '429'}\ncalls:\n  - {from: user, to: gateway, retries: 1, "
                     "timeout_s: 3}\n  - {from: gateway, to: db, retries: 3, timeout_s: 0.5";
  RunResult plain = run_engine(read(base + "}\n"));
  RunResult paced = run_engine(read(base + ", rate_limiter: aws_adaptive}\n"));
  // What reaches the db: the attempts sent, not the calls made (a call waits for its token).
  auto at_db = [](const RunResult& r) {
    return sum(r.graph.services[0].first_attempts) + sum(r.graph.services[0].retries);
  };
  auto rejected = [](const RunResult& r) { return sum(r.graph.services[0].rejected); };
  ASSERT_EQ(paced.graph.services[0].name, "db");
  EXPECT_GT(rejected(plain), 1000);  // the 429s that turn the limiter on
  EXPECT_GT(sum(paced.graph.edges[1].paced), 1000);
  EXPECT_EQ(sum(paced.graph.edges[0].paced), 0);  // the user's call has no limiter
  EXPECT_EQ(sum(plain.graph.edges[1].paced), 0);
  EXPECT_LT(at_db(paced), 0.9 * at_db(plain));
  EXPECT_LT(rejected(paced), rejected(plain));
  // Before the incident nothing is throttled: the limiter is off, the runs agree.
  EXPECT_EQ(paced.graph.edges[1].calls[100], plain.graph.edges[1].calls[100]);
  // The limiter's count is the call's caller instances, bounded as the stacked engine's.
  try {
    read(base + ", rate_limiter: aws_adaptive, budget: {clients: 200000}}\n");
    ADD_FAILURE() << "200,000 limiters accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("aws_adaptive: one per client, at most 100000"),
              std::string::npos)
        << e.what();
  }
}

// Hedging on one call of a graph: a slow db answers a hedged call sooner
// than a call that waits out its timeout, and every hedge is an attempt
// that arrives; a fault on a hedging call's attempts is refused by name.
TEST(Graph, AHedgingCallSendsItsHedgesAndTheFirstAnswerEndsIt) {
  auto text = [](const std::string& incident, const std::string& hedging) {
    return "horizon_s: 60\nstep_s: 0.05\nengine: agent\ndemand: {rate_per_s: 50}\n"
           "server: {service: exponential}\nincident: {start_s: 10, duration_s: 5" +
           incident +
           "}\nservices:\n  api: {capacity_per_s: 1000, slots: 100}\n"
           "  db: {capacity_per_s: 200, slots: 20}\n"
           "calls:\n  - {from: user, to: api, timeout_s: 5}\n"
           "  - {from: api, to: db, retries: 2, timeout_s: 0.05, backoff: {base_s: 0}" +
           hedging + "}\n";
  };
  RunResult plain = run_engine(read(text(", capacity_factor: 1", "")));
  RunResult hedged = run_engine(read(text(", capacity_factor: 1", ", hedging: grpc")));
  const EdgeSeries& e = hedged.graph.edges[1];
  const ServiceSeries& db = hedged.graph.services[1];
  ASSERT_EQ(db.name, "db");
  EXPECT_GT(sum(e.retries), 0.2 * sum(e.calls));  // service times above 50 ms bring hedges
  EXPECT_EQ(sum(db.first_attempts) + sum(db.retries), sum(e.calls) + sum(e.retries));
  EXPECT_EQ(sum(e.failed), 0);  // no hedge fails: the first answer wins
  EXPECT_EQ(hedged.failed, 0);
  EXPECT_LT(*hedged.success_latency.quantile(0.99), *plain.success_latency.quantile(0.99));
  try {
    read(text(", call: 1, delay_s: 0.1", ", hedging: envoy"));
    ADD_FAILURE() << "a fault on a hedging call's attempts was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("incident.call: 1 hedges"), std::string::npos) << e.what();
  }
}

// A propagated deadline that has passed stops every later attempt: a
// hedge due at once (gRPC's hedgingPolicy has no backoff) and a call the
// sequence would make next (they went on as if nothing propagated).
TEST(Graph, APassedDeadlineStopsHedgesAndLaterCalls) {
  auto hedging = [](bool propagate) {
    return read(
        "engine: agent\nhorizon_s: 10\nstep_s: 0.1\ndemand: {rate_per_s: 20}\n"
        "server: {service: deterministic}\n"
        "client: {retries: 0, timeout_s: 1, backoff: {base_s: 0, jitter: none}}\n"
        "services:\n  gw: {}\n  db: {capacity_per_s: 1, slots: 1}\n"
        "calls:\n  - {from: user, to: gw, retries: 0, timeout_s: 0.1}\n"
        "  - {from: gw, to: db, hedging: grpc, retries: 4, timeout_s: 0.3, propagate_deadline: " +
        std::string(propagate ? "true" : "false") +
        "}\nincident: {start_s: 5, duration_s: 1, capacity_factor: 0.5}\n");
  };
  const RunResult kept = run_engine(hedging(true)), not_kept = run_engine(hedging(false));
  EXPECT_EQ(sum(kept.graph.edges[1].retries), 0);
  EXPECT_GT(sum(not_kept.graph.edges[1].retries), 100);
  auto sequence = [](bool propagate) {
    const std::string p = propagate ? "true" : "false";
    return read(
        "engine: agent\nhorizon_s: 20\nstep_s: 0.1\ndemand: {rate_per_s: 0.5}\n"
        "server: {service: deterministic}\nclient: {retries: 0, timeout_s: 5}\n"
        "services:\n  api: {capacity_per_s: 1000, slots: 100}\n"
        "  db1: {capacity_per_s: 1, slots: 1}\n  db2: {capacity_per_s: 1000, slots: 100}\n"
        "calls:\n  - {from: user, to: api, retries: 0, timeout_s: 0.5}\n"
        "  - {from: api, to: db1, propagate_deadline: " +
        p + "}\n  - {from: api, to: db2, propagate_deadline: " + p +
        "}\nincident: {service: db1, start_s: 18, duration_s: 1, capacity_factor: 0.5}\n");
  };
  const RunResult stopped = run_engine(sequence(true)), sent = run_engine(sequence(false));
  EXPECT_EQ(sum(stopped.graph.edges[2].calls), 0) << "db2 after the user gave up";
  EXPECT_EQ(sum(stopped.graph.services[2].first_attempts), 0);
  EXPECT_GT(sum(sent.graph.edges[2].calls), 0);
  EXPECT_EQ(stopped.user_requests, stopped.succeeded + stopped.failed + stopped.in_flight);
}

// A call dropped because its propagated deadline passed fails, and its visit
// goes on without it (or fails): freed alone, it left its visit waiting for
// good, and memory grew with the run (233,400 calls "ended nowhere").
TEST(Graph, ADroppedCallEndsItsVisit) {
  auto leak = [](double horizon) {
    return read(
        "engine: agent\nhorizon_s: " + number_text(horizon) +
        "\nstep_s: 1\ndemand: {rate_per_s: 200}\n"
        "client: {backoff: {base_s: 3, multiplier: 1, cap_s: 3, jitter: none}}\n"
        "services: {a: {}, b: {capacity_per_s: 100000, slots: 100}, c: {capacity_per_s: 100000, "
        "slots: 100}}\n"
        "calls:\n  - {from: user, to: a, retries: 0, timeout_s: 50}\n"
        "  - {from: a, to: b, retries: 3, timeout_s: 2}\n"
        "  - {from: b, to: c, retries: 3, timeout_s: 1, propagate_deadline: true}\n"
        "incident: {service: c, start_s: 1, duration_s: " +
        number_text(horizon - 2) + ", capacity_factor: 0, failure: \"503\"}\n");
  };
  AgentStats short_run, long_run;
  const RunResult r = run_agent(leak(100), {.stats = &short_run});
  run_agent(leak(300), {.stats = &long_run});
  EXPECT_GT(sum(r.graph.edges[2].failed), 0) << "the dropped calls fail";
  EXPECT_EQ(r.user_requests, r.succeeded + r.failed + r.in_flight);
  EXPECT_LT(long_run.peak_calls, short_run.peak_calls * 1.5) << "bounded by what is in flight";
}

// A parallel service makes all its calls whatever happens to the first: a
// required call that fails at once (a fault aborting every call) left the
// calls listed after it unmade, and the answer depended on the listing order.
TEST(Graph, AFanOutMakesEveryCallWhateverFailsFirst) {
  Scenario s = preset_or_throw("fan-out-page").scenario;
  set_key(s, "incident.abort_share", KeyValue{1.0});
  set_key(s, "incident.fault_on", KeyValue{std::string("calls")});
  set_key(s, "incident.capacity_factor", KeyValue{1.0});
  std::vector<double> siblings;
  for (int faulted : {1, 5}) {
    set_key(s, "incident.call", KeyValue{double(faulted)});
    const RunResult r = run_engine(s);
    const int other = faulted == 1 ? 5 : 1;
    siblings.push_back(sum(r.graph.edges[size_t(other)].calls));
  }
  EXPECT_EQ(siblings[0], siblings[1]) << "the first sibling's calls and the last's";
}

// Every attempt has one row: a CoDel drop at a service with calls, after the
// caller gave up (its row "timeout" written), wrote a second ("rejected");
// an attempt a fault still holds at the end has none (it had "in_flight").
TEST(Graph, EveryAttemptHasOneRow) {
  const Scenario codel = read(
      "engine: agent\nhorizon_s: 20\nstep_s: 0.1\nseed: 1\ndemand: {rate_per_s: 400}\n"
      "server: {service: exponential}\nservices:\n"
      "  api: {capacity_per_s: 200, slots: 2, discipline: codel}\n"
      "  db: {capacity_per_s: 5000, slots: 10}\n"
      "calls:\n  - {from: user, to: api, retries: 0, timeout_s: 0.1}\n"
      "  - {from: api, to: db, retries: 0, timeout_s: 0.1}\n"
      "incident: {service: db, start_s: 5, duration_s: 1, capacity_factor: 1}\n");
  RowLog rows;
  const RunResult r = run_agent(codel, {.log = &rows});
  std::set<std::tuple<int, uint64_t, int>> seen;
  for (const AttemptRow& row : rows.rows)
    EXPECT_TRUE(seen.insert({row.call, row.request_id, row.attempt}).second)
        << "call " << row.call << " request " << row.request_id << " attempt " << row.attempt;
  EXPECT_EQ(double(seen.size()), sum(r.graph.edges[0].calls) + sum(r.graph.edges[0].retries) +
                                     sum(r.graph.edges[1].calls) + sum(r.graph.edges[1].retries));
  const Scenario held = read(
      "engine: agent\nhorizon_s: 10\nstep_s: 0.1\ndemand: {rate_per_s: 10}\n"
      "server: {service: deterministic}\nservices:\n  api: {capacity_per_s: 1000, slots: 10}\n"
      "  db: {capacity_per_s: 1000, slots: 10}\n"
      "calls:\n  - {from: user, to: api, retries: 0, timeout_s: 30}\n"
      "  - {from: api, to: db, retries: 0, timeout_s: 30}\n"
      "incident: {call: 0, delay_s: 20, start_s: 8, duration_s: 2}\n");
  RowLog held_rows;
  run_agent(held, {.log = &held_rows});
  for (const AttemptRow& row : held_rows.rows)
    EXPECT_FALSE(row.call == 0 && row.sent_s >= 8 && std::isnan(row.done_s))
        << "a held attempt's row, request " << row.request_id;
}

// Each call's token bucket holds window_s seconds of its own first attempts:
// ten calls a request at 10 requests a second, or one at 100, admit the same
// retries (the bucket was sized from the users' 10 a second).
TEST(Graph, ATokenBucketOnACallIsSizedFromTheCallsOwnRate) {
  auto bucket = [](int rate, int count) {
    return read(
        "engine: agent\nhorizon_s: 10\nstep_s: 0.1\ndemand: {rate_per_s: " + std::to_string(rate) +
        "}\nserver: {service: deterministic}\n"
        "client: {retries: 3, timeout_s: 1, backoff: {base_s: 0.01, jitter: none}}\n"
        "services:\n  gw: {pattern: parallel}\n  db: {capacity_per_s: 10000, slots: 50}\n"
        "calls:\n  - {from: user, to: gw, retries: 0, timeout_s: 5}\n"
        "  - {from: gw, to: db, count: " +
        std::to_string(count) +
        ", optional: true, budget: {kind: token_bucket, ratio: 0.1, window_s: 10}}\n"
        "incident: {call: 1, start_s: 5, duration_s: 2, abort_share: 1, "
        "abort_status: \"503\"}\n");
  };
  const double ten = sum(run_engine(bucket(10, 10)).graph.edges[1].retries);
  const double one = sum(run_engine(bucket(100, 1)).graph.edges[1].retries);
  EXPECT_GT(ten, 0.8 * one);
  EXPECT_LT(ten, 1.25 * one);
}

// The entry call is one call per user request: a count on it was read by
// the reports and not by the engine.
TEST(Graph, TheEntryCallTakesNoCount) {
  try {
    read(
        "engine: agent\nservices:\n  gw: {capacity_per_s: 100}\n"
        "calls:\n  - {from: user, to: gw, count: 3}\n");
    ADD_FAILURE() << "a count on the entry call was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("calls[0].count: 3 on the entry call"), std::string::npos)
        << e.what();
  }
}

// "Retry at one hop only" keeps the outermost call's retries whatever the
// order the calls are listed in.
TEST(Graph, OneHopOnlyKeepsTheOutermostCallWhateverTheOrder) {
  Scenario s = preset_or_throw("three-tier-chain").scenario;
  std::reverse(s.graph.calls.begin() + 1, s.graph.calls.end());
  validate(s);
  const std::vector<LadderRow> rows = graph_defenses(s);
  const auto one = std::find_if(rows.begin(), rows.end(), [](const LadderRow& r) {
    return r.name == "Retry at one hop only";
  });
  ASSERT_NE(one, rows.end());
  EXPECT_NE(one->change.find("ingress -> gateway"), std::string::npos) << one->change;
}

TEST(Graph, InvariantsOnGeneratedGraphs) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::string text = generated_graph(seed);
    SCOPED_TRACE(text);
    Scenario s = read(text);
    RunResult r = run_engine(s);
    // Every user request ends once: succeeded, failed or still in flight.
    EXPECT_EQ(r.user_requests, r.succeeded + r.failed + r.in_flight);
    EXPECT_EQ(r.succeeded,
              sum(std::vector<double>(r.series.goodput.begin(), r.series.goodput.end())));
    const Graph& g = s.graph;
    for (size_t v = 0; v < g.services.size(); ++v) {
      const ServiceSeries& at = r.graph.services[v];
      double arrivals = sum(at.first_attempts) + sum(at.retries);
      double calls_in = 0, attempts_in = 0, held = 0;
      for (size_t e = 0; e < g.calls.size(); ++e)
        if (g.calls[e].to == at.name) {
          const EdgeSeries& edge = r.graph.edges[e];
          calls_in += sum(edge.calls);
          attempts_in += sum(edge.calls) + sum(edge.retries);
          double faulted = sum(edge.delayed) + sum(edge.aborted);
          if (static_cast<int>(e) != s.incident.call) {
            EXPECT_EQ(faulted, 0) << edge.from;
          }
          held += faulted + sum(edge.paced);  // a call held for a token may never be sent
        }
      // Per edge, attempts = first + retries; per service, they arrive, but
      // for those a fault answered, or a fault or a rate limiter held until
      // nobody waited.
      if (held == 0) {
        EXPECT_EQ(sum(at.first_attempts), calls_in) << at.name;
        EXPECT_EQ(arrivals, attempts_in) << at.name;
      }
      EXPECT_LE(arrivals, attempts_in) << at.name;
      EXPECT_GE(arrivals, attempts_in - held) << at.name;
      if (!at.serves) continue;
      // Arrivals = served + late + rejected + shed + still at the server.
      double out = sum(at.served) + sum(at.late) + sum(at.rejected) + sum(at.shed);
      EXPECT_EQ(arrivals, out + at.queue.back()) << at.name;
    }
  }
}

// requests.csv of a graph: a row per attempt at every hop (docs/graph.md, "The
// per-request log"), the user's successes as the entry call's ok rows, each
// budget refusal a row.
TEST(Graph, TheRequestLogHasARowPerAttemptAtEveryHop) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::string text = generated_graph(seed);
    SCOPED_TRACE(text);
    Scenario s = read(text);
    RowLog log;
    RunResult r = run_agent(s, {&log, nullptr});
    size_t n = s.graph.calls.size();
    std::vector<double> rows(n, 0), denied(n, 0);
    double entry_ok = 0;
    for (const AttemptRow& row : log.rows) {
      ASSERT_GE(row.call, 0);
      ASSERT_LT(static_cast<size_t>(row.call), n);
      bool refused = row.outcome == request_log::AttemptOutcome::budget_denied;
      (refused ? denied : rows)[static_cast<size_t>(row.call)] += 1;
      if (row.call == 0 && row.outcome == request_log::AttemptOutcome::ok) entry_ok += 1;
      EXPECT_EQ(row.layer == 1, s.graph.calls[static_cast<size_t>(row.call)].from == "user");
    }
    EXPECT_EQ(entry_ok, r.succeeded);
    // Exactly one row per attempt sent, unless a fault held one at the end, a
    // rate limiter never sent it, or a cancelled hedge has none.
    bool exact = text.find(", call: ") == std::string::npos &&
                 text.find("rate_limiter") == std::string::npos &&
                 text.find("hedging") == std::string::npos;
    for (size_t e = 0; e < n; ++e) {
      const EdgeSeries& edge = r.graph.edges[e];
      double sent = sum(edge.calls) + sum(edge.retries);
      EXPECT_EQ(denied[e], sum(edge.denied)) << e;
      if (exact) {
        EXPECT_EQ(rows[e], sent) << e;
      } else {
        EXPECT_LE(rows[e], sent) << e;
      }
    }
  }
}

TEST(Graph, AmplificationEndToEndIsTheProductOfTheHopsWhenNothingAnswers) {
  // The db never answers (capacity 0 all along) and each timeout is longer
  // than all the attempts below it, so every call fails after its retries:
  // each hop sends retries + 1 attempts per call, and the db sees the product
  // (3 x 3 x 3 x 2 = 54) for each user request that ended.
  Scenario s = read(
      "horizon_s: 300\nstep_s: 0.1\nengine: agent\ndemand: {rate_per_s: 1}\n"
      "incident: {start_s: 0, duration_s: 300, capacity_factor: 0}\n"
      "services:\n  edge: {}\n  api: {pattern: parallel}\n  db: {capacity_per_s: 100}\n"
      "calls:\n  - {from: user, to: edge, retries: 2, timeout_s: 20}\n"
      "  - {from: edge, to: api, retries: 2, timeout_s: 10}\n"
      "  - {from: api, to: db, retries: 2, timeout_s: 1, count: 2}\n"
      "client: {backoff: {base_s: 0.1, multiplier: 1}}\n");
  RunResult r = run_engine(s);
  size_t db = static_cast<size_t>(service_index(s.graph, "db"));
  EXPECT_EQ(worst_case_attempts(s)[db], 54);
  double attempts = sum(r.graph.services[db].first_attempts) + sum(r.graph.services[db].retries);
  ASSERT_GT(r.failed, 250);
  EXPECT_EQ(r.succeeded, 0);
  EXPECT_GE(attempts, 54 * r.failed);
  EXPECT_LE(attempts, 54 * (r.failed + r.in_flight));
  for (const EdgeSeries& edge : r.graph.edges) {  // 3 attempts per call that ended
    double calls = sum(edge.calls), sent = calls + sum(edge.retries), failed = sum(edge.failed);
    EXPECT_GE(sent, 3 * failed) << edge.from << " -> " << edge.to;
    EXPECT_LE(sent, 3 * calls) << edge.from << " -> " << edge.to;
  }
}

// A ladder of diamonds (every level's two services call both of the next
// level's) has 2^depth paths: its attempts per request are summed service by
// service, and a deep one is refused at once for its attempts (a path by path
// walk never ended on 30 levels: 59 services and 115 calls, inside the limits).
TEST(Graph, ALadderOfDiamondsIsPricedInLinearTime) {
  auto ladder = [](int levels) {
    std::string text = "engine: agent\nclient: {retries: 0}\nservices: {n0: {capacity_per_s: 50}";
    for (int k = 1; k <= levels; ++k)
      text += ", a" + std::to_string(k) + ": {}, b" + std::to_string(k) + ": {}";
    text += "}\ncalls: [{from: user, to: n0}, {from: n0, to: a1}, {from: n0, to: b1}";
    for (int k = 1; k < levels; ++k)
      for (const char* from : {"a", "b"})
        for (const char* to : {"a", "b"})
          text += ", {from: " + std::string(from) + std::to_string(k) + ", to: " + to +
                  std::to_string(k + 1) + "}";
    return text + "]\n";
  };
  const auto started = std::chrono::steady_clock::now();
  try {
    read(ladder(30));
    ADD_FAILURE() << "30 levels of diamonds were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("attempts per user request when all fail"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 2);
  Scenario ok = read(ladder(10));  // 2^10 attempts at the last level's services
  std::vector<double> worst = worst_case_attempts(ok);
  EXPECT_EQ(worst[static_cast<size_t>(service_index(ok.graph, "a10"))], 512);
  EXPECT_EQ(worst[static_cast<size_t>(service_index(ok.graph, "n0"))], 1);
}

TEST(Graph, ReaderAndShapeMessagesNameTheKey) {
  auto error = [](const std::string& text) {
    try {
      read("engine: agent\n" + text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("services: {a: {capacity_per_s: 5, colour: red}}\ncalls: [{from: user, to: a}]")
                .find("services.a.colour: unknown key"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: -5}}\ncalls: [{from: user, to: a}]")
                .find("services.a.capacity_per_s"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: 5}}\ncalls: [{from: user, to: b}]")
                .find("calls[0].to: 'b' is not a service"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {}, b: {capacity_per_s: 5}}\ncalls: [{from: user, to: a}, "
                  "{from: a, to: b}, {from: b, to: a}]")
                .find("closes a cycle"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: 5}}\ncalls: [{from: user, to: a, layers: 2}]")
                .find("calls[0].layers: shapes a stack"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: 5}, b: {}}\ncalls: [{from: user, to: a}]")
                .find("services.b: no call reaches it"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: 5}, b: {capacity_per_s: 5}}\n"
                  "calls: [{from: user, to: a, retries: 99}, {from: a, to: b, retries: 99, "
                  "count: 100}]")
                .find("attempts per user request"),
            std::string::npos);
  EXPECT_NE(error("services: {a: {capacity_per_s: 5}}\ncalls: [{from: user, to: a}]\n"
                  "incident: {service: z}")
                .find("incident.service: 'z' is not a service"),
            std::string::npos);
  // A proxy has no server for the incident to hit (it crashed the engine).
  EXPECT_NE(error("services: {a: {}, b: {capacity_per_s: 5}}\n"
                  "calls: [{from: user, to: a}, {from: a, to: b}]\nincident: {service: a}")
                .find("incident.service: 'a' is a proxy"),
            std::string::npos);
  // A fault on a call: a call in range, that delays or aborts, and a call at all.
  const std::string two =
      "services: {a: {}, b: {capacity_per_s: 5}}\n"
      "calls: [{from: user, to: a}, {from: a, to: b}]\n";
  EXPECT_NE(error(two + "incident: {call: 2, delay_s: 1}")
                .find("incident.call: 2 is not a call; the scenario has 2 calls (0 to 1)"),
            std::string::npos);
  EXPECT_NE(error(two + "incident: {call: 1}").find("the fault neither delays nor aborts"),
            std::string::npos);
  EXPECT_NE(error(two + "incident: {abort_share: 0.5}")
                .find("incident.abort_share: a fault needs incident.call"),
            std::string::npos);
  EXPECT_NE(error("incident: {call: 0, delay_s: 1}").find("needs services and calls"),
            std::string::npos);
  try {
    Scenario s = scenario_from_text(
        "services: {a: {capacity_per_s: 5}}\ncalls: [{from: user, to: a}]", "x.yaml");
    validate(s);
    FAIL() << "the fluid engine ran a graph";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("runs with engine=agent"), std::string::npos);
  }
}

// The CSV of a graph in long form: one row per step and service (or call),
// its columns the JSON's series, its sums the report's totals.
TEST(Graph, TheCsvPerServiceAndPerCallHoldsTheSeries) {
  Scenario s = read(
      "horizon_s: 20\nstep_s: 0.5\nengine: agent\ndemand: {rate_per_s: 40}\n"
      "incident: {start_s: 5, duration_s: 5, capacity_factor: 0.2}\n"
      "services: {'edge, west': {}, db: {capacity_per_s: 50}}\n"
      "calls: [{from: user, to: 'edge, west', timeout_s: 2}, "
      "{from: 'edge, west', to: db, timeout_s: 0.5}]\n");
  RunResult r = run_engine(s);
  auto lines = [](const std::string& csv) {
    std::vector<std::string> out;
    for (size_t at = 0, end; (end = csv.find('\n', at)) != std::string::npos; at = end + 1)
      out.push_back(csv.substr(at, end - at));
    return out;
  };
  std::vector<std::string> services = lines(graph_services_csv(r));
  ASSERT_EQ(services.size(), 1 + 40 * 2u);
  EXPECT_EQ(services[0],
            "t_s,service,first_attempts,retries,served,late,rejected,shed,failed,queue");
  EXPECT_EQ(services[1].rfind("0,db,", 0), 0u) << services[1];
  EXPECT_EQ(services[2].rfind("0,\"edge, west\",", 0), 0u) << services[2];
  std::vector<std::string> calls = lines(graph_calls_csv(r));
  ASSERT_EQ(calls.size(), 1 + 40 * 2u);
  EXPECT_EQ(calls[0],
            "t_s,call,from,to,calls,retries,timeouts,failed,denied,delayed,aborted,paced");
  // The retries of call 1, summed over its rows, are the report's total.
  double retries = 0;
  for (size_t i = 1; i < calls.size(); ++i) {
    if (calls[i].find(",1,\"edge, west\",db,") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::string rest = calls[i].substr(calls[i].find(",db,") + 4);
    for (size_t at = 0, end;; at = end + 1) {
      end = rest.find(',', at);
      cells.push_back(rest.substr(at, end - at));
      if (end == std::string::npos) break;
    }
    retries += std::stod(cells[1]);
  }
  EXPECT_GT(retries, 0);
  EXPECT_EQ(retries, graph_summary(r).edges[1].retries);
}

TEST(Graph, TheScenarioWritesItsGraphBackAsRead) {
  Scenario s = read(
      "engine: agent\nservices:\n  api: {pattern: parallel}\n  db: {capacity_per_s: 50, slots: "
      "2}\n  cache: {capacity_per_s: 500}\ncalls:\n  - {from: user, to: api, deadline_s: 2}\n"
      "  - {from: api, to: db, retries: 1, backoff: {base_s: 0.2}, propagate_deadline: true}\n"
      "  - {from: api, to: cache, optional: true, count: 3}\n");
  nlohmann::json j = scenario_to_json(s);
  Scenario again = scenario_from_json(j);
  EXPECT_EQ(scenario_to_json(again).dump(), j.dump());
  EXPECT_EQ(j["services"]["db"]["slots"], 2);
  EXPECT_EQ(j["calls"][1]["backoff"]["base_s"], 0.2);
  EXPECT_EQ(j["calls"][2]["count"], 3);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// The stories of docs/graph.md, "The three graph presets", number for number.
struct Story {
  RunReport report;
  GraphSummary hops;
  const ServiceHop& service(const std::string& name) const {
    for (const ServiceHop& h : hops.services)
      if (h.name == name) return h;
    throw std::runtime_error("no service " + name);
  }
  const EdgeHop& edge(const std::string& from, const std::string& to) const {
    for (const EdgeHop& h : hops.edges)
      if (h.from == from && h.to == to) return h;
    throw std::runtime_error("no call " + from + " -> " + to);
  }
  const Advice* advice(const std::string& title) const {
    for (const Advice& a : report.advice)
      if (a.title == title) return &a;
    return nullptr;
  }
};

Story story(const std::string& preset) {
  Story s{make_report(preset_or_throw(preset).scenario), {}};
  s.hops = graph_summary(s.report.run);
  return s;
}

double percent(double fraction) {
  return std::round(fraction * 1000) / 10;
}

// The message of the InputError f throws, or "no error".
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A sweep varies a call's own key by its path, as --set does; each point is the
// run with that key set.
TEST(GraphKeys, ASweepVariesACallsKey) {
  const Scenario& base = preset_or_throw("fan-out-page").scenario;
  std::vector<SweepRow> rows = run_sweep(base, {parse_axis("calls[0].retries=0:2:1")});
  ASSERT_EQ(rows.size(), 3u);
  for (const SweepRow& row : rows) {
    Scenario s = base;
    set_key(s, "calls[0].retries", KeyValue{row.values[0]});
    EXPECT_EQ(row.metrics.failed_fraction, compute_metrics(run_engine(s)).failed_fraction);
  }
  EXPECT_LT(rows[0].metrics.peak_amplification, rows[2].metrics.peak_amplification);
  EXPECT_NE(refusal([&] {
              run_sweep(base, {parse_axis("calls[0].optional=0:1:1")});
            }).find("only numeric keys can be varied"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              run_sweep(base, {parse_axis("calls[9].retries=0:1:1")});
            }).find("the scenario has 6 calls"),
            std::string::npos);
}

// The delays between caller and server on one service of a graph, without an
// incident: an answer that takes 0.29 s back to a caller that waits 0.3 s
// arrives in time only when the database serves within 10 ms, so most of its
// answers reach nobody and the chain's retries pile up; a shed 0.2 s late
// leaves given-up attempts queued longer (docs/graph.md).
TEST(Graph, AnAnswerDelayAndAShedLagRunAtOneService) {
  Scenario base = preset_or_throw("three-tier-chain").scenario;
  base.incident.capacity_factor = 1;
  set_graph_key(base, "services.db.shed_abandoned", KeyValue{true});
  auto total = [](const RunResult& r, const char* service, std::vector<double> ServiceSeries::*f) {
    for (const ServiceSeries& s : r.graph.services)
      if (s.name == service) return std::accumulate((s.*f).begin(), (s.*f).end(), 0.0);
    return -1.0;
  };
  auto with = [&](const char* key, double v) {
    Scenario s = base;
    set_graph_key(s, key, KeyValue{v});
    validate(s);
    return run_engine(s);
  };
  RunResult before = run_engine(base);
  RunResult delayed = with("services.db.answer_delay_s", 0.29);
  EXPECT_EQ(total(before, "db", &ServiceSeries::late), 0);
  EXPECT_EQ(before.failed, 0);
  double late = total(delayed, "db", &ServiceSeries::late);
  EXPECT_GT(late, 0.95 * (late + total(delayed, "db", &ServiceSeries::served)));
  EXPECT_GT(delayed.failed, 0.9 * delayed.user_requests);
  // Only the database's answers take long: the api hears its callers' answers in time.
  EXPECT_EQ(total(delayed, "api", &ServiceSeries::late), 0);
  EXPECT_GT(total(delayed, "api", &ServiceSeries::served), 100000);
  // In the preset's collapse, attempts are given up on by the thousand: shed
  // 0.2 s late, more of them start in vain at the head of the queue.
  base.incident.capacity_factor = 0.2;
  RunResult collapse = run_engine(base);
  RunResult lagging = with("services.db.shed_lag_s", 0.2);
  EXPECT_GT(total(lagging, "db", &ServiceSeries::late),
            total(collapse, "db", &ServiceSeries::late));
  EXPECT_NE(run_bytes(lagging), run_bytes(collapse));
}

TEST(GraphPresets, ThreeTierChain) {
  Story s = story("three-tier-chain");
  const Metrics& m = s.report.metrics;
  EXPECT_FALSE(m.recovered);
  EXPECT_EQ(percent(m.failed_fraction), 71.2);
  EXPECT_EQ(m.bound.max_amplification, 27);
  EXPECT_EQ(percent(m.bound.safe_load_below), 3.7);
  EXPECT_EQ(percent(m.bound.load), 30);
  EXPECT_EQ(std::round(m.last_window.attempts_per_request * 10) / 10, 27.0);
  EXPECT_EQ(s.service("db").worst_case, 27);
  const Advice* budget = s.advice("A 10% retry budget on every call");
  ASSERT_TRUE(budget);
  EXPECT_TRUE(budget->recovers);
  EXPECT_EQ(percent(*budget->failed_fraction), 21.6);
  EXPECT_EQ(s.report.advice.front().title, budget->title);
  EXPECT_FALSE(s.advice("Retry at one hop only"));  // did not help
  for (const LadderResult& row : run_ladder(s.report.run.scenario))
    if (row.row.name.rfind("No retries on", 0) == 0) {
      EXPECT_FALSE(row.metrics.recovered) << row.row.name;
      EXPECT_GE(percent(row.metrics.failed_fraction), 72.0) << row.row.name;
      EXPECT_LE(percent(row.metrics.failed_fraction), 72.9) << row.row.name;
    }
}

TEST(GraphPresets, FanOutPage) {
  Story s = story("fan-out-page");
  EXPECT_EQ(percent(s.report.metrics.failed_fraction), 71.9);
  for (const char* healthy : {"profile", "cart", "prices", "stock"})
    EXPECT_EQ(std::round(s.service(healthy).per_request * 100) / 100, 1.73) << healthy;
  EXPECT_EQ(std::round(s.edge("page", "recommendations").attempts_per_call * 100) / 100, 2.69);
  const Advice* optional = s.advice("Make page -> recommendations (calls[5]) optional");
  ASSERT_TRUE(optional);
  EXPECT_EQ(*optional->failed_fraction, 0);
  const Advice* budget = s.advice("A 10% retry budget on every call");
  ASSERT_TRUE(budget);
  EXPECT_TRUE(budget->recovers);
  EXPECT_EQ(percent(*budget->failed_fraction), 28.9);
}

// A leaf in a join answers a caller that still waits for the other calls:
// not late. Without an incident no user gives up, so nothing is wasted (the
// answers that did not end the user's request at once were once counted late).
TEST(Graph, ALeafAnswerInAJoinIsOnTime) {
  for (const char* preset : {"fan-out-page", "shared-database"}) {
    Scenario s = preset_or_throw(preset).scenario;
    s.incident.capacity_factor = 1;
    s.horizon_s = 60;
    validate(s);
    RunResult r = run_engine(s);
    EXPECT_EQ(r.failed, 0) << preset;
    double late = std::accumulate(r.series.served_late.begin(), r.series.served_late.end(), 0.0);
    EXPECT_EQ(late, 0) << preset;
  }
}

TEST(GraphPresets, SharedDatabase) {
  Story s = story("shared-database");
  EXPECT_EQ(percent(s.report.metrics.failed_fraction), 72.3);
  EXPECT_EQ(percent(s.report.metrics.bound.load), 59.7);
  EXPECT_EQ(std::round(s.edge("search", "db").attempts_per_call * 100) / 100, 4.38);
  EXPECT_EQ(std::round(s.edge("orders", "db").attempts_per_call * 100) / 100, 1.84);
  const Advice* shed = s.advice("Shed abandoned work at db");
  ASSERT_TRUE(shed);
  EXPECT_TRUE(shed->recovers);
  EXPECT_EQ(*shed->failed_fraction, 0);
  EXPECT_EQ(s.report.advice.front().title, shed->title);
  const Advice* budget = s.advice("A 10% retry budget on every call");
  ASSERT_TRUE(budget);
  EXPECT_EQ(percent(*budget->failed_fraction), 28.2);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm::configs {
namespace {

std::vector<std::string> rules_of(const LintReport& r, const std::string& file) {
  std::vector<std::string> out;
  for (const Finding& f : r.findings)
    if (f.file == file) out.push_back(f.rule);
  return out;
}

TEST(GraphLint, TheRulesThatNeedTheGraph) {
  LintReport chain = lint_scenario(preset_or_throw("three-tier-chain").scenario, "chain");
  std::vector<std::string> rules = rules_of(chain, "chain");
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "retries-multiply-across-hops"), 1);
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "call-outlasts-caller"), 3);
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "deadline-not-propagated"), 3);
  for (const Finding& f : chain.findings)
    if (f.rule == "retries-multiply-across-hops") {
      EXPECT_EQ(f.numbers["attempts"], 27);
      EXPECT_NE(f.message.find("27 attempts at db"), std::string::npos);
      ASSERT_EQ(f.fix_keys.size(), 2u);  // the two calls below the first that retries
      EXPECT_EQ(f.fix_keys[0].first, "calls[2].retries");
    }
  // Each call's own policy is linted too, at its own rate.
  EXPECT_FALSE(rules_of(chain, "chain calls[3] (api -> db) (client policy)").empty());
  EXPECT_NE(lint_text(chain).find("a graph of 4 services and 4 calls"), std::string::npos);
  EXPECT_EQ(lint_json(chain)["graph"].get<std::string>().find("chain: a graph"), 0u);

  LintReport shared = lint_scenario(preset_or_throw("shared-database").scenario, "shared");
  rules = rules_of(shared, "shared");
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "shared-dependency-overload"), 1);
  for (const Finding& f : shared.findings)
    if (f.rule == "shared-dependency-overload") {
      EXPECT_NE(f.message.find("4.18x its capacity of 670/s"), std::string::npos) << f.message;
    }
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "retries-multiply-across-hops"), 2);
}

// Envoy's max_retries alone (envoy_concurrency at ratio 0) is a fixed cap,
// which no-retry-budget calls no budget: it protects nothing below either.
TEST(GraphLint, AFixedCapIsNoBudgetThatCouldProtectBelow) {
  auto rules_with = [](const std::string& budget) {
    Scenario s = scenario_from_text(
        "engine: agent\nservices: {api: {capacity_per_s: 100}, db: {capacity_per_s: 100}}\n"
        "calls:\n  - {from: user, to: api, timeout_s: 3, retries: 2, budget: " +
            budget +
            "}\n"
            "  - {from: api, to: db, timeout_s: 1, retries: 1, propagate_deadline: true}\n",
        "x.yaml");
    return rules_of(lint_scenario(s, "x"), "x");
  };
  std::vector<std::string> cap = rules_with("{kind: envoy_concurrency, ratio: 0}");
  EXPECT_EQ(std::find(cap.begin(), cap.end(), "budget-does-not-protect-below"), cap.end());
  std::vector<std::string> share = rules_with("{kind: envoy_concurrency, ratio: 0.2}");
  EXPECT_NE(std::find(share.begin(), share.end(), "budget-does-not-protect-below"), share.end());
}

TEST(GraphLint, AnInnerTimeoutLongerThanItsCallerAndABudgetThatProtectsOnlyItsHop) {
  Scenario s = scenario_from_text(
      "engine: agent\nservices: {api: {capacity_per_s: 100}, db: {capacity_per_s: 100}}\n"
      "calls:\n  - {from: user, to: api, timeout_s: 1, retries: 2, budget: {kind: window}}\n"
      "  - {from: api, to: db, timeout_s: 2, retries: 1, propagate_deadline: true}\n",
      "x.yaml");
  LintReport r = lint_scenario(s, "x");
  std::vector<std::string> rules = rules_of(r, "x");
  EXPECT_NE(std::find(rules.begin(), rules.end(), "inner-timeout-longer"), rules.end());
  EXPECT_EQ(std::find(rules.begin(), rules.end(), "deadline-not-propagated"), rules.end());
  EXPECT_NE(std::find(rules.begin(), rules.end(), "budget-does-not-protect-below"), rules.end());
  EXPECT_GT(r.errors, 0);
  for (const Finding& f : r.findings)
    if (f.rule == "inner-timeout-longer") {
      // With a 1 s backoff between two attempts nothing fits the caller's 1 s:
      // the fix is one attempt within it.
      ASSERT_EQ(f.fix_keys.size(), 3u);
      EXPECT_EQ(f.fix_keys[0].first, "calls[1].retries");
      EXPECT_EQ(f.fix_keys[1].first, "calls[1].timeout_s");
      Scenario fixed = s;  // the fix, applied, clears the finding
      for (const auto& [path, value] : f.fix_keys) set_key(fixed, path, value);
      std::vector<std::string> after = rules_of(lint_scenario(fixed, "x"), "x");
      EXPECT_EQ(std::find(after.begin(), after.end(), "inner-timeout-longer"), after.end());
      EXPECT_EQ(std::find(after.begin(), after.end(), "call-outlasts-caller"), after.end());
    }
}

// A service that calls two others one after another: each fits the 5 s its
// caller waits, together (6 s) they do not (lint said nothing); in parallel,
// or with room enough, no finding.
TEST(GraphLint, CallsInSequenceThatTogetherOutlastTheCaller) {
  auto rules = [](const std::string& pattern, double timeout) {
    Scenario s = scenario_from_text(
        "engine: agent\nservices:\n  a: {capacity_per_s: 1000" + pattern +
            "}\n  b: {capacity_per_s: 1000}\n  c: {capacity_per_s: 1000}\ncalls:\n"
            "  - {from: user, to: a, retries: 0, timeout_s: 5}\n"
            "  - {from: a, to: b, retries: 0, timeout_s: " +
            number_text(timeout) +
            "}\n  - {from: a, to: c, retries: 0, timeout_s: " + number_text(timeout) + "}\n",
        "x.yaml");
    return rules_of(lint_scenario(s, "x"), "x");
  };
  auto has = [](const std::vector<std::string>& r) {
    return std::find(r.begin(), r.end(), "sequence-outlasts-caller") != r.end();
  };
  EXPECT_TRUE(has(rules("", 3)));
  EXPECT_FALSE(has(rules(", pattern: parallel", 3)));
  EXPECT_FALSE(has(rules("", 2)));
  // One call made four times in a row is a sequence too.
  Scenario counted = scenario_from_text(
      "engine: agent\nservices:\n  a: {capacity_per_s: 1000}\n  b: {capacity_per_s: 1000}\n"
      "calls:\n  - {from: user, to: a, retries: 0, timeout_s: 3}\n"
      "  - {from: a, to: b, count: 4, retries: 0, timeout_s: 1}\n",
      "x.yaml");
  EXPECT_TRUE(has(rules_of(lint_scenario(counted, "x"), "x")));
}

// The caller's wait is its per-attempt timeout or its deadline, whichever
// comes first (a 10 s timeout under a 2 s deadline hid a 5 s call below); a
// call with a deadline of its own is fixed by a deadline within the wait (the
// fix said "its backoffs alone outlast" the wait when they were 0.3 s of 3 s).
TEST(GraphLint, TheCallersDeadlineCountsAndEachFixSaysWhatFits) {
  auto check = [](const std::string& calls, const std::string& fix_part) {
    Scenario s = scenario_from_text(
        "engine: agent\nservices: {a: {capacity_per_s: 1000}, b: {capacity_per_s: 1000}}\n"
        "calls:\n" +
            calls,
        "x.yaml");
    LintReport r = lint_scenario(s, "x");
    const Finding* found = nullptr;
    for (const Finding& f : r.findings)
      if (f.rule == "inner-timeout-longer" || f.rule == "call-outlasts-caller") found = &f;
    ASSERT_NE(found, nullptr) << calls;
    EXPECT_NE(found->fix.find(fix_part), std::string::npos) << found->fix;
    Scenario fixed = s;  // the fix, applied, clears the finding
    for (const auto& [path, value] : found->fix_keys) set_key(fixed, path, value);
    std::vector<std::string> after = rules_of(lint_scenario(fixed, "x"), "x");
    EXPECT_EQ(std::count(after.begin(), after.end(), "inner-timeout-longer") +
                  std::count(after.begin(), after.end(), "call-outlasts-caller"),
              0)
        << calls;
  };
  check(
      "  - {from: user, to: a, timeout_s: 10, deadline_s: 2, retries: 1}\n"
      "  - {from: a, to: b, timeout_s: 5, retries: 0}\n",
      "a timeout of at most 2 s per attempt on calls[1] (a -> b) (1 attempt then fits in the "
      "caller's 2 s)");
  check(
      "  - {from: user, to: a, timeout_s: 3, retries: 1}\n"
      "  - {from: a, to: b, timeout_s: 4, deadline_s: 4, retries: 2, backoff: {base_s: 0.1}}\n",
      "a deadline of at most 3 s on calls[1] (a -> b) (all its attempts then end within the "
      "caller's 3 s)");
  check(
      "  - {from: user, to: a, timeout_s: 3, retries: 1}\n"
      "  - {from: a, to: b, timeout_s: 2, retries: 2, backoff: {base_s: 0.1, cap_s: 1}}\n",
      "a timeout of at most 0.9 s per attempt on calls[1] (a -> b) (3 attempts and 0.3 s of "
      "backoffs then fit in the caller's 3 s)");
}

}  // namespace
}  // namespace retrystorm::configs

namespace retrystorm {
namespace {

// Sequences of calls to services that only call on, each answered in the
// same instant: every call was made inside the last one's answer, 10,000
// deep, and the stack overflowed. They go one after the other now.
TEST(GraphReview, CallsAnsweredAtOnceDoNotNestOnTheStack) {
  std::string text =
      "engine: agent\nhorizon_s: 2\nstep_s: 0.1\ndemand: {rate_per_s: 1}\n"
      "client: {retries: 0, timeout_s: 1}\nservices:\n  a: {}\n  b: {}\n"
      "  srv: {capacity_per_s: 100}\n";
  for (int p = 0; p <= 10; ++p) text += "  p" + std::to_string(p) + ": {pattern: parallel}\n";
  text +=
      "calls:\n  - {from: user, to: a}\n  - {from: a, to: srv}\n"
      "  - {from: a, to: b, count: 100}\n  - {from: b, to: p0, count: 100}\n";
  for (int p = 0; p < 10; ++p)
    text += "  - {from: p" + std::to_string(p) + ", to: p" + std::to_string(p + 1) + "}\n";
  text += "incident: {service: srv, start_s: 0.5, duration_s: 0.5, capacity_factor: 0.5}\n";
  const Scenario s = read(text);
  const RunResult r = run_agent(s);
  EXPECT_GT(r.user_requests, 0);
  EXPECT_EQ(r.succeeded + r.failed + r.in_flight, r.user_requests);
  // Each b visit made its 100 calls to p0, each of which reached p10.
  auto arrivals = [&](const std::string& name) {
    for (const ServiceSeries& service : r.graph.services)
      if (service.name == name) return sum(service.first_attempts);
    ADD_FAILURE() << name;
    return 0.0;
  };
  EXPECT_GT(arrivals("b"), 0);
  EXPECT_EQ(arrivals("p10"), 100 * arrivals("b"));
}

// A server that refuses at once at the depth limit: its refusal's next call
// is drained from a fresh depth (it went back on the list for ever, and the
// run filled memory).
TEST(GraphReview, ARefusalAtTheDepthLimitMakesTheNextCall) {
  const Scenario s = read(
      "engine: agent\nhorizon_s: 2\nstep_s: 0.1\ndemand: {rate_per_s: 1}\n"
      "client: {retries: 0, timeout_s: 1}\n"
      "services:\n  c: {}\n  leaf: {}\n  tail: {}\n  db: {capacity_per_s: 100}\n"
      "calls:\n  - {from: user, to: c}\n  - {from: c, to: leaf, count: 63}\n"
      "  - {from: c, to: db, optional: true}\n  - {from: c, to: tail}\n"
      "incident: {service: db, start_s: 0, duration_s: 2, capacity_factor: 0, failure: '503'}\n");
  const RunResult r = run_agent(s);
  EXPECT_EQ(r.succeeded + r.failed + r.in_flight, r.user_requests);
  EXPECT_EQ(r.succeeded, r.user_requests);  // the db's call is optional
}

// A shed attempt's visit ends with it: the entities in flight stay what the
// stacked engine keeps (they grew with every shed attempt).
TEST(GraphReview, ShedAttemptsEndTheirVisits) {
  const Scenario s = read(
      "engine: agent\nhorizon_s: 60\nstep_s: 0.01\ndemand: {rate_per_s: 5000}\n"
      "server: {service: deterministic}\nclient: {retries: 0, timeout_s: 0.05}\n"
      "services:\n  gw: {}\n  db: {capacity_per_s: 1000, slots: 10, shed_abandoned: true}\n"
      "calls:\n  - {from: user, to: gw, retries: 0, timeout_s: 10}\n  - {from: gw, to: db}\n"
      "incident: {service: db, start_s: 30, duration_s: 20, capacity_factor: 0.5}\n");
  AgentStats stats;
  const RunResult r = run_agent(s, {nullptr, &stats});
  const double shed = std::accumulate(r.series.shed.begin(), r.series.shed.end(), 0.0);
  ASSERT_GT(shed, 100000);
  // Calls and visits alive at once: about rate x timeout per hop, not the sheds.
  EXPECT_LT(stats.peak_calls, 20000u) << shed << " shed";
}

// An attempt the fault still held when its caller's timer fired never
// reached the server, which writes the rows of those it got: its row is the
// caller's (195 rows were missing behind a server, none behind a proxy).
TEST(GraphReview, AttemptsHeldByTheFaultHaveTheirRowsBehindAServer) {
  const Scenario s = read(
      "engine: agent\nhorizon_s: 30\nstep_s: 0.1\ndemand: {rate_per_s: 20}\n"
      "client: {retries: 1, timeout_s: 0.2, backoff: {base_s: 0.05}}\n"
      "services:\n  gw: {}\n  db: {capacity_per_s: 200, slots: 4}\n"
      "calls:\n  - {from: user, to: gw, retries: 0, timeout_s: 5}\n  - {from: gw, to: db}\n"
      "incident: {call: 1, start_s: 10, duration_s: 5, delay_s: 0.5}\n");
  RowLog log;
  const RunResult r = run_agent(s, {&log, nullptr});
  double rows = 0;
  for (const AttemptRow& row : log.rows) rows += row.call == 1 ? 1 : 0;
  const EdgeSeries& edge = r.graph.edges[1];
  ASSERT_GT(sum(edge.timeouts), 0);
  // Every attempt sent has its row, but those the fault holds at the end.
  EXPECT_LE(rows, sum(edge.calls) + sum(edge.retries));
  EXPECT_GE(rows, sum(edge.calls) + sum(edge.retries) - 20);
}

// Calls in backoff keep their deadline: the deadline lane is swept only
// when it outgrows the calls alive (it was swept on every call made once
// the retries in backoff outnumbered the attempts in flight).
TEST(GraphReview, ADeadlineLaneOfRetriesInBackoffIsNotSweptOnEveryCall) {
  const Scenario s = read(
      "engine: agent\nhorizon_s: 60\nstep_s: 0.1\ndemand: {rate_per_s: 2000}\n"
      "server: {service: deterministic}\nclient: {retries: 0, timeout_s: 1, deadline_s: 50, "
      "backoff: {base_s: 15, multiplier: 1, cap_s: 15, jitter: none}}\n"
      "services:\n  gw: {}\n  db: {capacity_per_s: 16000, slots: 40}\n"
      "calls:\n  - {from: user, to: gw, retries: 3}\n  - {from: gw, to: db}\n"
      "incident: {service: db, start_s: 5, duration_s: 50, capacity_factor: 0, failure: '503'}\n");
  const auto start = std::chrono::steady_clock::now();
  const RunResult r = run_agent(s);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(r.failed, 0);
  EXPECT_LT(took, 20) << "78 s before; about 2 s now";
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// An answer 0.7 s in the making and 0.5 s on its way back reaches the gateway
// (timeout 2 s) in time, but not the user (timeout 1 s): no success, in the
// graph as in the stack (both counted successes of 1.2 s before).
TEST(GraphReview, AnAnswerLateForACallerAboveIsNoSuccess) {
  const std::string common =
      "engine: agent\nhorizon_s: 20\nstep_s: 0.1\ndemand: {rate_per_s: 2}\n"
      "incident: {start_s: 10, duration_s: 1, capacity_factor: 1}\n";
  const Scenario graph = read(
      common +
      "server: {service: deterministic}\nclient: {retries: 0, timeout_s: 1}\n"
      "services:\n  gw: {}\n  db: {capacity_per_s: 10, slots: 7, answer_delay_s: 0.5}\n"
      "calls:\n  - {from: user, to: gw, timeout_s: 1}\n  - {from: gw, to: db, timeout_s: 2}\n");
  const Scenario stack =
      read(common +
           "server: {service: deterministic, capacity_per_s: 10, slots: 7, answer_delay_s: 0.5}\n"
           "client: {retries: 0, timeout_s: 1, layers: 2, layer_timeouts_s: '1,2'}\n");
  std::vector<double> late;
  for (const Scenario* s : {&graph, &stack}) {
    const RunResult r = run_agent(*s);
    EXPECT_EQ(r.succeeded, 0) << (s == &graph ? "graph" : "stack");
    EXPECT_GT(r.failed, 30);
    late.push_back(std::accumulate(r.series.served_late.begin(), r.series.served_late.end(), 0.0));
  }
  // Every answer served was late for the user, in both: none on time.
  EXPECT_GT(late[0], 30);
  EXPECT_EQ(late[0], late[1]);
  // With the user's timeout past the way back, every answer is a success.
  Scenario patient = stack;
  set_key_text(patient, "client.layer_timeouts_s", "1.5,2");
  EXPECT_GT(run_agent(patient).succeeded, 30);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// A parallel service whose calls propagate the deadline makes them all, in
// either order: a required call answered 503 at once ended the visit, and the
// propagating calls listed after it were not made (p -> b: 1,500 calls with
// a listed first, 2,000 with b first).
TEST(GraphReview, AFanOutThatPropagatesTheDeadlineMakesEveryCallInEitherOrder) {
  auto fan_out = [](bool a_first) {
    const std::string a = "  - {from: p, to: a, propagate_deadline: true}\n";
    const std::string b = "  - {from: p, to: b, propagate_deadline: true}\n";
    return read(
        "engine: agent\nhorizon_s: 20\nstep_s: 0.1\ndemand: {rate_per_s: 100}\n"
        "client: {retries: 0, timeout_s: 1}\n"
        "services:\n  p: {pattern: parallel}\n  a: {capacity_per_s: 1000, slots: 10}\n"
        "  b: {capacity_per_s: 1000, slots: 10}\n"
        "calls:\n  - {from: user, to: p}\n" +
        (a_first ? a + b : b + a) +
        "incident: {service: a, start_s: 5, duration_s: 5, capacity_factor: 0, failure: '503'}\n");
  };
  std::vector<double> to_b;
  for (bool a_first : {true, false}) {
    SCOPED_TRACE(a_first ? "a listed first" : "b listed first");
    const Scenario s = fan_out(a_first);
    const RunResult r = run_engine(s);
    ASSERT_GT(r.failed, 0);  // the 503s reach the users
    for (size_t e = 1; e < s.graph.calls.size(); ++e) {
      EXPECT_EQ(sum(r.graph.edges[e].calls), r.user_requests) << "p -> " << s.graph.calls[e].to;
      if (s.graph.calls[e].to == "b") to_b.push_back(sum(r.graph.edges[e].calls));
    }
  }
  ASSERT_EQ(to_b.size(), 2u);
  EXPECT_EQ(to_b[0], to_b[1]);
}

// A hedging call's attempts have a row each, and one: a hedge answered 503
// (its "failed" row) while the next waited its backoff was written again as
// "in_flight" at the end (50 of 525 attempts twice); of the hedges still out
// at the end, only the latest had its row.
TEST(GraphReview, AHedgingCallsAttemptsHaveOneRowEach) {
  auto hedged = [](const std::string& failure) {
    return read(
        "engine: agent\nhorizon_s: 10\nstep_s: 0.1\ndemand: {rate_per_s: 50}\n"
        "client: {backoff: {base_s: 0.5, jitter: none}}\n"
        "services:\n  gw: {}\n  db: {capacity_per_s: 1000, slots: 10}\n"
        "calls:\n  - {from: user, to: gw, hedging: envoy, retries: 3, timeout_s: 0.2}\n"
        "  - {from: gw, to: db, retries: 0, timeout_s: 1}\n"
        "incident: {service: db, start_s: 9, duration_s: 1, capacity_factor: 0" +
        failure + "}\n");
  };
  // 503s at once: the next hedge waits its backoff at the end; no answer at
  // all: two hedges of a request are still out at the end.
  for (const char* failure : {", failure: '503'", ""}) {
    SCOPED_TRACE(*failure ? "503" : "no answer");
    RowLog log;
    const RunResult r = run_agent(hedged(failure), {&log, nullptr});
    std::set<std::pair<uint64_t, int>> seen;
    double rows = 0;
    for (const AttemptRow& row : log.rows) {
      if (row.call != 0) continue;  // the entry call: one per request
      rows += 1;
      EXPECT_TRUE(seen.insert({row.request_id, row.attempt}).second)
          << "request " << row.request_id << " attempt " << row.attempt << " "
          << request_log::outcome_name(row.outcome);
    }
    const EdgeSeries& entry = r.graph.edges[0];
    EXPECT_GT(sum(entry.retries), 5);
    EXPECT_EQ(rows, sum(entry.calls) + sum(entry.retries));
  }
}

// The load chart and the decision trace of a graph show the incident
// service's own arrivals: shared-database's db gets two calls per user
// request (400/s before the incident), and they showed the users' 200/s.
// The verdict's model bound says the worst case per user request there, 14
// as the per-service table and lint say (it said 7, per call the db receives).
TEST(GraphReview, TheChartTraceAndBoundOfAGraphAreTheIncidentServices) {
  const Scenario s = preset_or_throw("shared-database").scenario;
  const RunReport r = make_report(s, {.advice = false, .tipping = false, .trace = true});
  const size_t at = static_cast<size_t>(service_index(s.graph, "db"));
  const ServiceSeries& db = r.run.graph.services[at];
  const Series& x = r.run.series;
  ASSERT_EQ(charted_service(r.run), &db);
  // Before the incident (10 s to 30 s) the db receives twice the users' requests.
  double users = 0, arrivals = 0;
  for (size_t i = 100; i < 300; ++i) {
    users += x.first_attempts[i];
    arrivals += db.first_attempts[i] + db.retries[i];
  }
  EXPECT_GT(arrivals, 1.9 * users);
  ASSERT_EQ(r.trace.size(), db.first_attempts.size());
  for (size_t i : {size_t{150}, size_t{400}, size_t{800}}) {
    std::string sent = "; sent " + format_amount(db.first_attempts[i]) + " new";
    if (db.retries[i] > 0) sent += " + " + format_amount(db.retries[i]) + " retries";
    EXPECT_NE(r.trace[i].text.find(sent + ";"), std::string::npos)
        << "step " << i << ": " << r.trace[i].text;
  }
  // The chart's scale is the db's arrivals per second at their peak, as the
  // chart sums them (72 columns of steps).
  const size_t n = x.size(), width = 72;
  double top = 0;
  for (size_t c = 0; c < width; ++c) {
    size_t from = n * c / width, to = std::max(from + 1, n * (c + 1) / width);
    double load = 0, capacity = 0, goodput = 0;
    for (size_t i = from; i < to; ++i) {
      load += db.first_attempts[i] + db.retries[i];
      capacity += x.capacity[i];
      goodput += x.goodput[i];
    }
    double per_s = 1.0 / (static_cast<double>(to - from) * s.step_s);
    top = std::max({top, load * per_s, capacity * per_s, goodput * per_s});
  }
  const std::string chart = terminal_chart(r.run);
  EXPECT_EQ(chart.substr(0, chart.find(" |")), format_amount(top) + "/s") << chart;
  // The bound: 14 attempts per user request at the db, 7 per call it receives.
  EXPECT_EQ(worst_case_attempts(s)[at], 14);
  EXPECT_EQ(r.metrics.bound.max_amplification, 7);
  const std::string& detail = r.verdict.detail;
  EXPECT_NE(detail.find("with every response late, each user request can cost up to 14 "
                        "attempts at db, so the load there can reach 417.9% of its capacity;"),
            std::string::npos)
      << detail;
  EXPECT_EQ(detail.find("up to 7 attempts"), std::string::npos) << detail;
  // One dependency's sentence is as it was.
  const Scenario stack = preset_or_throw("two-layer-stack").scenario;
  const RunReport one = make_report(stack, {.advice = false, .tipping = false, .trace = false});
  EXPECT_NE(one.verdict.detail.find("each request can cost up to " +
                                    text::trimmed_text(one.metrics.bound.max_amplification, 2) +
                                    " attempts, so demand can reach "),
            std::string::npos)
      << one.verdict.detail;
}

// A graph's own keys leave its preset too, named as --set names them: with
// no retries below the entry, three-tier-chain's first line still told of
// attempts multiplying to 27 at the database, above "Recovered".
TEST(GraphReview, AGraphsOwnKeysLeaveThePresetsDescription) {
  using Keys = std::vector<std::pair<std::string, KeyValue>>;
  auto with = [](const Keys& keys) {
    Scenario s = preset_or_throw("three-tier-chain").scenario;
    for (const auto& [path, value] : keys) set_key(s, path, value);
    validate(s);
    return s;
  };
  auto left = [&](const Keys& keys) {
    const Scenario s = with(keys);
    return left_preset_by(s, preset_behind(s, presets()));
  };
  const Keys no_retries = {
      {"calls[1].retries", 0.0}, {"calls[2].retries", 0.0}, {"calls[3].retries", 0.0}};
  EXPECT_EQ(left(no_retries), "calls[1].retries = 0, calls[2].retries = 0, calls[3].retries = 0");
  EXPECT_EQ(
      left({{"services.db.queue_limit", 200.0}, {"services.api.pattern", std::string("parallel")}}),
      "services.api.pattern = parallel, services.db.queue_limit = 200");
  EXPECT_EQ(left({{"calls[3].propagate_deadline", true}, {"calls[2].count", 2.0}}),
            "calls[2].count = 2, calls[3].propagate_deadline = true");
  EXPECT_EQ(left({{"calls[1].retries", 2.0}}), "") << "the value it inherits: no change";
  EXPECT_EQ(left({{"client.retries", 0.0}}), "client.retries = 0");
  const std::string text =
      run_text(make_report(with(no_retries), {.advice = false, .tipping = false, .trace = false}));
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "three-tier-chain: the preset with calls[1].retries = 0, calls[2].retries = 0, "
            "calls[3].retries = 0 (its own description no longer applies)");
}

}  // namespace
}  // namespace retrystorm
