// How many client instances share the load (client.budget.clients): read
// from a Kubernetes workload beside the retry configuration, asked for by
// lint (--instances), stated in the findings that depend on it, and the
// simulation's verdict at 1, 10 and 100 instances (issue 26, part 3).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "app/configs.hpp"
#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "server/server.hpp"
#include "systems/lint.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;

// Envoy's default circuit breaker: at most 3 retries in flight per Envoy
// instance (RetryStateImpl::shouldRetry asks the cluster's retry resource,
// whose max_retries is 3 when left out: ClusterInfoImpl::ResourceManagers::load
// in source/common/upstream/upstream_impl.cc).
const char* kEnvoyRoute =
    "route:\n"
    "  cluster: backend\n"
    "  retry_policy:\n"
    "    retry_on: 5xx,reset,connect-failure\n"
    "    num_retries: 3\n"
    "    per_try_timeout: 1s\n";

ConfigFile envoy_route() {
  return {"route.yaml", kEnvoyRoute};
}

const Finding* find(const LintReport& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

TEST(ClientInstances, ReplicasOfADeploymentBesideTheFilesAreTheClients) {
  ImportResult r = import_configs({envoy_route(), fixture("kubernetes/checkout-deployment.yaml")});
  EXPECT_EQ(num(r, "client.budget.clients"), 12);
  ASSERT_TRUE(r.instances);
  EXPECT_NE(r.instances->from.find("checkout-deployment.yaml:9: spec.replicas: 12 of Deployment "
                                   "checkout"),
            std::string::npos)
      << r.instances->from;
  ASSERT_EQ(r.formats.size(), 2u);
  EXPECT_NE(r.formats[1].find("Kubernetes workload"), std::string::npos) << r.formats[1];
  EXPECT_EQ(r.layers.size(), 1u);  // a workload is not a layer
  // Without a workload the key is not imported: no file says it.
  EXPECT_FALSE(has_key(import_configs({envoy_route()}), "client.budget.clients"));
}

TEST(ClientInstances, AWorkloadInTheSameFileAsTheRouteIsReadToo) {
  ImportResult r = import_configs({fixture("kubernetes/vs-with-deployment.yaml")});
  EXPECT_EQ(num(r, "client.budget.clients"), 4);
  EXPECT_EQ(num(r, "client.retries"), 3);  // the VirtualService is imported as before
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST(ClientInstances, WhatAWorkloadCannotSayIsAWarning) {
  auto import_with = [](const std::string& workload) {
    return import_configs({envoy_route(), {"w.yaml", workload}});
  };
  // replicas left out: Kubernetes starts one pod (DeploymentSpec.replicas
  // defaults to 1, k8s.io/api apps/v1 types.go).
  ImportResult none = import_with("kind: Deployment\nmetadata: {name: a}\nspec: {}\n");
  EXPECT_EQ(num(none, "client.budget.clients"), 1);
  EXPECT_NE(none.instances->from.find("left out, so Kubernetes runs 1"), std::string::npos);
  ImportResult zero = import_with("kind: StatefulSet\nspec: {replicas: 0}\n");
  EXPECT_EQ(num(zero, "client.budget.clients"), 1);
  ASSERT_EQ(zero.warnings.size(), 1u);
  EXPECT_NE(zero.warnings[0].find("0 replicas"), std::string::npos) << zero.warnings[0];
  ImportResult daemons = import_with("kind: DaemonSet\nmetadata: {name: node-agent}\n");
  EXPECT_FALSE(daemons.instances);
  ASSERT_EQ(daemons.warnings.size(), 1u);
  EXPECT_NE(daemons.warnings[0].find("one instance per node"), std::string::npos);
  EXPECT_NE(daemons.warnings[0].find("--instances"), std::string::npos);
  ImportResult two = import_with(
      "kind: Deployment\nspec: {replicas: 3}\n---\nkind: Deployment\nspec: {replicas: 5}\n");
  EXPECT_EQ(num(two, "client.budget.clients"), 3);
  ASSERT_EQ(two.warnings.size(), 1u);
  EXPECT_NE(two.warnings[0].find("keeps 3"), std::string::npos) << two.warnings[0];
  for (const char* bad :
       {"kind: Deployment\nspec: {replicas: 2.5}\n", "kind: Deployment\nspec: {replicas: -1}\n",
        "kind: Deployment\nspec: {replicas: many}\n", "kind: Deployment\nspec: [1]\n"}) {
    try {
      import_with(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("w.yaml:2: spec"), std::string::npos) << e.what();
    }
  }
  // Workloads alone say nothing about retries.
  try {
    import_configs({fixture("kubernetes/checkout-deployment.yaml")});
    ADD_FAILURE() << "a Deployment alone was imported";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only Kubernetes workloads"), std::string::npos);
  }
}

TEST(ClientInstances, LintStatesTheCountItAssumedAndWhereItCameFrom) {
  LintReport plain = lint_configs({envoy_route()});
  EXPECT_TRUE(plain.instances_matter);
  EXPECT_FALSE(plain.instances.given);
  EXPECT_EQ(plain.instances.count, 100);
  std::string text = lint_text(plain);
  EXPECT_NE(text.find("client instances: 100 (the model's default, not read from any file); "
                      "budgets here are per instance: give --instances N"),
            std::string::npos)
      << text;
  const Finding* cap = find(plain, "no-retry-budget");
  ASSERT_TRUE(cap);
  EXPECT_NE(cap->message.find("the fleet's is 300 with 100 instances"), std::string::npos)
      << cap->message;
  EXPECT_EQ(cap->numbers["instances"], 100);

  LintReport deployed =
      lint_configs({envoy_route(), fixture("kubernetes/checkout-deployment.yaml")});
  EXPECT_TRUE(deployed.instances.given);
  EXPECT_NE(find(deployed, "no-retry-budget")->message.find("the fleet's is 36 with 12 instances"),
            std::string::npos);
  LintOptions o;
  o.instances = 2;  // --instances wins over the Deployment
  LintReport asked =
      lint_configs({envoy_route(), fixture("kubernetes/checkout-deployment.yaml")}, o);
  EXPECT_EQ(asked.instances.from, "--instances");
  EXPECT_NE(find(asked, "no-retry-budget")->message.find("the fleet's is 6 with 2 instances"),
            std::string::npos);
  nlohmann::json j = lint_json(asked);
  EXPECT_EQ(j["instances"]["count"], 2);
  EXPECT_EQ(j["instances"]["matters"], true);

  // A policy whose budget holds nothing per instance does not talk about them.
  LintReport haproxy =
      lint_configs({{"h.cfg", "backend b\n  retries 3\n  server s 10.0.0.1:80\n"}});
  EXPECT_FALSE(haproxy.instances_matter);
  EXPECT_EQ(lint_text(haproxy).find("client instances"), std::string::npos);
}

// The issue's example (primary-failover with a queue of 50): Envoy's default
// cap of 3 sends few retries and denies thousands with one instance, and
// denies none with the default 100.
TEST(ClientInstances, TheSimulationShowsTheVerdictAtOneTenAndAHundredInstances) {
  app::LintRequest request;
  request.files = {envoy_route()};
  request.options.simulate = true;
  Scenario base = preset_or_throw("primary-failover").scenario;
  base.server.queue_limit = 50;
  request.options.base = base;
  LintReport r = app::lint(request);
  ASSERT_TRUE(r.simulation);
  const auto& rows = r.simulation->instances;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].first, 1);
  EXPECT_EQ(rows[1].first, 10);
  EXPECT_EQ(rows[2].first, 100);
  EXPECT_LT(rows[0].second.retries_sent, rows[1].second.retries_sent);
  EXPECT_LT(rows[1].second.retries_sent, rows[2].second.retries_sent);
  EXPECT_GT(rows[0].second.budget_denied, 1000);
  EXPECT_EQ(rows[2].second.budget_denied, 0);
  EXPECT_LT(rows[0].second.peak_amplification, rows[2].second.peak_amplification);
  // The row of the assumed count is the run as configured.
  EXPECT_EQ(rows[2].second.retries_sent, r.simulation->as_configured.retries_sent);
  std::string text = lint_text(r);
  EXPECT_NE(text.find("as configured, by client instances (the budget is per instance):"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("with 1 instance: "), std::string::npos);
  EXPECT_NE(text.find(" denied\n"), std::string::npos);
  // docs/configs.md's figures for this route.
  EXPECT_NE(text.find("with 1 instance: recovers 50 ms after the incident; failed 12.5%, wasted "
                      "0.1%, peak amplification 1.1x; 900 retries sent, 8,730 denied"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("27,060 retries sent, 0 denied"), std::string::npos) << text;

  request.options.instances = 12;  // a count of its own gets its own row
  LintReport twelve = app::lint(request);
  ASSERT_EQ(twelve.simulation->instances.size(), 4u);
  EXPECT_EQ(twelve.simulation->instances[2].first, 12);
  EXPECT_EQ(twelve.simulation->instances[2].second.retries_sent,
            twelve.simulation->as_configured.retries_sent);
}

TEST(ClientInstances, AnInstanceCountOutsideItsRangeIsRefused) {
  std::string file = fixture_path("envoy/route.yaml");
  for (const char* v : {"0", "-3", "1.5", "nan", "inf", "1e8"}) {
    BinRun r = run_bin(std::string("lint --instances ") + v + " " + file);
    EXPECT_EQ(r.status, 2) << v << ": " << r.err;
    EXPECT_NE(r.err.find("--instances: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("allowed a whole number from 1 to 10000000"), std::string::npos) << r.err;
  }
  EXPECT_EQ(run_bin("lint --instances 7 --format json " + file).status, 1);
  for (const char* body : {R"("instances": 0)", R"("instances": "7")", R"("instances": 2.5)",
                           R"("instances": null)"}) {
    std::string request =
        R"({"files":[{"name":"r.yaml","text":"retry_policy: {retry_on: 5xx, num_retries: 2}"}],)" +
        std::string(body) + "}";
    ApiAnswer a = handle_api("/api/lint", request);
    EXPECT_EQ(a.status, 400) << body << ": " << a.body.dump();
    EXPECT_NE(a.body["error"].get<std::string>().find("instances"), std::string::npos);
  }
  ApiAnswer ok = handle_api(
      "/api/lint",
      R"({"files":[{"name":"r.yaml","text":"retry_policy: {retry_on: 5xx, num_retries: 2}"}],"instances":7})");
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["instances"]["count"], 7);
}

TEST(ClientInstances, CountsAreWrittenWithTheirThousandsGrouped) {
  EXPECT_EQ(text::grouped_text(0), "0");
  EXPECT_EQ(text::grouped_text(999), "999");
  EXPECT_EQ(text::grouped_text(1000), "1,000");
  EXPECT_EQ(text::grouped_text(8730.4), "8,730");
  EXPECT_EQ(text::grouped_text(26980), "26,980");
  EXPECT_EQ(text::grouped_text(-1234567), "-1,234,567");
  EXPECT_EQ(text::grouped_text(-0.2), "0");
}

}  // namespace
}  // namespace retrystorm::configs
