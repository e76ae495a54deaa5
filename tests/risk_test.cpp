// `risk` (docs/risk.md): the stuck rule read from a run, the intervals, the
// estimators against the exact chain they must agree with, and the agent
// engine's estimates at loads where the answer is known.
#include "analysis/risk.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>

#include "analysis/markov/chain.hpp"
#include "analysis/markov/retry_chain.hpp"
#include "analysis/markov/splitting.hpp"
#include "analysis/step_down.hpp"
#include "model/keys.hpp"
#include "policies/backoff.hpp"
#include "preset_scenario.hpp"
#include "quick_risk.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

// A run of 1 s steps whose backlog and goodput share follow the lists.
RunResult synthetic(const std::vector<double>& backlog, const std::vector<double>& share) {
  RunResult r;
  r.scenario.step_s = 1;
  r.series.resize(backlog.size());
  for (size_t i = 0; i < backlog.size(); ++i) {
    r.series.t_s[i] = static_cast<double>(i);
    r.series.backlog[i] = backlog[i];
    r.series.first_attempts[i] = 10;
    r.series.goodput[i] = 10 * share[i];
  }
  return r;
}

TEST(Risk, TheStuckRuleHasHysteresis) {
  StuckRule rule{.backlog_above = 30, .goodput_below = 0.9, .window_steps = 1};
  // deep and starved at 3 s; deep but served (neither) at 5 s; healthy at 6 s.
  RunResult run = synthetic({0, 10, 40, 50, 50, 45, 5, 5}, {1, 1, 0.2, 0.1, 0.5, 0.95, 1, 1});
  Passage p = read_passage(run, rule);
  ASSERT_TRUE(p.enter_s);
  EXPECT_EQ(*p.enter_s, 3);
  ASSERT_TRUE(p.left_after_enter_s);
  EXPECT_EQ(*p.left_after_enter_s, 7 - 3);
  EXPECT_EQ(p.end_s, 8);
  // The leaving clock from 4 s: stuck then, healthy at the end of step 6.
  p = read_passage(run, rule, 4);
  EXPECT_TRUE(p.stuck_at_from);
  ASSERT_TRUE(p.leave_s);
  EXPECT_EQ(*p.leave_s, 3);
}

TEST(Risk, GoodputIsJudgedOverOneTimeout) {
  Scenario s;
  s.client.timeout_s = 3, s.server.capacity_per_s = 10, s.step_s = 1;
  const StuckRule rule = stuck_rule(s);
  EXPECT_EQ(rule.backlog_above, 30);
  EXPECT_EQ(rule.window_steps, 3);
  EXPECT_EQ(rule.goodput_below, s.recovery.goodput_fraction);
  // One starved step among served ones does not make a deep queue stuck.
  RunResult run = synthetic({40, 40, 40, 40}, {1, 1, 0.8, 1});
  EXPECT_FALSE(read_passage(run, rule).enter_s);
}

// The window moves with the steps, whole counts or fractions alike: the
// same passages as summing each window afresh (which cost steps x window:
// a 9,990 s timeout at 0.01 s steps ran for minutes past its price).
TEST(Risk, TheWindowMovesWithTheSteps) {
  const size_t n = 2000;
  std::vector<double> backlog(n), whole(n), fraction(n);
  for (size_t i = 0; i < n; ++i) {
    backlog[i] = (i / 300) % 2 ? 50 : 5;
    whole[i] = (i / 300) % 2 ? 0.3 : 1;
    fraction[i] = whole[i] * (1 - 1e-3 * double(i % 7));
  }
  const StuckRule rule{.backlog_above = 30, .goodput_below = 0.9, .window_steps = 40};
  for (const auto* shares : {&whole, &fraction}) {
    const RunResult run = synthetic(backlog, *shares);
    // Summed afresh: each step's window, as a reference.
    std::vector<int> verdicts;
    bool stuck = false;
    std::optional<double> enter;
    for (size_t i = 0; i < n; ++i) {
      double asked = 0, served = 0;
      for (size_t j = i + 1 >= 40 ? i + 1 - 40 : 0; j <= i; ++j)
        asked += run.series.first_attempts[j], served += run.series.goodput[j];
      const bool deep = backlog[i] > 30, starved = served / asked < 0.9;
      if (deep && starved && !stuck) stuck = true, enter = enter ? enter : double(i + 1);
      if (!deep && !starved) stuck = false;
    }
    const Passage p = read_passage(run, rule);
    ASSERT_TRUE(p.enter_s && enter);
    EXPECT_EQ(*p.enter_s, *enter);
  }
  Scenario wide;
  wide.horizon_s = 2000, wide.step_s = 0.01, wide.client.timeout_s = 1000;
  RunResult long_run;
  long_run.scenario = wide;
  long_run.series.resize(200000);
  for (size_t i = 0; i < 200000; ++i) long_run.series.t_s[i] = 0.01 * double(i);
  EXPECT_FALSE(read_passage(long_run, stuck_rule(wide)).enter_s);  // ms, not minutes
}

