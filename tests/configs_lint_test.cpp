// Lint: each rule on a fixture that should trip it, with its numbers; the
// simulation; and the command line's exit statuses and output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "configs_helpers.hpp"
#include "io/configs/lint.hpp"
#include "server/server.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;

const Finding* find(const LintReport& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

TEST(ConfigsLint, PostMortemLadderAgainstDeadline) {
  for (const char* file : {"retrystorm/postmortem.yaml", "retrystorm/postmortem-units.yaml"}) {
    LintReport r = lint_configs({fixture(file)});
    const Finding* f = find(r, "ladder-exceeds-deadline");
    ASSERT_NE(f, nullptr) << file;
    EXPECT_EQ(f->severity, "error");
    EXPECT_NE(f->message.find("31 min 30 s"), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("30 min deadline"), std::string::npos) << f->message;
    EXPECT_EQ(f->numbers["ladder_total_s"], 1890);
    EXPECT_EQ(f->numbers["deadline_s"], 1800);
    EXPECT_EQ(f->numbers["retries_that_fit"], 5);
    EXPECT_EQ(r.exit_status(), 1);
  }
}

TEST(ConfigsLint, SameLadderFromScenarioKeys) {
  // multiplier 2, base 30 s, 6 retries, deadline 1800 s as a policy with keys.
  LintReport r = lint_configs({{"keys.yaml",
                                "kind: retrystorm-policy\nretries: 6\nbackoff: {base_s: 30, "
                                "multiplier: 2}\ndeadline_s: 1800\n"}});
  const Finding* f = find(r, "ladder-exceeds-deadline");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("31 min 30 s"), std::string::npos);
}

TEST(ConfigsLint, PerTryTimeoutsThatCannotFit) {
  LintReport r = lint_configs({{"e.yaml",
                                "route:\n  timeout: 5s\n  retry_policy:\n    retry_on: 5xx\n"
                                "    num_retries: 3\n    per_try_timeout: 2s\n"}});
  const Finding* f = find(r, "per-try-timeouts-exceed-deadline");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("(3 + 1) x 2 s"), std::string::npos) << f->message;
  EXPECT_EQ(f->numbers["retries_that_fit"], 1);
  EXPECT_NE(f->fix.find("per_try_timeout"), std::string::npos);
}

TEST(ConfigsLint, TimeoutsNeverRetriedWithoutPerTryTimeout) {
  LintReport r = lint_configs({fixture("envoy/defaults.yaml")});
  const Finding* f = find(r, "timeouts-never-retried");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_EQ(find(lint_configs({fixture("envoy/route.yaml")}), "timeouts-never-retried"), nullptr);
}

TEST(ConfigsLint, NoBudgetPerSystem) {
  for (const char* file : {"envoy/route.yaml", "grpc/no-throttling.json", "aws/legacy.ini",
                           "linkerd/annotations.yaml", "istio/virtualservice.yaml"})
    EXPECT_NE(find(lint_configs({fixture(file)}), "no-retry-budget"), nullptr) << file;
  for (const char* file :
       {"grpc/service-config.json", "aws/config", "linkerd/serviceprofile.yaml"}) {
    EXPECT_EQ(find(lint_configs({fixture(file)}), "no-retry-budget"), nullptr) << file;
  }
  EXPECT_EQ(find(lint_configs({fixture("envoy/route.yaml"), fixture("envoy/cluster.yaml")}),
                 "no-retry-budget"),
            nullptr);
}

TEST(ConfigsLint, StackedLayersAndCountingTrap) {
  LintReport r =
      lint_configs({fixture("stack/edge-envoy.yaml"), fixture("stack/service-grpc.json")});
  const Finding* layers = find(r, "retries-at-several-layers");
  ASSERT_NE(layers, nullptr);
  EXPECT_EQ(layers->numbers["amplification"], 12);
  EXPECT_NE(layers->message.find("4 x 3 = up to 12"), std::string::npos) << layers->message;
  const Finding* trap = find(r, "counting-trap");
  ASSERT_NE(trap, nullptr);
  EXPECT_EQ(trap->severity, "warning");
  EXPECT_NE(trap->message.find("maxAttempts 3"), std::string::npos);
  EXPECT_NE(trap->message.find("num_retries 3"), std::string::npos);
  const Finding* capped =
      find(lint_configs({fixture("grpc/max-attempts-7.json")}), "counting-trap");
  ASSERT_NE(capped, nullptr);
  EXPECT_NE(capped->message.find("capped to 5"), std::string::npos);
}

TEST(ConfigsLint, LoadAboveTheDrainBound) {
  LintOptions o;
  o.load = 0.6;
  LintReport r = lint_configs({fixture("envoy/route.yaml")}, o);  // 4 attempts: bound 25%
  const Finding* f = find(r, "load-above-drain-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_DOUBLE_EQ(f->numbers["safe_load_below"].get<double>(), 0.25);
  o.load = 0.2;
  const Finding* ok =
      find(lint_configs({fixture("envoy/route.yaml")}, o), "load-above-drain-bound");
  EXPECT_EQ(ok, nullptr);
  const Finding* info = find(lint_configs({fixture("envoy/route.yaml")}), "load-above-drain-bound");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->severity, "info");
}

TEST(ConfigsLint, CleanConfigurationExitsZero) {
  LintOptions o;
  o.load = 0.2;
  LintReport r = lint_configs({fixture("envoy/route.yaml"), fixture("envoy/cluster.yaml")}, o);
  EXPECT_EQ(r.errors + r.warnings, 0) << lint_text(r);
  EXPECT_EQ(r.exit_status(), 0);
}

