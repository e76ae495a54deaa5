// Lint: each rule on a fixture that should trip it, with its numbers; the
// simulation; and the command line's exit statuses and output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "analysis/session_advice.hpp"
#include "app/configs.hpp"
#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "server/server.hpp"
#include "systems/common.hpp"
#include "systems/lint.hpp"

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
    EXPECT_EQ(f->severity, Severity::error);
    EXPECT_NE(f->message.find("31 min 30 s"), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("30 min deadline"), std::string::npos) << f->message;
    EXPECT_EQ(f->numbers["ladder_total_s"], 1890);
    EXPECT_EQ(f->numbers["deadline_s"], 1800);
    EXPECT_EQ(f->numbers["retries_that_fit"], 5);
    EXPECT_EQ(r.exit_status(), 1);
  }
}

// Retries past the deadline: where the layer enforces its deadline (Envoy's
// route timeout, gRPC's deadline, Linkerd's timeout, nginx's
// proxy_next_upstream_timeout) they are never sent, and the finding says so;
// where the deadline is only the caller's (the post-mortem's sessions), they
// run on unseen.
TEST(ConfigsLint, RetriesPastTheDeadlineAreNeverSentWhereTheLayerEnforcesIt) {
  const std::string ladder = "retry_back_off: {base_interval: 10s, max_interval: 60s}\n";
  LintReport envoy = lint_configs({{"e.yaml",
                                    "route:\n  timeout: 15s\n  retry_policy:\n    retry_on: 5xx\n"
                                    "    num_retries: 5\n    " +
                                        ladder}});
  const Finding* f = find(envoy, "ladder-exceeds-deadline");
  ASSERT_NE(f, nullptr) << lint_text(envoy);
  EXPECT_EQ(f->severity, Severity::error);
  EXPECT_NE(f->message.find("and the rest are never sent: Envoy ends the request at the route "
                            "timeout and cancels the retries still to come"),
            std::string::npos)
      << f->message;
  EXPECT_EQ(f->message.find("never sees"), std::string::npos);
  LintReport nginx = lint_configs(
      {{"n.conf",
        "upstream app { server a:80; server b:80; server c:80; server d:80; }\n"
        "location / { proxy_pass http://app; proxy_next_upstream error timeout http_503;\n"
        "  proxy_read_timeout 10s; proxy_next_upstream_timeout 15s; }\n"}});
  const Finding* n = find(nginx, "per-try-timeouts-exceed-deadline");
  ASSERT_NE(n, nullptr) << lint_text(nginx);
  EXPECT_NE(n->message.find("the deadline cuts the rest (nginx starts no try once "
                            "proxy_next_upstream_timeout has passed since the first"),
            std::string::npos)
      << n->message;
  const Finding* post_mortem =
      find(lint_configs({fixture("retrystorm/postmortem.yaml")}), "ladder-exceeds-deadline");
  ASSERT_NE(post_mortem, nullptr);
  EXPECT_NE(post_mortem->message.find("the rest are work the caller never sees"), std::string::npos)
      << post_mortem->message;
}

