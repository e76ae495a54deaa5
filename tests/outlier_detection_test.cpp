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

#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"
#include "configs_helpers.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "systems/export.hpp"
#include "systems/lint.hpp"

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
  EXPECT_NEAR(without, 0.10, 0.0005);  // docs/policies.md: 10% and 1.4%
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
  EXPECT_NEAR(without, 0.019, 0.0005);  // docs/policies.md, "Outlier detection"
  EXPECT_NEAR(
      failed_share(testing::preset("order-status", {{"engine", "agent"},
                                                    {"server.hosts", "5"},
                                                    {"server.queue_limit", "100"},
                                                    {"client.outlier_5xx", "5"},
                                                    {"client.outlier_max_percent", "100"},
                                                    {"client.outlier_panic_percent", "0"}})),
      0.073, 0.0005);
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
  EXPECT_NEAR(before.failed / before.user_requests, 0.69, 0.005);  // docs/policies.md
  EXPECT_NEAR(after.failed / after.user_requests, 0.18, 0.005);
}

// The advice tries detection where the incident hits some hosts, and says
// what it buys in this scenario.
TEST(OutlierDetection, AdviceEjectsTheHostTheIncidentHits) {
  Scenario s = hosts_scenario();
  RunResult run = run_engine(s);
  std::vector<Advice> advice = advise(run, compute_metrics(run), std::nullopt, try_defenses(s));
  ASSERT_FALSE(advice.empty());
  EXPECT_EQ(advice[0].title, "Eject the failing hosts in each client");
  EXPECT_NE(advice[0].why.find("max_ejection_percent 20 it may eject the host"), std::string::npos)
      << advice[0].why;
  EXPECT_NE(advice[0].why.find("1.4% of requests fail (now 10%)"), std::string::npos)
      << advice[0].why;
}

