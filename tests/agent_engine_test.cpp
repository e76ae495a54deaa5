// The agent engine: agreement with the fluid ladder, accounting invariants,
// byte-identical reruns, Monte Carlo, stacked layers, requests.csv, queue
// disciplines, arrival processes, service distributions and validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "engines/fluid.hpp"
#include "engines/montecarlo.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "logs/requests_csv_writer.hpp"
#include "model/keys.hpp"
#include "open_queue.hpp"

namespace retrystorm {
namespace {

double sum(std::span<const double> v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

Scenario agent_preset(const std::string& name) {
  Scenario s = preset_or_throw(name).scenario;
  s.engine = Engine::agent;
  validate(s);
  return s;
}

// A short primary-failover-like run, to keep the many variants cheap.
Scenario small() {
  Scenario s = agent_preset("primary-failover");
  s.horizon_s = 40;
  s.incident.start_s = 5;
  s.incident.duration_s = 5;
  s.demand.rate_per_s = 300;
  s.server.capacity_per_s = 500;
  return s;
}

TEST(AgentAgreement, PrimaryFailoverLadderMatchesFluid) {
  Scenario fluid = preset_or_throw("primary-failover").scenario;
  Scenario agent = agent_preset("primary-failover");
  auto f = run_ladder(fluid);
  auto a = run_ladder(agent);
  ASSERT_EQ(f.size(), a.size());
  std::printf("%-24s %10s %10s %8s  %s\n", "row", "fluid", "agent", "diff", "recovered f/a");
  for (size_t i = 0; i < f.size(); ++i) {
    double ff = f[i].metrics.failed_fraction, af = a[i].metrics.failed_fraction;
    std::printf("%-24s %9.2f%% %9.2f%% %7.2fpt  %d/%d\n", f[i].row.name.c_str(), 100 * ff, 100 * af,
                100 * (af - ff), f[i].metrics.recovered, a[i].metrics.recovered);
    EXPECT_LT(std::fabs(ff - af), 0.005) << f[i].row.name;
    EXPECT_EQ(f[i].metrics.recovered, a[i].metrics.recovered) << f[i].row.name;
  }
}

// Every user request and every attempt ends somewhere, in many variants.
TEST(AgentEngine, EveryRequestAndAttemptIsAccounted) {
  std::vector<std::vector<std::pair<std::string, std::string>>> variants = {
      {},
      {{"server.shed_abandoned", "true"}},
      {{"client.budget.kind", "window"}},
      {{"client.budget.kind", "token_bucket"}},
      {{"client.budget.kind", "envoy_concurrency"}},
      {{"client.budget.kind", "grpc_throttling"}},
      {{"client.budget.kind", "aws_quota"}},
      {{"server.queue_limit", "200"}},
      {{"client.layers", "2"}, {"client.layer_timeouts_s", "3,1"}},
      {{"client.stack_retries", "1,2,1"}, {"server.shed_abandoned", "true"}},
      {{"server.shed_abandoned", "true"},
       {"server.shed_lag_s", "0.003"},
       {"demand.process", "poisson"}},
      {{"server.answer_delay_s", "0.004"}, {"client.deadline_s", "2"}},
      {{"server.discipline", "codel"}, {"demand.process", "poisson"}},
      {{"server.discipline", "lifo"}, {"server.service", "exponential"}, {"server.slots", "4"}},
      {{"demand.process", "bursty"}, {"server.service", "lognormal"}},
      {{"server.service", "two_point"}, {"server.contention", "0.01"}},
      {{"client.deadline_s", "2"}, {"client.retry_on_timeout", "false"}},
      {{"incident.capacity_factor", "0.3"}, {"incident.demand_factor", "2"}},
  };
  for (const auto& v : variants) {
    Scenario s = small();
    std::string label;
    for (const auto& [k, val] : v) {
      set_key_text(s, k, val);
      label += k + "=" + val + " ";
    }
    validate(s);
    AgentStats stats;
    RunResult r = run_agent(s, {nullptr, &stats});
    const Series& x = r.series;
    EXPECT_GT(r.user_requests, 0) << label;
    EXPECT_DOUBLE_EQ(r.user_requests, sum(x.first_attempts)) << label;
    EXPECT_DOUBLE_EQ(r.user_requests, r.succeeded + r.failed + r.in_flight) << label;
    EXPECT_DOUBLE_EQ(r.failed, sum(x.failed)) << label;
    EXPECT_DOUBLE_EQ(r.succeeded, sum(x.goodput)) << label;
    double arrivals = static_cast<double>(stats.server_arrivals);
    EXPECT_DOUBLE_EQ(arrivals, sum(x.first_attempts) + sum(x.retries)) << label;
    EXPECT_DOUBLE_EQ(arrivals, sum(x.goodput) + sum(x.served_late) + sum(x.shed) + sum(x.rejected) +
                                   x.backlog.back())
        << label;
    for (size_t t = 0; t < x.size(); ++t) EXPECT_GE(x.backlog[t], 0) << label;
    Metrics m = compute_metrics(r);
    EXPECT_GE(m.failed_fraction, 0) << label;
    EXPECT_LE(m.failed_fraction, 1) << label;
  }
}

TEST(AgentEngine, SameSeedSameBytes) {
  Scenario s = small();
  s.demand.process = DemandProcess::poisson;
  s.server.service = ServiceDist::exponential;
  s.seed = 42;
  std::string one = run_json(make_report(s, {.advice = false, .tipping = false})).dump();
  std::string two = run_json(make_report(s, {.advice = false, .tipping = false})).dump();
  EXPECT_EQ(one, two);
  s.seed = 43;
  EXPECT_NE(one, run_json(make_report(s, {.advice = false, .tipping = false})).dump());
}

TEST(AgentEngine, RunEngineDispatches) {
  Scenario s = preset_or_throw("order-status").scenario;
  EXPECT_EQ(run_engine(s).failed, run_fluid(s).failed);
  s.engine = Engine::agent;
  EXPECT_EQ(run_engine(s).failed, run_agent(s).failed);
}

TEST(AgentMonteCarlo, SameBytesWhateverTheThreads) {
  Scenario s = small();
  s.demand.process = DemandProcess::poisson;
  s.seed = 5;
  MonteCarloResult one = run_montecarlo(s, 6, 1);
  MonteCarloResult two = run_montecarlo(s, 6, 2);
  ASSERT_EQ(one.metrics.size(), two.metrics.size());
  for (size_t i = 0; i < one.metrics.size(); ++i) {
    EXPECT_EQ(one.metrics[i].first, two.metrics[i].first);
    EXPECT_EQ(one.metrics[i].second.mean, two.metrics[i].second.mean) << one.metrics[i].first;
    EXPECT_EQ(one.metrics[i].second.low, two.metrics[i].second.low) << one.metrics[i].first;
    EXPECT_LE(one.metrics[i].second.low, one.metrics[i].second.mean);
    EXPECT_GE(one.metrics[i].second.high, one.metrics[i].second.mean);
  }
  // Replication 0 is the single run with the same seed.
  EXPECT_EQ(one.replications[0].failed, compute_metrics(run_engine(s)).failed);
  EXPECT_EQ(run_json(make_report(s, {.advice = false, .tipping = false})).dump(), [&] {
    RunReport r = make_report(s, {.advice = false, .tipping = false});
    r.run = one.first;
    r.metrics = compute_metrics(r.run);
    return run_json(r).dump();
  }());
}

TEST(AgentMonteCarlo, IntervalOfKnownValues) {
  MetricSummary m = summarize({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  // sd = 1.29099, n = 4, t(0.975, 3) = 3.182.
  EXPECT_NEAR(m.high - m.mean, 3.182 * 1.2909944 / 2, 0.01);
  EXPECT_EQ(summarize({7}).low, 7);
}

// Collects rows in memory for the tests.
struct Rows : AttemptSink {
  std::vector<AttemptRow> rows;
  void row(const AttemptRow& r) override { rows.push_back(r); }
};

TEST(AgentLayers, StackedClientsEachWithTheirOwnTimeoutAndRetries) {
  Scenario s = small();
  set_key_text(s, "client.layers", "2");
  set_key_text(s, "client.retries", "2");
  // The outer layer waits longer than the inner one's whole ladder
  // (3 x 1 s plus at most 0.1 + 0.2 s of backoff): it never times out.
  set_key_text(s, "client.layer_timeouts_s", "10,1");
  validate(s);
  Rows log;
  AgentStats stats;
  RunResult r = run_agent(s, {&log, &stats});
  std::map<uint64_t, int> server_attempts;
  int outer_failed = 0, outer_timeout = 0;
  for (const auto& row : log.rows) {
    if (row.layer == 2 && std::string(request_log::outcome_name(row.outcome)) != "budget_denied")
      ++server_attempts[row.request_id];
    if (row.layer == 1 && std::string(request_log::outcome_name(row.outcome)) == "failed")
      ++outer_failed;
    if (row.layer == 1 && std::string(request_log::outcome_name(row.outcome)) == "timeout")
      ++outer_timeout;
    EXPECT_LE(row.attempt, 3);
  }
  for (const auto& [id, n] : server_attempts) EXPECT_LE(n, 9) << id;
  EXPECT_GT(outer_failed, 0);
  EXPECT_EQ(outer_timeout, 0);
  EXPECT_GT(r.failed, 0);
  // Equal timeouts: the outer layer gives up while the inner one still
  // retries, so work nobody waits for reaches the server.
  set_key_text(s, "client.layer_timeouts_s", "1,1");
  Rows equal;
  run_agent(s, {&equal, nullptr});
  int timeouts = 0;
  for (const auto& row : equal.rows)
    if (row.layer == 1 && std::string(request_log::outcome_name(row.outcome)) == "timeout")
      ++timeouts;
  EXPECT_GT(timeouts, 0);
}

TEST(AgentLog, RequestsCsvHasOneRowPerAttempt) {
  Scenario s = small();
  s.server.shed_abandoned = true;
  auto dir = std::filesystem::temp_directory_path() / "retrystorm_agent_log_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "requests.csv").string();
  AgentStats stats;
  {
    RequestsCsv csv(path);
    run_agent(s, {&csv, &stats});
    csv.close();
  }
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "request_id,attempt,sent_s,done_s,outcome,layer");
  std::set<std::string> allowed = {"ok",   "late",          "timeout",  "rejected",
                                   "shed", "budget_denied", "in_flight"};
  size_t rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    std::stringstream cells(line);
    std::vector<std::string> c;
    for (std::string cell; std::getline(cells, cell, ',');) c.push_back(cell);
    if (line.back() == ',') c.push_back("");
    ASSERT_EQ(c.size(), 6u) << line;
    EXPECT_TRUE(allowed.count(c[4])) << line;
    EXPECT_EQ(c[2].find('.') + 4, c[2].size()) << "three decimals: " << line;
  }
  EXPECT_EQ(rows, stats.server_arrivals);  // one layer: one row per attempt
  std::filesystem::remove_all(dir);
}

// A job's request and attempt number live beside the pool, not in the job
// (docs/agent-engine.md, "Performance"), and the hosts of a dependency share
// them as they share the pool: each request's attempts are logged once each,
// numbered 1, 2, ... whichever host served them.
TEST(AgentLog, EveryHostLogsEachAttemptOfItsRequestOnce) {
  for (const char* hosts : {"1", "4"}) {
    Scenario s = small();
    set_key_text(s, "server.hosts", hosts);
    set_key_text(s, "client.retries", "3");
    validate(s);
    Rows log;
    AgentStats stats;
    RunResult r = run_agent(s, {&log, &stats});
    std::map<uint64_t, std::vector<int>> attempts;  // by request, as logged
    for (const AttemptRow& row : log.rows) {
      if (std::string(request_log::outcome_name(row.outcome)) == "budget_denied") continue;
      ASSERT_LT(row.request_id, static_cast<uint64_t>(r.user_requests)) << hosts;
      attempts[row.request_id].push_back(row.attempt);
    }
    size_t retried = 0;
    for (auto& [request, numbers] : attempts) {
      std::sort(numbers.begin(), numbers.end());
      for (size_t k = 0; k < numbers.size(); ++k)
        ASSERT_EQ(numbers[k], static_cast<int>(k) + 1) << hosts << " hosts, request " << request;
      retried += numbers.size() > 1;
    }
    EXPECT_EQ(log.rows.size(), stats.server_arrivals) << hosts;
    EXPECT_GT(retried, 100u) << hosts;
  }
}

// A hedging layer's attempts have a row each, and one (as the graph
// engine's): a hedge answered 503 (its "failed" row) while the next waited
// its backoff was written again as "in_flight" at the end (50 of 525
// attempts twice); of the hedges still out at the end, only the latest had
// its row. Each outer attempt makes one inner call, whose first attempt has
// one row: those count the outer attempts sent. Inner rows repeat
// (request, attempt) by design, one inner call per hedge, so only the
// hedging layer's are checked for repeats.
TEST(AgentLog, AHedgingLayersAttemptsHaveOneRowEach) {
  auto hedged = [](const std::string& failure) {
    Scenario s = scenario_from_text(
        "engine: agent\nhorizon_s: 10\nstep_s: 0.1\ndemand: {rate_per_s: 50}\n"
        "server: {capacity_per_s: 1000, slots: 10}\n"
        "client: {layers: 2, hedging: 'envoy,retry', stack_retries: '3,0', "
        "layer_timeouts_s: '0.2,1', backoff: {base_s: 0.5, jitter: none}}\n"
        "incident: {start_s: 9, duration_s: 1, capacity_factor: 0" +
            failure + "}\n",
        "hedged.yaml");
    validate(s);
    return s;
  };
  // 503s at once: the next hedge waits its backoff at the end; no answer at
  // all: two hedges of a request are still out at the end.
  for (const char* failure : {", failure: '503'", ""}) {
    SCOPED_TRACE(*failure ? "503" : "no answer");
    Rows log;
    run_agent(hedged(failure), {&log, nullptr});
    std::set<std::pair<uint64_t, int>> seen;
    size_t outer = 0, inner_calls = 0, still_out = 0;
    for (const AttemptRow& row : log.rows) {
      const std::string outcome = request_log::outcome_name(row.outcome);
      if (outcome == "budget_denied") continue;  // an attempt not sent
      if (row.layer == 2) {
        inner_calls += row.attempt == 1;
        continue;
      }
      outer += 1;
      still_out += outcome == "in_flight";
      EXPECT_TRUE(seen.insert({row.request_id, row.attempt}).second)
          << "request " << row.request_id << " attempt " << row.attempt << " " << outcome;
    }
    // With 503s every hedge is answered at once: none is out at the end.
    if (*failure)
      EXPECT_EQ(still_out, 0u);
    else
      EXPECT_GT(still_out, 0u);
    EXPECT_GT(inner_calls, 500u);  // hedges were sent
    EXPECT_EQ(outer, inner_calls);
  }
}

TEST(AgentQueue, CodelKeepsTheWaitShortUnderOverload) {
  Scenario s = testing::open_queue(150, 100, 200, 1000);
  validate(s);
  AgentStats fifo;
  run_agent(s, {nullptr, &fifo});
  s.server.discipline = QueueDiscipline::codel;
  AgentStats codel;
  RunResult r = run_agent(s, {nullptr, &codel});
  double fifo_wait = fifo.wait_sum_s / static_cast<double>(fifo.completed);
  double codel_wait = codel.wait_sum_s / static_cast<double>(codel.completed);
  EXPECT_GT(fifo_wait, 10);    // the queue grows without bound
  EXPECT_LT(codel_wait, 0.1);  // a few targets of 5 ms
  EXPECT_GT(sum(r.series.rejected), 0.2 * r.user_requests);
  EXPECT_GT(static_cast<double>(codel.completed), 0.95 * 100 * 200);  // still busy
}

TEST(AgentArrivals, BurstyKeepsTheMeanRate) {
  Scenario s;
  s.engine = Engine::agent;
  s.horizon_s = 2000;
  s.step_s = 0.5;
  s.demand.rate_per_s = 100;
  s.demand.process = DemandProcess::bursty;  // on 1 s at 300/s, off 4 s at 50/s
  s.server.capacity_per_s = 1000;
  s.incident.duration_s = 0;
  s.client.timeout_s = 1;
  validate(s);
  RunResult r = run_agent(s);
  EXPECT_NEAR(r.user_requests / 2000, 100, 3);
  const auto& first = r.series.first_attempts;
  double on = 0, off = 0;
  for (size_t t = 0; t < first.size(); ++t) (std::fmod(t * 0.5, 5.0) < 1 ? on : off) += first[t];
  EXPECT_NEAR(on / (2000 / 5.0 * 1), 300, 10);
  EXPECT_NEAR(off / (2000 / 5.0 * 4), 50, 3);
}

TEST(AgentService, LognormalMatchesPollaczekKhinchine) {
  Scenario s = testing::open_queue(50, 100, 4000, 1000);
  s.server.service = ServiceDist::lognormal;
  s.server.service_sigma = 0.5;
  validate(s);
  AgentStats st;
  run_agent(s, {nullptr, &st});
  double m = 0.01, es2 = m * m * std::exp(0.25), rho = 0.5;
  double theory = 50 * es2 / (2 * (1 - rho)) + m;
  EXPECT_NEAR(st.sojourn_sum_s / static_cast<double>(st.completed) / theory, 1, 0.02);
}

TEST(AgentService, ContentionSlowsServiceAndTheIncidentStopsIt) {
  Scenario s = small();
  s.incident.duration_s = 0;  // steady state at 60% load, with queueing
  s.demand.process = DemandProcess::poisson;
  s.server.contention = 0.05;
  AgentStats slow, fast;
  run_agent(s, {nullptr, &slow});
  s.server.contention = 0;
  run_agent(s, {nullptr, &fast});
  s = small();
  RunResult r = run_agent(s);
  EXPECT_GT(slow.sojourn_sum_s / static_cast<double>(slow.completed),
            fast.sojourn_sum_s / static_cast<double>(fast.completed));
  // Capacity factor 0 from 5 s to 10 s: nothing is served inside it.
  for (size_t t = 0; t < r.series.size(); ++t) {
    double at = r.series.t_s[t];
    if (at >= 5.05 && at < 10) {
      EXPECT_EQ(r.series.goodput[t] + r.series.served_late[t], 0) << at;
    }
  }
}

// server.shed_lag_s: the server sheds a given-up attempt that long after its
// caller gave up (docs/agent-engine.md, "Shedding late"). A slot that frees
// up meanwhile serves it for nobody; a lag longer than any wait is no
// shedding at all; 0 is the exact instant, the same bytes as before the key.
TEST(AgentShedLag, LongerLagsServeMoreAbandonedWork) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  s.engine = Engine::agent;
  s.server.shed_abandoned = true;
  s.client.budget.kind = BudgetKind::none;
  validate(s);
  std::string exact = run_json(make_report(s, {.advice = false, .tipping = false})).dump();
  s.server.shed_lag_s = 0;
  EXPECT_EQ(exact, run_json(make_report(s, {.advice = false, .tipping = false})).dump());

  double late_before = -1;
  for (double lag : {0.0, 0.0005, 0.002, 0.01}) {
    s.server.shed_lag_s = lag;
    double late = sum(run_agent(s).series.served_late);
    EXPECT_GT(late, late_before) << lag;  // started after the caller gave up
    late_before = late;
  }
  // Longer than any wait: every abandoned attempt is served, as without shedding.
  s.server.shed_lag_s = 1e5;
  RunResult never = run_agent(s);
  s.server.shed_abandoned = false;
  s.server.shed_lag_s = 0;
  RunResult off = run_agent(s);
  EXPECT_EQ(sum(never.series.shed), 0);
  EXPECT_TRUE(std::ranges::equal(never.series.served_late, off.series.served_late));
  EXPECT_TRUE(std::ranges::equal(never.series.goodput, off.series.goodput));
  EXPECT_EQ(never.failed, off.failed);
}

// server.answer_delay_s: an answer finished less than the delay before its
// caller gives up arrives too late; a delay as long as the timeout leaves no
// answer in time; a success takes the delay longer; 0 changes nothing.
TEST(AgentAnswerDelay, AnswersNeedTheirWayBackBeforeTheCallerGivesUp) {
  Scenario s = small();
  s.incident.duration_s = 0;  // steady: every answer is in time without a delay
  s.demand.process = DemandProcess::poisson;
  s.server.service = ServiceDist::exponential;
  validate(s);
  std::string exact = run_json(make_report(s, {.advice = false, .tipping = false})).dump();
  RunResult base = run_agent(s);
  s.server.answer_delay_s = 0;
  EXPECT_EQ(exact, run_json(make_report(s, {.advice = false, .tipping = false})).dump());

  s.server.answer_delay_s = 0.002;
  RunResult delayed = run_agent(s);
  EXPECT_LE(sum(delayed.series.goodput), sum(base.series.goodput));
  EXPECT_NEAR(*compute_metrics(delayed).latency_p50_s - *compute_metrics(base).latency_p50_s, 0.002,
              0.001);

  s.server.answer_delay_s = s.client.timeout_s;
  RunResult never = run_agent(s);
  EXPECT_EQ(sum(never.series.goodput), 0);
  EXPECT_EQ(never.succeeded, 0);
  EXPECT_GT(sum(never.series.served_late), 0);
}

// On the knife edge of docs/lab.md (primary-failover, a tenth of its scale,
// shedding, no budget, the gRPC export's backoff), the gRPC lab's measured
// delays (the backend gives up ~0.3 ms after C-core, an answer takes ~0.3 ms
// back) keep the backlog stuck where exact give-ups let it drain.
TEST(AgentShedLag, TheKnifeEdgeTipsWithTheDelays) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  s.engine = Engine::agent;
  s.step_s = 0.5;
  s.demand.rate_per_s = 60;
  s.server.capacity_per_s = 100;
  s.server.shed_abandoned = true;
  s.client.budget.kind = BudgetKind::none;
  s.client.backoff.jitter = Jitter::grpc;
  int recovered_exact = 0, recovered_late = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    s.seed = seed;
    s.server.shed_lag_s = s.server.answer_delay_s = 0;
    validate(s);
    recovered_exact += compute_metrics(run_agent(s)).recovered;
    s.server.shed_lag_s = s.server.answer_delay_s = 0.0003;
    recovered_late += compute_metrics(run_agent(s)).recovered;
  }
  EXPECT_EQ(recovered_exact, 6);
  EXPECT_EQ(recovered_late, 0);
}