// Fixes must work in the target system (issue 26, part 5): "no retries" is
// not a count of 0 everywhere. gRPC rejects a service config whose
// retryPolicy has maxAttempts below 2 (C-core RetryMethodConfig::JsonPostLoad);
// Linkerd reads retry.linkerd.io/limit: 0 as unset and keeps 1 retry; a
// ServiceProfile has no retry count at all (annotations are ignored on it).
TEST(ConfigsLint, NoRetriesIsWrittenAsEachSystemTurnsRetriesOff) {
  LintOptions heavy;
  heavy.load = 0.95;  // at most 1 attempt per request: the fix is no retries
  auto fix_of = [&](const ConfigFile& f) {
    LintReport r = lint_configs({f}, heavy);
    const Finding* load = find(r, "load-above-drain-bound");
    return load ? load->fix : std::string("(no load finding)");
  };
  std::string grpc = fix_of(fixture("grpc/no-throttling.json"));
  EXPECT_NE(grpc.find("remove the retryPolicy"), std::string::npos) << grpc;
  EXPECT_EQ(grpc.find("maxAttempts = 1"), std::string::npos) << grpc;
  std::string annotations = fix_of(fixture("linkerd/annotations.yaml"));
  EXPECT_NE(annotations.find("remove every retry.linkerd.io annotation (/http, /grpc, /limit, "
                             "/timeout)"),
            std::string::npos)
      << annotations;
  EXPECT_EQ(annotations.find("limit: \"0\""), std::string::npos) << annotations;
  // Removing /http and /grpc alone would leave a policy: /limit or /timeout
  // make one (parse_http_retry, linkerd2 policy-controller/k8s/index/src/
  // outbound/index/http.rs), and the fix's result must import as no retries.
  ConfigFile stripped = fixture("linkerd/annotations.yaml");
  for (const char* gone :
       {"    retry.linkerd.io/http: 5xx\n", "    retry.linkerd.io/limit: \"2\"\n",
        "    retry.linkerd.io/timeout: 400ms\n"}) {
    std::string& t = stripped.text;
    t.erase(t.find(gone), std::string(gone).size());
  }
  EXPECT_EQ(import_configs({stripped}).layers.at(0).retries, 0);
  ConfigFile limit_only = fixture("linkerd/annotations.yaml");
  limit_only.text.erase(limit_only.text.find("    retry.linkerd.io/http: 5xx\n"), 30);
  EXPECT_EQ(import_configs({limit_only}).layers.at(0).retries, 2);
  std::string profile = fix_of(fixture("linkerd/serviceprofile.yaml"));
  EXPECT_NE(profile.find("isRetryable: false"), std::string::npos) << profile;
  EXPECT_EQ(profile.find("retry.linkerd.io/limit"), std::string::npos) << profile;
  // Where 0 is a count the system takes, it stays one.
  std::string envoy = fix_of(fixture("envoy/route.yaml"));
  EXPECT_NE(envoy.find("set retry_policy.num_retries: 0"), std::string::npos) << envoy;
  // Each in the file's own syntax: HAProxy's and nginx's directives take a
  // space (and nginx a semicolon).
  EXPECT_NE(fix_of(fixture("haproxy/backend.cfg")).find("set retries 0"), std::string::npos)
      << fix_of(fixture("haproxy/backend.cfg"));
  std::string nginx = fix_of(fixture("nginx/location.conf"));
  EXPECT_NE(nginx.find("set proxy_next_upstream_tries 1;"), std::string::npos) << nginx;
  // Istio refuses attempts 0 beside perTryTimeout or retryOn
  // (ValidateHTTPRetry, istio pkg/config/validation/agent/validation.go).
  std::string istio = fix_of(fixture("istio/virtualservice.yaml"));
  EXPECT_NE(istio.find("set retries to {attempts: 0} alone"), std::string::npos) << istio;
}

// Envoy retries a timed-out attempt only with 5xx, gateway-error or reset in
// retry_on: "set per_try_timeout" alone would leave timeouts unretried.
TEST(ConfigsLint, APerTryTimeoutFixAlsoAddsTheConditionThatRetriesIt) {
  auto fix_of = [](const std::string& retry_on) {
    LintReport r = lint_configs(
        {{"r.yaml", "route:\n  timeout: 10s\n  retry_policy:\n    retry_on: " + retry_on +
                        "\n    num_retries: 2\n"}});
    const Finding* f = find(r, "timeouts-never-retried");
    return f ? f->fix : std::string("(no finding)");
  };
  std::string refused_only = fix_of("connect-failure,refused-stream");
  // reset, the smallest addition: 5xx would also retry every 503 answer,
  // which the simulated fix did not.
  EXPECT_NE(refused_only.find("and add reset to retry_policy.retry_on"), std::string::npos)
      << refused_only;
  EXPECT_EQ(fix_of("5xx").find("add reset"), std::string::npos);
}