// The window is counted in double and cut to the run: a timeout of 3e9
// steps passed an int and judged goodput over one step ("over the last
// 0.001 s"). The cut changes no verdict: a window as long as the run sums
// every step so far, as any longer one does.
TEST(Risk, AWindowLongerThanTheRunIsTheRun) {
  Scenario s;
  s.horizon_s = 10, s.step_s = 0.001;
  s.client.timeout_s = 3e6, s.server.capacity_per_s = 1e-6;
  const StuckRule rule = stuck_rule(s);
  EXPECT_EQ(rule.window_steps, 10000);
  EXPECT_NE(describe(rule, s).find("served in time over the last 10 s;"), std::string::npos)
      << describe(rule, s);
  s.client.timeout_s = 3, s.server.capacity_per_s = 10;
  EXPECT_EQ(stuck_rule(s).window_steps, 3000) << "a timeout within the run, as before";
  const RunResult run = synthetic({0, 40, 40, 5, 40, 40, 40, 5}, {1, 1, 0.5, 1, 0.2, 0.1, 0, 1});
  StuckRule whole{.backlog_above = 30, .goodput_below = 0.9, .window_steps = 8};
  StuckRule longer = whole;
  longer.window_steps = 1000;
  const Passage a = read_passage(run, whole), b = read_passage(run, longer);
  ASSERT_TRUE(a.enter_s && b.enter_s);
  EXPECT_EQ(*a.enter_s, *b.enter_s);
  EXPECT_EQ(a.left_after_enter_s, b.left_after_enter_s);
}

TEST(Risk, WilsonIntervals) {
  // Wilson's 95% interval: 0 of 10 is 0 to 27.75%; 5 of 10 is 23.66 to 76.34%.
  Share none = share_of(0, 10), half = share_of(5, 10);
  EXPECT_NEAR(none.high, 0.27753, 1e-5);
  EXPECT_EQ(none.low, 0);
  EXPECT_NEAR(half.low, 0.23659, 1e-5);
  EXPECT_NEAR(half.high, 0.76341, 1e-5);
}

// None of n (or all of them) puts Wilson's interval at 0 (or 1) exactly: the
// formula's rounding left "0 of 100 (3.5e-18 to 3.7%)", and 10 of 10 ended
// just below 1.
TEST(Risk, WilsonIntervalsEndAtZeroAndOneExactly) {
  for (int n : {3, 6, 10, 100}) {
    EXPECT_EQ(share_of(0, n).low, 0.0) << n;
    EXPECT_EQ(share_of(n, n).high, 1.0) << n;
    EXPECT_GT(share_of(0, n).high, 0.0) << n;
    EXPECT_LT(share_of(n, n).low, 1.0) << n;
  }
  EXPECT_NEAR(share_of(0, 100).high, 0.0369935, 1e-6);
}