TEST(AgentValidation, KeysAndLimits) {
  Scenario s = preset_or_throw("two-layer-stack").scenario;
  set_key_text(s, "engine", "agent");
  EXPECT_NO_THROW(validate(s));
  set_key_text(s, "client.layer_timeouts_s", "2");
  try {
    validate(s);
    FAIL() << "one timeout for two layers was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("client.layer_timeouts_s"), std::string::npos);
  }
  set_key_text(s, "client.layer_timeouts_s", "2,abc");
  EXPECT_THROW(validate(s), InputError);
  set_key_text(s, "client.layer_timeouts_s", "2,1");
  EXPECT_NO_THROW(validate(s));
  set_key_text(s, "seed", "1.5");
  EXPECT_THROW(validate(s), InputError);
  set_key_text(s, "seed", "12");
  set_key_text(s, "demand.rate_per_s", "1e8");
  EXPECT_THROW(validate(s), InputError);
  EXPECT_THROW(set_key_text(s, "server.discipline", "random"), InputError);
  EXPECT_THROW(set_key_text(s, "runs", "0"), InputError);
  // Bursty arrivals cost a draw per on or off period: bounded as requests are
  // (a cycle of 2e-12 s ran for minutes).
  set_key_text(s, "demand.rate_per_s", "80");
  set_key_text(s, "demand.process", "bursty");
  set_key_text(s, "demand.burst_on_s", "1e-12");
  set_key_text(s, "demand.burst_off_s", "1e-12");
  try {
    validate(s);
    FAIL() << "periods of 1e-12 s accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("demand.burst_on_s, demand.burst_off_s: 1e-12 s on and "
                                         "1e-12 s off over 300 s are 300000000000000 periods; at "
                                         "most 50000000"),
              std::string::npos)
        << e.what();
  }
  // An adaptive concurrency filter's floor above its ceiling is refused
  // (std::clamp of the limit had no answer).
  Scenario filtered = preset_or_throw("order-status").scenario;
  set_key_text(filtered, "engine", "agent");
  set_key_text(filtered, "server.adaptive_concurrency", "envoy");
  set_key_text(filtered, "server.min_concurrency", "50");
  set_key_text(filtered, "server.max_concurrency", "10");
  try {
    validate(filtered);
    FAIL() << "min above max accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("server.min_concurrency: 50 is above "
                                         "server.max_concurrency 10"),
              std::string::npos)
        << e.what();
  }
  set_key_text(s, "demand.burst_on_s", "0.01");
  set_key_text(s, "demand.burst_off_s", "0.04");
  EXPECT_NO_THROW(validate(s));
  // The fluid engine ignores the agent keys.
  Scenario f = preset_or_throw("primary-failover").scenario;
  Scenario g = f;
  set_key_text(g, "server.slots", "8");
  set_key_text(g, "demand.process", "poisson");
  EXPECT_EQ(run_fluid(f).failed, run_fluid(g).failed);
}

