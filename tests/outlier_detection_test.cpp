// Envoy's outlier detection (policies/outlier_detection.hpp) against the
// rules of envoyproxy/envoy source/common/upstream/outlier_detection_impl.cc
// (DetectorHostMonitorImpl::putHttpResponseCode, DetectorImpl::ejectHost,
// checkHostForUneject, onIntervalTimer) and the load balancer's panic
// (LoadBalancerBase::isHostSetInPanic in load_balancer_impl.cc), then the
// engine with a dependency of several hosts (docs/policies.md, "Outlier
// detection").
#include "policies/outlier_detection.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

OutlierSettings envoy(double max_percent = 100) {
  OutlierSettings o;
  o.consecutive_5xx = 5;  // Envoy's defaults, but for max_ejection_percent
  o.max_percent = max_percent;
  o.panic_percent = 0;
  return o;
}

void fail(OutlierDetector& d, int host, int times, double now) {
  for (int i = 0; i < times; ++i) d.heard(host, true, now);
}

std::vector<int> picks(OutlierDetector& d, int n, double now) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(d.pick(now));
  return out;
}

TEST(OutlierDetection, RoundRobinFromTheClientsOwnStart) {
  OutlierDetector d(OutlierSettings{}, 3, 2);
  EXPECT_EQ(picks(d, 5, 0), (std::vector<int>{2, 0, 1, 2, 0}));
}

TEST(OutlierDetection, FiveFiveHundredsInARowEjectAndTheHostIsSkipped) {
  OutlierDetector d(envoy(), 4, 0);
  fail(d, 1, 4, 1);
  d.heard(1, false, 1);  // a success ends the run (putHttpResponseCode)
  fail(d, 1, 4, 1);
  EXPECT_FALSE(d.ejected(1));
  fail(d, 1, 1, 1);  // the fifth in a row
  EXPECT_TRUE(d.ejected(1));
  EXPECT_EQ(picks(d, 6, 2), (std::vector<int>{0, 2, 3, 0, 2, 3}));
}

TEST(OutlierDetection, ATooManyRequestsAnswerEndsTheRun) {
  OutlierDetector d(envoy(), 4, 0);
  fail(d, 0, 4, 1);
  d.heard(0, false, 1);  // a 429 is not a 5xx
  fail(d, 0, 4, 1);
  EXPECT_FALSE(d.ejected(0));
}

// ejectHost: 100 x (ejected + 1) / hosts must stay within max_ejection_percent.
TEST(OutlierDetection, TheDefaultTenPercentEjectsNoneOfFourHosts) {
  OutlierDetector ten(envoy(10), 4, 0);
  fail(ten, 0, 5, 1);
  EXPECT_FALSE(ten.ejected(0));
  fail(ten, 0, 4, 1);  // the run started again after the refused ejection
  EXPECT_FALSE(ten.ejected(0));
  OutlierDetector quarter(envoy(25), 4, 0);
  fail(quarter, 0, 5, 1);
  fail(quarter, 1, 5, 1);
  EXPECT_TRUE(quarter.ejected(0));
  EXPECT_FALSE(quarter.ejected(1));  // 50% > 25%
  OutlierDetector tenth(envoy(10), 10, 0);
  fail(tenth, 3, 5, 1);
  EXPECT_TRUE(tenth.ejected(3));
}

// checkHostForUneject at each interval tick: out for min(base x multiplier,
// max); the multiplier grows at each ejection and shrinks by one at each
// tick once the host has been back for an interval (onIntervalTimer).
TEST(OutlierDetection, EjectionsGrowLongerAndTheMultiplierDecays) {
  OutlierDetector d(envoy(), 4, 0);
  fail(d, 2, 5, 5);  // ejected at 5 s for 30 s
  d.pick(30);
  EXPECT_TRUE(d.ejected(2));
  d.pick(40);  // the tick at 40 s: 35 s out >= 30 s
  EXPECT_FALSE(d.ejected(2));
  EXPECT_DOUBLE_EQ(d.ejected_s(2, 40), 35);
  fail(d, 2, 5, 41);  // multiplier 2: 60 s
  d.pick(100);
  EXPECT_TRUE(d.ejected(2));
  d.pick(110);  // tick at 110: 69 s out
  EXPECT_FALSE(d.ejected(2));
  EXPECT_EQ(d.ejections(2), 2u);
  // Back at 110; the ticks at 120 and 130 shrink the multiplier to 0, so
  // the next ejection lasts one base again.
  d.pick(131);
  fail(d, 2, 5, 131);
  d.pick(160);
  EXPECT_TRUE(d.ejected(2));
  d.pick(170);
  EXPECT_FALSE(d.ejected(2));
}

TEST(OutlierDetection, TheLongestEjectionCapsTheMultiplier) {
  OutlierSettings o = envoy();
  o.max_ejection_s = 45;
  OutlierDetector d(o, 4, 0);
  double t = 0;
  for (int i = 0; i < 4; ++i) {
    fail(d, 0, 5, t);
    t += 50;  // 45 s at most, back at the next tick
    d.pick(t);
    EXPECT_FALSE(d.ejected(0)) << i;
    t += 1;
  }
}

TEST(OutlierDetection, AnEjectedHostsRunCountsOnAndStartsAgainWhenBack) {
  OutlierDetector d(envoy(), 4, 0);
  fail(d, 1, 5, 1);
  fail(d, 1, 7, 2);  // in-flight answers from the ejected host
  d.pick(40);
  EXPECT_FALSE(d.ejected(1));
  fail(d, 1, 4, 41);
  EXPECT_FALSE(d.ejected(1));
  fail(d, 1, 1, 41);
  EXPECT_TRUE(d.ejected(1));
}