// A fixed cap (Envoy's default max_retries of 3) is tighter in an overload
// than a retry budget of 20%: the fix lowers the cap, and lint's own
// simulation shows it does not make the peak worse.
TEST(ConfigsLint, TheFixForAFixedCapDoesNotLoosenIt) {
  app::LintRequest request;
  request.files = {{"route.yaml",
                    "route:\n  cluster: backend\n  retry_policy:\n    retry_on: 5xx\n"
                    "    num_retries: 3\n    per_try_timeout: 1s\n"}};
  request.options.simulate = true;
  LintReport r = app::lint(request);
  const Finding* cap = find(r, "no-retry-budget");
  ASSERT_NE(cap, nullptr);
  EXPECT_NE(cap->fix.find("lower circuit_breakers.thresholds[].max_retries to 1"),
            std::string::npos)
      << cap->fix;
  EXPECT_NE(cap->fix.find("once 16 requests are in flight"), std::string::npos) << cap->fix;
  ASSERT_TRUE(r.simulation);
  for (const SimulatedFix& f : r.simulation->fixes) {
    if (f.rule != "no-retry-budget") continue;
    ASSERT_TRUE(f.outcome) << f.error;
    EXPECT_LE(f.outcome->peak_amplification, r.simulation->as_configured.peak_amplification);
    EXPECT_LE(f.outcome->failed_fraction, r.simulation->as_configured.failed_fraction + 1e-9);
  }
}

// Every fix lint's simulation tries on the fixtures leaves the peak no worse
// than the policy as configured, but one: a per-try timeout makes timed-out
// attempts retried, which adds load in an incident by design, and its fix
// says so.
TEST(ConfigsLint, NoSimulatedFixRaisesThePeakButTheOneThatSaysItAddsLoad) {
  namespace fs = std::filesystem;
  int simulated = 0;
  for (const auto& e : fs::recursive_directory_iterator(fixture_path(""))) {
    if (!e.is_regular_file() || e.path().filename().string().rfind("broken", 0) == 0) continue;
    std::string rel = fs::relative(e.path(), fixture_path("")).string();
    app::LintRequest request;
    request.files = {fixture(rel)};
    request.options.simulate = true;
    LintReport r;
    try {
      r = app::lint(request);
    } catch (const InputError&) {
      continue;  // not a policy the incident runs (a workload alone, a session policy)
    }
    ASSERT_TRUE(r.simulation) << rel;
    for (const SimulatedFix& f : r.simulation->fixes) {
      if (!f.outcome) continue;
      ++simulated;
      if (f.rule == "timeouts-never-retried") {
        const Finding* finding = find(r, f.rule);
        ASSERT_NE(finding, nullptr);
        EXPECT_NE(finding->fix.find("this adds load in an incident"), std::string::npos);
        continue;
      }
      EXPECT_LE(f.outcome->peak_amplification,
                r.simulation->as_configured.peak_amplification + 1e-9)
          << rel << ": fix " << f.rule;
    }
  }
  EXPECT_GT(simulated, 10);
}

// gRPC hedgingPolicy (issue 26, part 2): imported as maxAttempts - 1 retries
// after a per-attempt timeout of hedgingDelay, no backoff (the load of
// hedges that do not wait for failures); lint says which clients hedge and
// whether retryThrottling bounds them, and what two hedging layers multiply.
TEST(ConfigsLint, HedgingIsImportedAsItsLoadAndLinted) {
  const std::string hedged =
      R"({"methodConfig":[{"name":[{}],"timeout":"2s","hedgingPolicy":{"maxAttempts":3,)"
      R"("hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE"]}}]})";
  ImportResult r = import_configs({{"h.json", hedged}});
  EXPECT_EQ(num(r, "client.retries"), 2);
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 0.1);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(num(r, "client.backoff.base_s"), 0);
  EXPECT_EQ(str(r, "client.retry_on"), "all");
  LintReport plain = lint_configs({{"h.json", hedged}});
  const Finding* h = find(plain, "hedging");
  ASSERT_NE(h, nullptr) << lint_text(plain);
  EXPECT_EQ(h->severity, Severity::warning);
  EXPECT_NE(h->message.find("up to 3 attempts per call, a new one every 100 ms"), std::string::npos)
      << h->message;
  EXPECT_NE(h->message.find("gRPC C-core and grpc-go do not"), std::string::npos);
  EXPECT_EQ(find(plain, "no-retry-budget"), nullptr);  // the hedging finding says it
  LintOptions heavy;
  heavy.load = 0.95;
  EXPECT_NE(find(lint_configs({{"h.json", hedged}}, heavy), "load-above-drain-bound")
                ->fix.find("remove the hedgingPolicy"),
            std::string::npos);
  std::string throttled = hedged;
  throttled.insert(throttled.size() - 1, R"(,"retryThrottling":{"maxTokens":10,"tokenRatio":0.1})");
  LintReport with_throttling = lint_configs({{"t.json", throttled}});
  const Finding* bounded = find(with_throttling, "hedging");
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(bounded->severity, Severity::info);
  LintReport two = lint_configs({{"a.json", hedged}, {"b.json", hedged}});
  const Finding* layers = find(two, "hedging-at-several-layers");
  ASSERT_NE(layers, nullptr) << lint_text(two);
  EXPECT_EQ(layers->numbers["attempts"], 9);
}