TEST(Risk, ExponentialMeanIntervals) {
  // 10 events over 100 s: mean 10 s, 95% from 200 / chi2(22, .975) to 200 / chi2(20, .025).
  WaitingTime w = waiting_time(10, 100);
  ASSERT_TRUE(w.mean_s && w.high_s);
  EXPECT_DOUBLE_EQ(*w.mean_s, 10);
  EXPECT_NEAR(w.low_s, 200 / 36.78071, 1e-4);
  EXPECT_NEAR(*w.high_s, 200 / 9.590777, 1e-4);
  // No event: only a lower bound, 200 / chi2(2, .975).
  WaitingTime never = waiting_time(0, 100);
  EXPECT_FALSE(never.mean_s);
  EXPECT_NEAR(never.low_s, 200 / 7.377759, 1e-4);
  EXPECT_EQ(never.within(3600).low, 0);
  EXPECT_NEAR(w.within(10).p, 1 - std::exp(-1.0), 1e-12);
}

// The estimators on walks of the project's own chain agree with its exact
// answers within their intervals: the chance of tipping within a horizon
// and the mean time to tip, from empty.
TEST(Risk, EstimatorsAgreeWithTheExactChain) {
  markov::RetryChainParams p;
  p.arrival_per_s = 7, p.service_per_s = 10, p.queue = 14, p.orbit = 14;
  p.timeout_s = 0.8, p.retries = 3, p.retry_delay_s = 0.3;
  const markov::RetryChain rc = markov::build_retry_chain(p);
  std::vector<bool> bad(rc.chain.states());
  for (int s = 0; s < rc.chain.states(); ++s) bad[s] = rc.backlog[s] >= markov::bad_threshold(p);
  const double mean = rc.chain.hitting_times(bad)[rc.empty_state];
  const double horizon = mean;  // about 60% tip
  const double within = rc.chain.reach_within(bad, horizon)[rc.empty_state];
  const markov::Walker walker(rc.chain);
  Rng rng(7);
  int tipped = 0;
  const int runs = 2000;
  double exposure_long = 0;
  int tipped_long = 0;
  for (int i = 0; i < runs; ++i) {
    if (walker.first_passage(rc.empty_state, bad, horizon, rng)) ++tipped;
    // Watched long enough that few are cut off: the mean's estimate.
    std::optional<double> t = walker.first_passage(rc.empty_state, bad, 20 * mean, rng);
    exposure_long += t.value_or(20 * mean);
    tipped_long += t.has_value();
  }
  const Share share = share_of(tipped, runs);
  EXPECT_LE(share.low, within);
  EXPECT_GE(share.high, within);
  const WaitingTime w = waiting_time(tipped_long, exposure_long);
  EXPECT_LE(w.low_s, mean);
  EXPECT_GE(*w.high_s, mean);
  EXPECT_GT(mean, 1);  // the case is not trivial
}

// Multilevel splitting sees a chance of about 1e-5 that plain Monte Carlo
// of the same work does not, and holds the exact value in its interval;
// where both see it, they agree.
markov::RetryChain small_chain(double lambda) {
  markov::RetryChainParams p;
  p.arrival_per_s = lambda, p.service_per_s = 10, p.queue = 20, p.orbit = 15;
  p.timeout_s = 1, p.retries = 3, p.retry_delay_s = 0.3;
  return markov::build_retry_chain(p);
}

double exact_reach(const markov::RetryChain& rc, int level, double horizon_s) {
  std::vector<bool> bad(rc.chain.states());
  for (int s = 0; s < rc.chain.states(); ++s) bad[s] = rc.backlog[s] >= level;
  return rc.chain.reach_within(bad, horizon_s)[rc.empty_state];
}

TEST(Risk, SplittingFindsARareTipWithinItsInterval) {
  const markov::RetryChain rc = small_chain(2);
  const double exact = exact_reach(rc, 20, 60);
  EXPECT_GT(exact, 5e-6);
  EXPECT_LT(exact, 5e-5);
  const markov::Walker walker(rc.chain);
  const std::vector<int> levels = {4, 6, 8, 10, 12, 14, 16, 18, 20};
  const markov::RareEstimate split =
      markov::split_reach(walker, rc.empty_state, rc.backlog, levels, 60, 300, 10, 1);
  EXPECT_LE(split.low, exact);
  EXPECT_GE(split.high, exact);
  EXPECT_LT(split.high / split.low, 2.0);  // a useful interval
  // Plain Monte Carlo of as many walks as splitting made: no tip seen.
  const markov::RareEstimate plain =
      markov::plain_reach(walker, rc.empty_state, rc.backlog, 20, 60, 3000, 1);
  EXPECT_EQ(plain.p, 0);
  // The same seed, the same estimate.
  const markov::RareEstimate again =
      markov::split_reach(walker, rc.empty_state, rc.backlog, levels, 60, 300, 10, 1);
  EXPECT_EQ(again.p, split.p);
}