TEST(ConfigsLint, SimulateRunsTheIncidentAndTheFixes) {
  LintOptions o;
  o.simulate = true;
  LintReport r =
      lint_configs({fixture("stack/edge-envoy.yaml"), fixture("stack/service-grpc.json")}, o);
  const auto& s = r.simulation;
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["scenario"], "primary-failover");
  for (const char* k : {"recovered", "failed_fraction", "wasted_fraction", "peak_amplification"}) {
    EXPECT_TRUE(s["as_configured"].contains(k)) << k;
  }
  EXPECT_FALSE(s["fixes"].empty());
  EXPECT_TRUE(s.contains("all_fixes"));
  EXPECT_FALSE(s["ladder"].empty());
  std::string text = lint_text(r);
  EXPECT_NE(text.find("as configured:"), std::string::npos);
  EXPECT_NE(text.find("all fixes together:"), std::string::npos);
}

TEST(ConfigsCli, ImportLintExportExitStatuses) {
  std::string fx = fixture_path("");
  BinRun imp = run_bin("import " + fx + "envoy/route.yaml " + fx + "envoy/cluster.yaml");
  EXPECT_EQ(imp.status, 0) << imp.err;
  EXPECT_NE(imp.out.find("client.budget.kind = envoy_concurrency"), std::string::npos) << imp.out;
  BinRun js = run_bin("import --format json " + fx + "grpc/service-config.json");
  EXPECT_EQ(js.status, 0);
  EXPECT_EQ(nlohmann::json::parse(js.out)["client"]["retries"], 3);
  BinRun warn = run_bin("import " + fx + "envoy/unknown-field.yaml");
  EXPECT_EQ(warn.status, 0);
  EXPECT_NE(warn.err.find("warning: "), std::string::npos);
  EXPECT_NE(warn.err.find("unknown-field.yaml:8: route.retry_policy.retry_jitter"),
            std::string::npos);
  BinRun bad = run_bin("import " + fx + "envoy/broken-num-retries.yaml");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("broken-num-retries.yaml:5: route.retry_policy.num_retries"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(run_bin("import /nonexistent/file.yaml").status, 2);

  BinRun lint = run_bin("lint " + fx + "retrystorm/postmortem.yaml");
  EXPECT_EQ(lint.status, 1);
  EXPECT_NE(lint.out.find("31 min 30 s"), std::string::npos) << lint.out;
  BinRun clean = run_bin("lint --load 0.2 " + fx + "envoy/route.yaml " + fx + "envoy/cluster.yaml");
  EXPECT_EQ(clean.status, 0) << clean.out;
  BinRun ljson = run_bin("lint --format json " + fx + "retrystorm/postmortem.yaml");
  EXPECT_EQ(ljson.status, 1);
  auto j = nlohmann::json::parse(ljson.out);
  EXPECT_EQ(j["findings"][0]["rule"], "ladder-exceeds-deadline");
  EXPECT_EQ(run_bin("lint " + fx + "grpc/broken-syntax.json").status, 2);
  EXPECT_EQ(run_bin("lint --format csv " + fx + "envoy/route.yaml").status, 2);

  BinRun ex = run_bin("export --to grpc --preset primary-failover");
  EXPECT_EQ(ex.status, 0) << ex.err;
  EXPECT_TRUE(nlohmann::json::accept(ex.out));
  EXPECT_NE(ex.err.find("note:"), std::string::npos);
  for (const char* sys : {"envoy", "istio", "linkerd", "aws"}) {
    EXPECT_EQ(run_bin(std::string("export --to ") + sys + " --set client.retries=2").status, 0)
        << sys;
  }
  EXPECT_EQ(run_bin("export --to nginx").status, 2);
}

TEST(ConfigsHttp, ImportExportLint) {
  nlohmann::json files = {
      {"files",
       {{{"name", "envoy.yaml"}, {"text", read_text(fixture_path("envoy/route.yaml"))}},
        {{"name", "cluster.yaml"}, {"text", read_text(fixture_path("envoy/cluster.yaml"))}}}}};
  ApiAnswer a = handle_api("/api/import", files.dump());
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["keys"]["client.retries"], 3);
  EXPECT_EQ(a.body["formats"].size(), 2u);
  EXPECT_TRUE(a.body["warnings"].is_array());
  ApiAnswer l = handle_api("/api/lint", files.dump());
  ASSERT_EQ(l.status, 200);
  EXPECT_TRUE(l.body["findings"].is_array());
  ApiAnswer bad = handle_api(
      "/api/import", R"({"files":[{"name":"x.yaml","text":"retry_policy: {num_retries: x}"}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body["error"].get<std::string>().find("x.yaml:1"), std::string::npos);
  for (const char* sys : {"envoy", "grpc", "istio", "linkerd", "aws"}) {
    ApiAnswer e = handle_api(std::string("/api/export/") + sys, R"({"preset":"primary-failover"})");
    ASSERT_EQ(e.status, 200) << sys;
    EXPECT_FALSE(e.body["text"].get<std::string>().empty());
  }
  ApiAnswer envoy = handle_api("/api/export/envoy", "{}");
  EXPECT_EQ(envoy.body["yaml"], envoy.body["text"]);
}

}  // namespace
}  // namespace retrystorm::configs