// botocore caps each delay after the jitter (ExponentialBackoff.delay_amount,
// botocore/retries/standard.py), which the conformance suite measured
// (docs/conformance.md, "AWS SDKs"); lint states the simplification from
// 7 attempts on, and not below or in legacy mode (no cap there).
TEST(ConfigsLint, AwsCapAfterJitterIsStated) {
  auto rule = [](const std::string& mode, int attempts) {
    LintReport r =
        lint_configs({{"config", "[default]\nretry_mode = " + mode +
                                     "\nmax_attempts = " + std::to_string(attempts) + "\n"}});
    return find(r, "backoff-cap-after-jitter") != nullptr;
  };
  EXPECT_TRUE(rule("standard", 7));
  EXPECT_TRUE(rule("adaptive", 10));
  EXPECT_FALSE(rule("standard", 6));
  EXPECT_FALSE(rule("legacy", 10));
  LintReport r = lint_configs({{"config", "[default]\nretry_mode = standard\nmax_attempts = 8\n"}});
  const Finding* f = find(r, "backoff-cap-after-jitter");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::info);
  EXPECT_NE(f->message.find("13.75 s"), std::string::npos) << f->message;
  EXPECT_EQ(f->numbers["attempts"], 8);
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
  EXPECT_EQ(f->severity, Severity::warning);
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
  EXPECT_EQ(trap->severity, Severity::warning);
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
  // 4 attempts: bound 25%. max_retries lifted: nothing limits retries.
  const ConfigFile unlimited{"cluster.yaml",
                             "circuit_breakers:\n  thresholds:\n  - max_retries: 4294967295\n"};
  LintReport r = lint_configs({fixture("envoy/route.yaml"), unlimited}, o);
  const Finding* f = find(r, "load-above-drain-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warning);
  // Envoy's default cap of 3 concurrent retries bounds them: info.
  const Finding* capped =
      find(lint_configs({fixture("envoy/route.yaml")}, o), "load-above-drain-bound");
  ASSERT_NE(capped, nullptr);
  EXPECT_EQ(capped->severity, Severity::info);
  // It names the cap, not a retry budget no-retry-budget says it has not.
  EXPECT_NE(capped->message.find("the fixed cap on retries in flight should bound this"),
            std::string::npos)
      << capped->message;
  EXPECT_EQ(capped->message.find("retry budget"), std::string::npos) << capped->message;
  EXPECT_DOUBLE_EQ(f->numbers["safe_load_below"].get<double>(), 0.25);
  o.load = 0.2;
  const Finding* ok =
      find(lint_configs({fixture("envoy/route.yaml")}, o), "load-above-drain-bound");
  EXPECT_EQ(ok, nullptr);
  const Finding* info = find(lint_configs({fixture("envoy/route.yaml")}), "load-above-drain-bound");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->severity, Severity::info);
}

TEST(ConfigsLint, CleanConfigurationExitsZero) {
  LintOptions o;
  o.load = 0.2;
  LintReport r = lint_configs({fixture("envoy/route.yaml"), fixture("envoy/cluster.yaml")}, o);
  EXPECT_EQ(r.errors + r.warnings, 0) << lint_text(r);
  EXPECT_EQ(r.exit_status(), 0);
}