TEST(Risk, SplittingAndPlainMonteCarloAgreeWhereBothWork) {
  const markov::RetryChain rc = small_chain(5);
  const double exact = exact_reach(rc, 18, 20);  // about 9%
  const markov::Walker walker(rc.chain);
  const markov::RareEstimate split = markov::split_reach(
      walker, rc.empty_state, rc.backlog, {4, 6, 8, 10, 12, 14, 16, 18}, 20, 300, 10, 3);
  const markov::RareEstimate plain =
      markov::plain_reach(walker, rc.empty_state, rc.backlog, 18, 20, 20000, 3);
  EXPECT_LE(split.low, exact);
  EXPECT_GE(split.high, exact);
  EXPECT_LE(plain.low, exact);
  EXPECT_GE(plain.high, exact);
}

Scenario metafor_like(std::map<std::string, std::string> sets = {}) {
  std::map<std::string, std::string> keys = testing::random_server_keys();
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

TEST(Risk, HalfLoadNeverTipsAndFullLoadUsuallyDoes) {
  const RiskResult r = assess_risk(metafor_like(), testing::quick_risk({0.5, 1.0}, 20));
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_EQ(r.levels[0].enter_within_horizon.k, 0);
  EXPECT_FALSE(r.levels[0].enter.mean_s);
  EXPECT_GT(r.levels[0].enter.low_s, 1200);  // 20 runs of 20 min watched without a tip
  EXPECT_GE(r.levels[1].enter_within_horizon.k, 15);
  ASSERT_TRUE(r.levels[1].tipped_seed);
  // Once stuck at 95% load, it stays: few leave within the horizon.
  EXPECT_LE(r.levels[1].leave_within_horizon.p, 0.25);
}

// A service at half load (5 requests/s against 10/s, 4 retries at once,
// 100 places, a 3 s timeout) after a 10 s spike to 20/s. On the agent
// engine the spike leaves every run stuck and none comes back within
// 15 minutes: each request that finds the queue full or times out sends
// its next attempt at once, so the 5 requests/s keep up to 25 attempts/s
// coming and every attempt that gets in waits 10 s behind orphans. A chain
// that caps the requests waiting to retry (metafor's, at 20) drains in
// 6.8 minutes on average, because the cap throws retries away.
TEST(Risk, ASpikeLeavesItStuckWhereACappedChainDrains) {
  const Scenario s = metafor_like({{"demand.rate_per_s", "5"},
                                   {"client.backoff.base_s", "0"},
                                   {"server.queue_limit", "100"},
                                   {"incident.start_s", "60"},
                                   {"incident.duration_s", "10"},
                                   {"incident.capacity_factor", "1"},
                                   {"incident.demand_factor", "4"},
                                   {"horizon_s", "900"}});
  const RiskResult r = assess_risk(s, testing::quick_risk({1.0}, 20));
  const RiskLevel& l = r.levels[0];
  EXPECT_EQ(l.enter_within_horizon.k, 0);  // never by chance at half load
  EXPECT_EQ(l.pushed.k, 20);               // the spike does it every time
  EXPECT_EQ(l.leave_within_horizon.k, 0);
  EXPECT_FALSE(l.leave.mean_s);
  EXPECT_GT(l.leave.low_s, 3600);  // at least an hour, on this evidence

  markov::RetryChainParams p;
  p.rules = markov::Rules::metafor;
  p.arrival_per_s = 5, p.queue = 100, p.orbit = 20;
  const markov::RetryChain rc = markov::build_retry_chain(p);
  std::vector<bool> empty(rc.chain.states());
  for (int i = 0; i < rc.chain.states(); ++i) empty[i] = rc.backlog[i] == 0 && rc.retrying[i] == 0;
  // From a full queue and a full orbit to empty: 409.6025 s, as metafor's
  // own SingleServerCTMC.time_to_drain computes it (numpy, same chain).
  const double drain = rc.chain.hitting_times(empty)[rc.chain.states() - 1];
  EXPECT_NEAR(drain, 409.6025, 1e-3);
}

// The same spike before a queue of 50: the orphaned attempts left behind it
// are fewer, and the service comes back on its own, after a while that varies
// a lot from run to run. The answer is a finite mean with its interval, not
// "not recovered by the horizon" (docs/risk.md, "Recovering on its own").
TEST(Risk, ASpikeBeforeASmallerQueueGetsAFiniteTimeToLeave) {
  const Scenario s = metafor_like({{"demand.rate_per_s", "5"},
                                   {"client.backoff.base_s", "0"},
                                   {"server.queue_limit", "50"},
                                   {"incident.start_s", "60"},
                                   {"incident.duration_s", "10"},
                                   {"incident.capacity_factor", "1"},
                                   {"incident.demand_factor", "4"},
                                   {"horizon_s", "900"}});
  const RiskLevel l = assess_risk(s, testing::quick_risk({1.0}, 20)).levels[0];
  EXPECT_EQ(l.pushed.k, 20);
  EXPECT_GT(l.leave_within_horizon.k, 3);
  EXPECT_LT(l.leave_within_horizon.k, 20);
  ASSERT_TRUE(l.leave.mean_s);
  ASSERT_TRUE(l.leave.high_s);
  EXPECT_GT(*l.leave.mean_s, 120);
  EXPECT_LT(*l.leave.mean_s, 7200);
  EXPECT_LT(l.leave.low_s, *l.leave.mean_s);
  EXPECT_GT(*l.leave.high_s, *l.leave.mean_s);
}

// With timeouts and retries the chain and the agent engine are two models
// (docs/risk.md, "The exact chain"): the chain's timeouts are exponential, so
// some attempts give up long before the timeout and its queue crosses the
// line sooner; its stuck set is the backlog alone and leaving means reaching
// empty, where the agent engine's rule also asks for lost goodput and comes
// back at "healthy". At full load both call the service stuck: the chain
// most of the time, the agent engine in every run within ten minutes.
TEST(Risk, WithTimeoutsTheChainAndTheAgentEngineBothCallItStuck) {
  RiskOptions o = testing::quick_risk({1.0}, 40);
  o.exact = true;
  const RiskLevel l = assess_risk(metafor_like({{"server.queue_limit", "25"},
                                                {"client.timeout_s", "2"},
                                                {"client.retries", "2"},
                                                {"horizon_s", "600"}}),
                                  o)
                          .levels[0];
  ASSERT_TRUE(l.exact) << l.exact_note;
  EXPECT_GT(l.exact->bad_share, 0.6);
  EXPECT_GE(l.enter_within_horizon.k, 38);
  ASSERT_TRUE(l.enter.mean_s);
  EXPECT_LT(l.exact->enter_bad_s, *l.enter.mean_s) << "the chain's early give-ups tip it sooner";
}

// The rule counts in the timeout the engine and the chain give an attempt,
// client.layer_timeouts_s over client.timeout_s: a layer timeout of 2 s
// beside a client.timeout_s of 3 s kept a rule of 30 attempts, 3 s of work.
TEST(Risk, TheStuckRuleCountsInTheLayersOwnTimeout) {
  auto server = [](const char* key) {
    return metafor_like({{key, "2"}, {"server.queue_limit", "30"}, {"horizon_s", "300"}});
  };
  const Scenario plain = server("client.timeout_s"), layered = server("client.layer_timeouts_s");
  ASSERT_EQ(layered.client.timeout_s, 3);
  const StuckRule a = stuck_rule(plain), b = stuck_rule(layered);
  EXPECT_EQ(a.backlog_above, 20);
  EXPECT_EQ(b.backlog_above, a.backlog_above);
  EXPECT_EQ(b.window_steps, a.window_steps);
  EXPECT_EQ(describe(b, layered), describe(a, plain));
  std::string why;
  const auto pa = chain_params(plain, 1.0, why), pb = chain_params(layered, 1.0, why);
  ASSERT_TRUE(pa && pb) << why;
  EXPECT_EQ(pa->bad_from, 21);
  EXPECT_EQ(pb->bad_from, pa->bad_from);
  // The step-down reads the same rule and holds each load 40 of the same timeouts.
  const Scenario stairs_a = step_down_scenario(plain, {}),
                 stairs_b = step_down_scenario(layered, {});
  EXPECT_EQ(stuck_rule(stairs_b).backlog_above, 20);
  EXPECT_EQ(stairs_b.horizon_s, stairs_a.horizon_s);
}

// A rule deeper than the server's places is never met: timeout x capacity
// of 10^10 overflowed an int and made every state of the chain stuck.
TEST(Risk, ARuleDeeperThanTheQueueIsNeverMetByTheChain) {
  const Scenario s = metafor_like({{"demand.rate_per_s", "8000"},
                                   {"server.capacity_per_s", "10000"},
                                   {"server.queue_limit", "9"},
                                   {"client.timeout_s", "1000000"},
                                   {"client.retries", "2"},
                                   {"horizon_s", "10"}});
  std::string why;
  const auto p = chain_params(s, 1.0, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->bad_from, p->queue + 1);
  const markov::RetryChainFigures f = markov::solve_retry_chain(*p);
  EXPECT_NE(f.bad_from, 1);
  EXPECT_EQ(f.bad_share, 0);
  EXPECT_TRUE(std::isnan(f.leave_bad_s));
}

TEST(Risk, TheHysteresisLoopIsReadAcrossTheLoads) {
  RiskResult r;
  auto level = [](double load, int tipped, int stuck, int left) {
    RiskLevel l;
    l.load = load;
    l.enter_within_horizon = share_of(tipped, 10);
    l.pushed = share_of(stuck, 10);
    l.leave_within_horizon = share_of(left, stuck);
    return l;
  };
  r.levels = {level(0.5, 0, 10, 9), level(0.7, 2, 10, 5), level(0.9, 6, 10, 1),
              level(1, 10, 10, 0)};
  Hysteresis h = hysteresis_of(r);
  ASSERT_TRUE(h.tipping_load && h.recovery_load);
  EXPECT_EQ(*h.tipping_load, 0.9);
  EXPECT_EQ(*h.recovery_load, 0.7);
  r.levels = {level(1, 0, 0, 0)};
  h = hysteresis_of(r);
  EXPECT_FALSE(h.tipping_load || h.recovery_load);
}

TEST(Risk, TheSameSeedGivesTheSameAnswerOnAnyThreads) {
  testing::expect_same_risk_on_any_threads(metafor_like({{"horizon_s", "300"}}), 1.0);
}

TEST(Risk, RefusesWhatItCannotEstimate) {
  EXPECT_THROW(assess_risk(testing::preset("order-status"), testing::quick_risk({1.0}, 2)),
               InputError);
  EXPECT_THROW(assess_risk(metafor_like(), testing::quick_risk({0.0}, 2)), InputError);
  // A subnormal demand (load 1e-310) is refused by name; stod's out_of_range
  // was an internal error (HTTP 500).
  EXPECT_THROW(assess_risk(metafor_like(), testing::quick_risk({1e-310}, 2)), InputError);
  EXPECT_THROW(
      assess_risk(metafor_like({{"demand.rate_per_s", "1e-310"}}), testing::quick_risk({1.0}, 2)),
      InputError);
  EXPECT_THROW(assess_risk(metafor_like(), testing::quick_risk({1.0}, 200000)), InputError);
  EXPECT_THROW(assess_risk(metafor_like({{"demand.clients", "10"}}), testing::quick_risk({1.0}, 2)),
               InputError);
  EXPECT_THROW(assess_risk(metafor_like({{"client.layers", "2"}}), testing::quick_risk({1.0}, 2)),
               InputError);
  // The session model by name: on the agent engine its keys read as nothing
  // random, and the refusal said so.
  try {
    assess_risk(testing::preset("scheduler-normal-day"), testing::quick_risk({1.0}, 2));
    ADD_FAILURE() << "the session model was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the session model has"), std::string::npos) << e.what();
  }
}