// isHostSetInPanic: below healthy_panic_threshold percent the balancer uses
// every host, ejected or not.
TEST(OutlierDetection, BelowThePanicThresholdEveryHostTakesTraffic) {
  OutlierSettings o = envoy();
  o.panic_percent = 50;
  OutlierDetector d(o, 4, 0);
  fail(d, 0, 5, 1);
  fail(d, 1, 5, 1);  // 50% left: not below 50
  EXPECT_EQ(picks(d, 4, 1), (std::vector<int>{2, 3, 2, 3}));
  fail(d, 2, 5, 1);  // 25% left: panic
  EXPECT_EQ(picks(d, 4, 1), (std::vector<int>{0, 1, 2, 3}));
}

// ---- the engine -------------------------------------------------------------

Scenario hosts_scenario(std::map<std::string, std::string> more = {}) {
  std::map<std::string, std::string> set = {
      {"engine", "agent"},         {"server.hosts", "5"},        {"incident.hosts", "1"},
      {"incident.failure", "503"}, {"client.retries", "0"},      {"incident.capacity_factor", "0"},
      {"incident.start_s", "20"},  {"incident.duration_s", "60"}};
  for (auto& [key, value] : more) set[key] = value;
  return testing::preset("primary-failover", set);
}

double failed_share(const Scenario& s) {
  RunResult r = run_engine(s);
  return r.failed / r.user_requests;
}

TEST(OutlierDetection, HostsShareTheLoadEvenly) {
  Scenario s = testing::preset("primary-failover", {{"engine", "agent"}, {"server.hosts", "4"}});
  RunResult r = run_engine(s);
  ASSERT_EQ(r.hosts.size(), 4u);
  for (const HostTotals& h : r.hosts)
    EXPECT_NEAR(h.attempts, r.hosts[0].attempts, 0.01 * r.hosts[0].attempts);
  EXPECT_THROW(run_engine(testing::preset("primary-failover", {{"server.hosts", "4"}})),
               InputError);  // the fluid engine
}

// A broken host answers 503 at once. Without retries a fifth of the
// requests fail while it is broken; each client ejects it after five 503s.
TEST(OutlierDetection, EjectingTheBrokenHostRescuesItsShareOfRequests) {
  double without = failed_share(hosts_scenario());
  EXPECT_GT(without, 0.05);
  double with = failed_share(
      hosts_scenario({{"client.outlier_5xx", "5"}, {"client.outlier_max_percent", "20"}}));
  EXPECT_LT(with, without / 5);
  // Envoy's default 10% ejects none of five hosts: nothing changes.
  EXPECT_DOUBLE_EQ(failed_share(hosts_scenario({{"client.outlier_5xx", "5"}})), without);
}

// When every host is overloaded, a bounded queue answers 503 at once on each
// of them; detection that may eject any number of hosts, without a panic
// threshold (Istio's minHealthPercent 0), ejects hosts that are only busy
// and sends their share to the others.
TEST(OutlierDetection, HurtsWhenTheWholeDependencyIsOverloaded) {
  std::map<std::string, std::string> busy = {
      {"engine", "agent"}, {"server.hosts", "5"}, {"server.queue_limit", "100"}};
  double without = failed_share(testing::preset("order-status", busy));
  EXPECT_LT(without, 0.03);
  busy["client.outlier_5xx"] = "5";
  busy["client.outlier_max_percent"] = "100";
  busy["client.outlier_panic_percent"] = "0";
  EXPECT_GT(failed_share(testing::preset("order-status", busy)), 2 * without + 0.02);
  // Envoy's panic threshold (50%) keeps three of the five in the rotation.
  busy["client.outlier_panic_percent"] = "50";
  EXPECT_LT(failed_share(testing::preset("order-status", busy)), without + 0.005);
}

// Every host ejected and no panic: "no healthy upstream", 503 at once and
// not retried, which sheds a stuck queue like a breaker would.
TEST(OutlierDetection, EveryHostEjectedFailsAtOnce) {
  std::map<std::string, std::string> stuck = {{"engine", "agent"}, {"server.hosts", "5"}};
  RunResult before = run_engine(testing::preset("order-status", stuck));
  stuck["client.outlier_5xx"] = "5";
  stuck["client.outlier_max_percent"] = "100";
  stuck["client.outlier_panic_percent"] = "0";
  RunResult after = run_engine(testing::preset("order-status", stuck));
  double refused = 0;
  for (double x : after.series.refused_locally) refused += x;
  EXPECT_GT(refused, 0);
  EXPECT_LT(after.failed / after.user_requests, before.failed / before.user_requests / 2);
}

TEST(OutlierDetection, OneHostAndNoDetectionChangeNothing) {
  Scenario base = testing::preset("primary-failover", {{"engine", "agent"}});
  Scenario same = testing::preset(
      "primary-failover", {{"engine", "agent"}, {"server.hosts", "1"}, {"incident.hosts", "1"}});
  RunResult a = run_engine(base), b = run_engine(same);
  EXPECT_EQ(a.series.goodput[0], b.series.goodput[0]);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.succeeded, b.succeeded);
  EXPECT_TRUE(b.hosts.empty());
}

TEST(OutlierDetection, RefusesWhatItCannotRun) {
  EXPECT_THROW(run_engine(hosts_scenario({{"incident.hosts", "6"}})), InputError);
  EXPECT_THROW(run_engine(hosts_scenario({{"server.slots", "7"}})), InputError);
  EXPECT_THROW(run_engine(hosts_scenario({{"client.max_connections", "4"}})), InputError);
  EXPECT_THROW(run_engine(hosts_scenario(
                   {{"client.outlier_5xx", "5"}, {"client.outlier_max_ejection_s", "10"}})),
               InputError);
}

}  // namespace
}  // namespace retrystorm