TEST(ConfigsLint, SimulateRunsTheIncidentAndTheFixes) {
  app::LintRequest request;  // the simulation is the application's (app/lint_simulation)
  request.files = {fixture("stack/edge-envoy.yaml"), fixture("stack/service-grpc.json")};
  request.options.simulate = true;
  LintReport r = app::lint(request);
  const nlohmann::json s = lint_json(r)["simulation"];
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

// A per-try timeout between two steps (primary-failover: 50 ms) is rounded for the fluid engine and
// said so in milliseconds, without the binary noise of 0.285 / 0.05 x 0.05.
TEST(ConfigsLint, SimulateSaysHowItRoundedATimeoutInPlainNumbers) {
  app::LintRequest request;
  request.files = {
      {"route.yaml", "retry_policy: {retry_on: 5xx, num_retries: 2, per_try_timeout: 0.285s}\n"}};
  request.options.simulate = true;
  LintReport r = app::lint(request);
  ASSERT_TRUE(r.simulation);
  std::string notes;
  for (const auto& n : r.simulation->notes) notes += n + "\n";
  EXPECT_NE(notes.find("client.timeout_s 285 ms rounded to 300 ms (a whole number of 50 ms "
                       "steps)"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("0000000"), std::string::npos) << notes;
}

// A fix's keys are values a person would write: the per-try timeout lint
// suggests is whole milliseconds (Envoy defaults: route timeout 15 s, 1 retry).
TEST(ConfigsLint, SuggestedTimeoutsAreWholeMilliseconds) {
  LintReport r = lint_configs({fixture("envoy/defaults.yaml")});
  bool found = false;
  for (const auto& f : r.findings)
    for (const auto& [path, value] : f.fix_keys) {
      if (path != "client.timeout_s") continue;
      double v = std::get<double>(value);
      EXPECT_EQ(v, std::round(v * 1000) / 1000) << f.rule << ": " << v;
      EXPECT_EQ(number_text(v).find("0000"), std::string::npos) << number_text(v);
      found = true;
    }
  EXPECT_TRUE(found);
}

// ------------------------------------------ issue 11, Part 3: the tail

// The share of requests whose attempts all fail that pass `deadline_s`, by
// drawing each delay (independent of LadderDistribution's grid).
double drawn_share_past(const std::vector<DelayRange>& ladder, double fixed_s, double deadline_s) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  const int n = 400'000;
  int past = 0;
  for (int i = 0; i < n; ++i) {
    double total = fixed_s;
    for (const DelayRange& r : ladder) total += r.low_s + (r.high_s - r.low_s) * u(rng);
    past += total > deadline_s;
  }
  return static_cast<double>(past) / n;
}

// Envoy base 30 s, max 960 s, 6 retries, route timeout 1800 s, no per-try
// timeout (tests/fixtures/configs/envoy/long-ladder.yaml). Envoy draws each
// delay in [0, window) (JitteredExponentialBackOffStrategy::nextBackOffMs,
// source/common/common/backoff_strategy.cc). Windows 30, 60, ..., 960 s: the
// worst case is 1890 s > 1800 s. The ladder passes 1800 s when the six
// "missing" parts w - U sum below 90 s: P = (90^6 - 60^6 - 30^6) / (6! x prod w)
// = 2.81e-5. The old fix, a per-try timeout of (1800 - mean 945) / 7 =
// 122.14 s, let about half of the fully failing requests pass the deadline.
TEST(ConfigsLint, EnvoyLongLadderStatesTheTailAndSizesTheFixAtThe99thPercentile) {
  LintReport r = lint_configs({fixture("envoy/long-ladder.yaml")});
  const Finding* ladder = find(r, "ladder-exceeds-deadline");
  ASSERT_NE(ladder, nullptr) << lint_text(r);
  EXPECT_EQ(ladder->severity, Severity::info);  // the 99th percentile fits
  EXPECT_DOUBLE_EQ(ladder->numbers["worst_case_s"].get<double>(), 1890);
  EXPECT_DOUBLE_EQ(ladder->numbers["ladder_mean_s"].get<double>(), 945);
  const double prod = 30.0 * 60 * 120 * 240 * 480 * 960;
  const double exact = (std::pow(90, 6) - std::pow(60, 6) - std::pow(30, 6)) / (720 * prod);
  EXPECT_NEAR(ladder->numbers["p_exceeds_deadline"].get<double>(), exact, exact * 0.05);
  EXPECT_NE(ladder->message.find("31 min 30 s"), std::string::npos) << ladder->message;
  EXPECT_NE(ladder->message.find("0.0028%"), std::string::npos) << ladder->message;

  const Finding* fix = find(r, "timeouts-never-retried");
  ASSERT_NE(fix, nullptr);
  std::vector<DelayRange> ranges = r.imported.layers.at(0).ladder();
  ASSERT_EQ(ranges.size(), 6u);
  double per_try = fix->numbers["per_try_timeout_s"].get<double>();
  double mean_based = (1800 - 945) / 7.0;  // what lint suggested before
  EXPECT_LT(per_try, mean_based);
  // The suggested per-try timeout: its 99th percentile fits, and tightly.
  LadderDistribution with_fix(ranges, 7 * per_try);
  EXPECT_LE(with_fix.quantile(0.99), 1800 + 1e-6);
  EXPECT_NEAR(fix->numbers["p_exceeds_deadline_with_fix"].get<double>(), 0.01, 0.001);
  EXPECT_NEAR(drawn_share_past(ranges, 7 * per_try, 1800), 0.01, 0.0015);
  EXPECT_NEAR(drawn_share_past(ranges, 7 * mean_based, 1800), 0.5, 0.01);
  EXPECT_NE(fix->fix.find(human_duration(per_try)), std::string::npos) << fix->fix;
}

// The per-try rule's fix is sized on the 99th percentile too.
TEST(ConfigsLint, PerTryFixFitsAtThe99thPercentile) {
  LintReport r = lint_configs({{"e.yaml",
                                "route:\n  timeout: 60s\n  retry_policy:\n    retry_on: 5xx\n"
                                "    num_retries: 3\n    per_try_timeout: 14s\n"
                                "    retry_back_off: {base_interval: 4s, max_interval: 16s}\n"}});
  const Finding* f = find(r, "per-try-timeouts-exceed-deadline");
  ASSERT_NE(f, nullptr) << lint_text(r);
  double suggested = f->numbers["per_try_timeout_that_fits_s"].get<double>();
  std::vector<DelayRange> ranges = r.imported.layers.at(0).ladder();
  EXPECT_LE(LadderDistribution(ranges, 4 * suggested).quantile(0.99), 60 + 1e-6);
  EXPECT_GT(f->numbers["p_exceeds_deadline"].get<double>(), 0.01);
}

// Every number in a message is the shortest text that reads back as the same
// value (number_text, {fmt}): the fix used to read "about 2 min
// 2.1430000000000007 s". Message formats of several findings changed with
// Part 3 on purpose (they now state the worst case and the probability).
TEST(ConfigsLint, NumbersPrintInTheirShortestForm) {
  EXPECT_EQ(human_duration(122.143), "2 min 2.143 s");
  EXPECT_EQ(human_duration(3600 + 61.5), "1 h 1 min 1.5 s");
  EXPECT_EQ(number_text(1e6), "1000000");
  EXPECT_EQ(number_text(0.1 + 0.2), "0.30000000000000004");  // a different double
  std::regex noise(R"(\d\.\d*(0000000|9999999)\d)");
  for (const char* file :
       {"envoy/long-ladder.yaml", "envoy/defaults.yaml", "envoy/route.yaml",
        "retrystorm/postmortem.yaml", "grpc/service-config.json", "linkerd/annotations.yaml",
        "istio/virtualservice.yaml", "aws/legacy.ini"}) {
    LintOptions o;
    o.load = 0.7;
    for (const auto& f : lint_configs({fixture(file)}, o).findings) {
      EXPECT_FALSE(std::regex_search(f.message, noise)) << file << ": " << f.message;
      EXPECT_FALSE(std::regex_search(f.fix, noise)) << file << ": " << f.fix;
    }
  }
}

// ------------------------------- issue 11, Part 1: the scenario's own policy

// `lint --scenario` used to write the scenario out as YAML and read back part
// of it: a window budget was lost, so lint warned no-retry-budget.
TEST(ConfigsLint, ScenarioPolicyIsPassedAsItIs) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  set_key(s, "client.budget.kind", std::string("window"));
  LintReport r = lint_scenario(s, "s.yaml");
  EXPECT_EQ(find(r, "no-retry-budget"), nullptr) << lint_text(r);
  EXPECT_EQ(lint_json(r)["layers"][0]["budget"], "window");
  set_key(s, "client.budget.kind", std::string("none"));
  EXPECT_NE(find(lint_scenario(s, "s.yaml"), "no-retry-budget"), nullptr);
  // A stack is linted as its layers.
  Scenario stack = preset_or_throw("primary-failover").scenario;
  set_key(stack, "client.stack_retries", std::string("2,1"));
  LintReport rs = lint_scenario(stack, "stack.yaml");
  ASSERT_EQ(rs.imported.layers.size(), 2u);
  EXPECT_EQ(rs.imported.layers[0].retries, 2);
  EXPECT_NE(find(rs, "retries-at-several-layers"), nullptr);
}