// A plain run (one retrying layer, none of the rarer features) runs on an
// engine compiled for it (docs/agent-engine.md, "Performance"): it gives the
// numbers of the general engine, on every preset that is plain with the
// agent engine, several seeds, and with a budget, deadlines, shedding,
// closed-loop clients and CoDel, which the plain engine keeps.
TEST(AgentEngine, PlainRunsGiveTheGeneralEnginesNumbers) {
  std::vector<Scenario> plain;
  for (const Preset& p : presets()) {
    Scenario s = p.scenario;
    if (!s.graph.empty() || s.engine == Engine::sessions) continue;
    s.engine = Engine::agent;
    s.horizon_s = std::min(s.horizon_s, 300.0);
    for (double seed : {1.0, 5.0}) {
      s.seed = seed;
      plain.push_back(s);
    }
  }
  Scenario s = preset_or_throw("primary-failover").scenario;
  s.engine = Engine::agent;
  for (const char* key : {"client.deadline_s=4", "server.shed_abandoned=true",
                          "server.shed_lag_s=0.3", "server.discipline=codel"}) {
    std::string text(key);
    set_key_text(s, text.substr(0, text.find('=')), text.substr(text.find('=') + 1));
    plain.push_back(s);
  }
  for (Scenario& one : plain) {
    validate(one);
    const std::string name = scenario_to_json(one).dump().substr(0, 120);
    AgentOptions general;
    general.plain_engine = false;
    EXPECT_EQ(series_json(run_agent(one).series).dump(),
              series_json(run_agent(one, general).series).dump())
        << name;
  }
}

}  // namespace
}  // namespace retrystorm