// Which keys matter: the hosts' keys with more than one host, a graph's
// incident keys on a graph only; the schema tells the page the same.
TEST(OutlierDetection, KeysThatMatterOnlyWithHostsOrAGraph) {
  Scenario one = testing::preset("order-status", {{"engine", "agent"}});
  Scenario five = testing::preset("order-status", {{"engine", "agent"}, {"server.hosts", "5"}});
  EXPECT_TRUE(configs::key_applies(one, "server.hosts"));
  EXPECT_FALSE(configs::key_applies(one, "client.outlier_5xx"));
  EXPECT_TRUE(configs::key_applies(five, "client.outlier_5xx"));
  EXPECT_TRUE(configs::key_applies(five, "incident.hosts"));
  EXPECT_FALSE(configs::key_applies(one, "incident.call"));
  EXPECT_TRUE(configs::key_applies(preset_or_throw("shared-database").scenario, "incident.call"));
  five.client.outlier.consecutive_5xx = 5;
  bool imported = false;
  for (const auto& k : configs::import_scenario(five, "s.yaml").keys)
    imported = imported || k.path == "client.outlier_5xx";
  EXPECT_TRUE(imported);
  Scenario set = one;
  set.client.outlier.consecutive_5xx = 5;
  set.incident.call = 2;
  EXPECT_EQ(ignored_keys(set, {"client.outlier_5xx", "incident.call"}),
            (std::vector<std::string>{
                "client.outlier_5xx: ignored: it applies when server.hosts is above 1, and here "
                "server.hosts is 1",
                "incident.call: ignored: it applies when the scenario has services (a graph), and "
                "here it has none"}));
  nlohmann::json schema = schema_json();
  for (const auto& k : schema["keys"])
    if (k["path"] == "incident.call") {
      EXPECT_EQ(k["when"]["path"], "services");
      EXPECT_EQ(k["when"]["present"], true);
    }
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

// ---- configurations -----------------------------------------------------------

// An Envoy cluster of `hosts` static endpoints whose outlier_detection sets
// `fields`, behind a route that retries.
std::string envoy_outlier_cluster(int hosts, const std::string& fields) {
  std::string out =
      "static_resources:\n"
      "  clusters:\n"
      "  - name: backend\n"
      "    outlier_detection:\n" +
      fields +
      "    common_lb_config:\n"
      "      healthy_panic_threshold: {value: 30}\n"
      "    load_assignment:\n"
      "      cluster_name: backend\n"
      "      endpoints:\n"
      "      - lb_endpoints:\n";
  for (int h = 0; h < hosts; ++h)
    out += "        - endpoint: {address: {socket_address: {address: 10.0.0." + std::to_string(h) +
           ", port_value: 80}}}\n";
  return out + "route:\n  timeout: 15s\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 2\n";
}

TEST(OutlierDetection, ImportedFromAnEnvoyClusterWithItsEndpoints) {
  using namespace configs::testing;
  const configs::ImportResult r = configs::import_configs(
      {{"e.yaml", envoy_outlier_cluster(4,
                                        "      consecutive_5xx: 3\n"
                                        "      interval: 5s\n"
                                        "      base_ejection_time: 20s\n"
                                        "      max_ejection_percent: 50\n")}});
  EXPECT_EQ(num(r, "client.outlier_5xx"), 3);
  EXPECT_EQ(num(r, "client.outlier_interval_s"), 5);
  EXPECT_EQ(num(r, "client.outlier_ejection_s"), 20);
  EXPECT_EQ(num(r, "client.outlier_max_percent"), 50);
  EXPECT_EQ(num(r, "client.outlier_panic_percent"), 30);
  EXPECT_EQ(num(r, "server.hosts"), 4);
  EXPECT_EQ(str(r, "engine"), "agent");
  for (const auto& k : r.keys)
    if (k.path == "client.outlier_5xx") {
      EXPECT_NE(k.from.find("e.yaml:5:"), std::string::npos) << k.from;
    }
  // Left out: Envoy's 5 in a row and 10%; enforcing 0 turns 5xx ejection off.
  const configs::ImportResult d =
      configs::import_configs({{"e.yaml", envoy_outlier_cluster(3, "      interval: 10s\n")}});
  EXPECT_EQ(num(d, "client.outlier_5xx"), 5);
  EXPECT_EQ(num(d, "client.outlier_max_percent"), 10);
  const configs::ImportResult off = configs::import_configs(
      {{"e.yaml", envoy_outlier_cluster(3, "      enforcing_consecutive_5xx: 0\n")}});
  EXPECT_EQ(num(off, "client.outlier_5xx"), 0);
}

TEST(OutlierDetection, RoundTripsThroughAnEnvoyCluster) {
  using namespace configs::testing;
  Scenario s = testing::preset("order-status", {{"engine", "agent"},
                                                {"client.outlier_5xx", "7"},
                                                {"client.outlier_interval_s", "2"},
                                                {"client.outlier_ejection_s", "15"},
                                                {"client.outlier_max_ejection_s", "120"},
                                                {"client.outlier_max_percent", "40"},
                                                {"client.outlier_panic_percent", "0"}});
  const configs::ExportResult e = configs::export_config(s, "envoy");
  const configs::ImportResult r = configs::import_configs({{"envoy.yaml", e.text}});
  EXPECT_EQ(num(r, "client.outlier_5xx"), 7);
  EXPECT_EQ(num(r, "client.outlier_interval_s"), 2);
  EXPECT_EQ(num(r, "client.outlier_ejection_s"), 15);
  EXPECT_EQ(num(r, "client.outlier_max_ejection_s"), 120);
  EXPECT_EQ(num(r, "client.outlier_max_percent"), 40);
  EXPECT_EQ(num(r, "client.outlier_panic_percent"), 0);
}

// Istio writes Envoy's outlier_detection from a DestinationRule and sets the
// panic threshold to minHealthPercent, 0 when left out (applyOutlierDetection,
// pilot/pkg/networking/core/cluster_traffic_policy.go).
TEST(OutlierDetection, ImportedFromAnIstioDestinationRule) {
  using namespace configs::testing;
  const std::string dr =
      "apiVersion: networking.istio.io/v1\n"
      "kind: DestinationRule\n"
      "metadata: {name: backend}\n"
      "spec:\n"
      "  host: backend\n"
      "  trafficPolicy:\n"
      "    outlierDetection:\n"
      "      consecutive5xxErrors: 4\n"
      "      interval: 1m\n"
      "      baseEjectionTime: 3m\n";
  const configs::ImportResult r = configs::import_configs({{"dr.yaml", dr}});
  EXPECT_EQ(num(r, "client.outlier_5xx"), 4);
  EXPECT_EQ(num(r, "client.outlier_interval_s"), 60);
  EXPECT_EQ(num(r, "client.outlier_ejection_s"), 180);
  EXPECT_EQ(num(r, "client.outlier_max_percent"), 10);
  EXPECT_EQ(num(r, "client.outlier_panic_percent"), 0);
}

TEST(OutlierDetection, LintFindsAMaxEjectionPercentBelowOneHost) {
  using namespace configs;
  auto rule = [](const LintReport& r) -> const Finding* {
    for (const Finding& x : r.findings)
      if (x.rule == "outlier-never-ejects") return &x;
    return nullptr;
  };
  LintReport four = lint_configs({{"e.yaml", envoy_outlier_cluster(4, "      interval: 10s\n")}});
  const Finding* f = rule(four);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warning);
  EXPECT_NE(f->message.find("these 4 hosts are never ejected"), std::string::npos) << f->message;
  EXPECT_EQ(f->numbers["hosts_needed"], 10);
  LintReport enough =
      lint_configs({{"e.yaml", envoy_outlier_cluster(4, "      max_ejection_percent: 25\n")}});
  EXPECT_EQ(rule(enough), nullptr);
  LintReport none =
      lint_configs({{"e.yaml", envoy_outlier_cluster(4, "      max_ejection_percent: 0\n")}});
  ASSERT_NE(rule(none), nullptr);
  EXPECT_NE(rule(none)->message.find("no host is ever ejected"), std::string::npos);
  EXPECT_NE(rule(four)->fix.find("rounded up (25)"), std::string::npos) << rule(four)->fix;
}

}  // namespace
}  // namespace retrystorm