// Issue 11: for a sessions scenario with decorrelated jitter `run` said the
// ladder is longer than the deadline while `lint` summed window sizes and said
// nothing. Both now read ClientPolicy's ladder: on every preset and every
// jitter kind, lint's mean ladder is the one run reports (check_ladder, the
// session report's "Ladder" line), and a ladder run calls longer than the
// deadline is an error in lint.
TEST(ConfigsLint, LintAndRunQuoteTheSameLadder) {
  for (const auto& preset : presets())
    for (const char* jitter : {"none", "full", "equal", "decorrelated", "grpc"}) {
      Scenario s = preset.scenario;
      set_key(s, "client.backoff.jitter", std::string(jitter));
      std::string what = preset.scenario.name + " / " + jitter;
      LadderCheck run = check_ladder(s);
      LintReport r = lint_scenario(s, preset.scenario.name);
      nlohmann::json layers = lint_json(r)["layers"];
      ASSERT_FALSE(layers.empty()) << what;
      for (const auto& layer : layers) {
        if (layer["retries"] != s.client.retries) continue;
        EXPECT_NEAR(layer["ladder"]["mean_s"].get<double>(), run.total_s,
                    1e-9 * std::max(1.0, run.total_s))
            << what;
      }
      if (run.exceeds) {
        const Finding* f = find(r, "ladder-exceeds-deadline");
        ASSERT_NE(f, nullptr) << what;
        EXPECT_EQ(f->severity, Severity::error) << what;
        EXPECT_NEAR(f->numbers["ladder_mean_s"].get<double>(), run.total_s, 1e-6) << what;
      }
    }
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
  EXPECT_EQ(run_bin("export --to traefik").status, 2);  // not a system we write
}