// What each option can measure, refused before any run when it cannot.
TEST(Risk, RefusesWhatItCouldNotMeasure) {
  auto message = [](const Scenario& s, RiskOptions o) {
    try {
      assess_risk(s, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // An incident that does not end before the horizon leaves no time to time
  // the leaving in (it counted every run stuck, with a negative exposure).
  RiskOptions o = testing::quick_risk({1.0}, 2);
  o.horizon_s = 120;
  const Scenario long_push = metafor_like({{"incident.start_s", "60"},
                                           {"incident.duration_s", "100"},
                                           {"incident.capacity_factor", "0.2"}});
  EXPECT_NE(message(long_push, o).find("ends at 160 s"), std::string::npos);
  o.horizon_s = 160;
  EXPECT_NE(message(long_push, o).find("ends at 160 s"), std::string::npos) << "at the horizon";
  // Seeds past 2^53 - 1 round: two replications would share one.
  Scenario late_seed = metafor_like({{"horizon_s", "60"}});
  late_seed.seed = kMaxSeed - 3;
  EXPECT_NE(message(late_seed, testing::quick_risk({1.0}, 6)).find("at most 9007199254740986"),
            std::string::npos);
  // A run's steps within the caller's limit (the server's is lower).
  RiskOptions tight = testing::quick_risk({1.0}, 2);
  tight.max_steps = 100;
  EXPECT_NE(message(metafor_like({{"horizon_s", "300"}}), tight).find("300 steps"),
            std::string::npos);
}

// A map's knob may not be the options' own: runs per cell are --runs, and
// --horizon sets every cell's horizon.
TEST(Risk, AMapRefusesAKnobTheOptionsSet) {
  RiskOptions o = testing::quick_risk({1.0}, 2);
  EXPECT_THROW(risk_map_values(SweepAxis("runs", 0, 0, 1, {2, 3}), o), InputError);
  EXPECT_NO_THROW(risk_map_values(SweepAxis("horizon_s", 0, 0, 1, {60, 120}), o));
  o.horizon_s = 60;
  EXPECT_THROW(risk_map_values(SweepAxis("horizon_s", 0, 0, 1, {60, 120}), o), InputError);
}

// The chain's retry delay is the middle of the first backoff's window, cap
// and jitter included (it took base x 0.5 for full jitter whatever the cap).
TEST(Risk, TheChainsRetryDelayIsTheFirstBackoffWindowsMiddle) {
  std::string why;
  Scenario s = metafor_like({{"server.queue_limit", "30"},
                             {"client.backoff.base_s", "2"},
                             {"client.backoff.cap_s", "0.5"},
                             {"client.backoff.jitter", "full"}});
  auto p = chain_params(s, 1.0, why);
  ASSERT_TRUE(p) << why;
  EXPECT_DOUBLE_EQ(p->retry_delay_s, 0.25);
  s.client.backoff = {.base_s = 0.2, .multiplier = 3, .cap_s = 10, .jitter = Jitter::decorrelated};
  p = chain_params(s, 1.0, why);
  const DelayRange first = backoff_delay(s.client.backoff, 1);
  EXPECT_DOUBLE_EQ(p->retry_delay_s, (first.low_s + first.high_s) / 2);
}

TEST(Risk, TheExactChainIsPrintedBesideWhenTheScenarioIsOne) {
  RiskOptions o = testing::quick_risk({0.8}, 4);
  o.exact = true;
  const RiskResult r = assess_risk(
      metafor_like({{"server.queue_limit", "30"}, {"horizon_s", "60"}, {"incident.start_s", "10"}}),
      o);
  ASSERT_TRUE(r.levels[0].exact) << r.levels[0].exact_note;
  EXPECT_EQ(r.levels[0].exact->bad_from, 31);
  const RiskResult none = assess_risk(
      metafor_like(
          {{"server.service", "deterministic"}, {"horizon_s", "60"}, {"incident.start_s", "10"}}),
      o);
  EXPECT_FALSE(none.levels[0].exact);
  EXPECT_EQ(none.levels[0].exact_note, "service is not exponential");
}

}  // namespace
}  // namespace retrystorm