// Issue 10, item 12: `lint --load nan` was silently ignored (CLI::Range lets
// NaN through); out-of-range loads gave CLI11's message. All exit 2 naming
// --load, the value and the range 0 to kMaxLintLoad.
TEST(ConfigsCli, LintLoadOutsideItsRangeIsRefused) {
  std::string file = fixture_path("envoy/route.yaml");
  for (const char* v : {"nan", "inf", "-inf", "-1", "1e308", "100.5"}) {
    BinRun r = run_bin(std::string("lint --load ") + v + " " + file);
    EXPECT_EQ(r.status, 2) << v << ": " << r.err;
    EXPECT_NE(r.err.find("--load: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("allowed 0 to 100"), std::string::npos) << r.err;
  }
  EXPECT_NE(run_bin("lint --load nan " + file).err.find("--load: nan is not a load"),
            std::string::npos);
  for (const char* v : {"0", "100", "0.6"})
    EXPECT_NE(run_bin(std::string("lint --load ") + v + " " + file).status, 2) << v;
  // The library refuses the same range (the server's "load" goes through it).
  LintOptions o;
  o.load = std::nan("");
  try {
    lint_configs({fixture("envoy/route.yaml")}, o);
    ADD_FAILURE() << "load NaN accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("load: nan is not a load; allowed 0 to 100"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(checked_lint_load(kMaxLintLoad, "load"), 100);
}

// Issue 10, item 10: an import the model cannot run exits 2 naming the files.
TEST(ConfigsCli, ImportOfSevenLayersExitsTwo) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rs-seven-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string args = "import";
  for (int i = 1; i <= 7; ++i) {
    fs::path f = dir / ("l" + std::to_string(i) + ".yaml");
    std::ofstream(f) << "retry_policy:\n  retry_on: 5xx\n  num_retries: 1\n";
    args += " " + f.string();
  }
  BinRun r = run_bin(args);
  fs::remove_all(dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("client.layers: 7 is out of range; allowed from 1 to 6"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("l7.yaml"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
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
  nlohmann::json seven = {{"files", nlohmann::json::array()}};
  for (int i = 1; i <= 7; ++i)
    seven["files"].push_back({{"name", "l" + std::to_string(i) + ".yaml"},
                              {"text", "retry_policy:\n  retry_on: 5xx\n  num_retries: 1\n"}});
  ApiAnswer many = handle_api("/api/import", seven.dump());
  EXPECT_EQ(many.status, 400);
  EXPECT_NE(many.body.dump().find("client.layers: 7"), std::string::npos) << many.body.dump();
  ApiAnswer envoy = handle_api("/api/export/envoy", "{}");
  EXPECT_EQ(envoy.body["yaml"], envoy.body["text"]);
  // The number of files is bounded before any is read (400 files of nested
  // aliases took half a minute, each within its own bound).
  nlohmann::json crowd = {{"files", nlohmann::json::array()}};
  for (int i = 0; i < 65; ++i) crowd["files"].push_back({{"text", "retry_policy: {bad"}});
  for (const char* route : {"/api/import", "/api/lint"}) {
    ApiAnswer refused = handle_api(route, crowd.dump());
    EXPECT_EQ(refused.status, 400) << route;
    EXPECT_NE(refused.body.dump().find("files: 65 files"), std::string::npos)
        << refused.body.dump();
  }
}

}  // namespace
}  // namespace retrystorm::configs

namespace retrystorm::configs {
namespace {
using namespace testing;

// Envoy's HTTP/1 pool with the route timeout disabled: a waiting attempt has
// no timer (UpstreamRequest::onPoolReady in source/common/router/
// upstream_request.cc calls setupPerTryTimeout only once a connection is
// ready). With a route timeout, or with no room to wait, nothing to say.
TEST(ConfigsLint, APoolWithoutARouteTimeoutWaitsWithoutBound) {
  auto config = [&](const std::string& timeout, int pending) {
    return envoy_pool_cluster(4, pending) + "route:\n  timeout: " + timeout +
           "\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 2\n";
  };
  LintReport open = lint_configs({{"e.yaml", config("0s", 64)}});
  const Finding* f = nullptr;
  for (const Finding& x : open.findings)
    if (x.rule == "pool-wait-unbounded") f = &x;
  ASSERT_NE(f, nullptr) << lint_text(open);
  EXPECT_EQ(f->severity, Severity::warning);
  EXPECT_NE(f->message.find("4 connections with room for 64 waiting requests"), std::string::npos)
      << f->message;
  EXPECT_EQ(f->numbers["max_pending_requests"], 64);
  for (const auto& [timeout, pending] : {std::pair{"15s", 64}, std::pair{"0s", 0}}) {
    LintReport fine = lint_configs({{"e.yaml", config(timeout, pending)}});
    for (const Finding& x : fine.findings)
      EXPECT_NE(x.rule, "pool-wait-unbounded") << timeout << " " << pending;
  }
}

}  // namespace
}  // namespace retrystorm::configs
