// Issue 11, Part 2: import, export and lint follow what each system's own
// source code does (items 1, 4, 5, 6, 7, 8). Each test names the upstream
// file and function it follows; docs/policies.md has the table per system.
#include <gtest/gtest.h>

#include <algorithm>

#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "systems/export.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;

ImportResult import1_fixture(const std::string& rel) {
  return import_configs({fixture(rel)});
}

ImportResult import_text(const std::string& name, const std::string& text) {
  return import_configs({{name, text}});
}

std::string from_of(const ImportResult& r, const std::string& path) {
  for (const auto& k : r.keys)
    if (k.path == path) return k.from;
  return "";
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

std::vector<std::string> notes_of(const ImportResult& r) {
  std::vector<std::string> out;
  for (const auto& l : r.layers) out.insert(out.end(), l.notes.begin(), l.notes.end());
  return out;
}

const Finding* find(const LintReport& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

Scenario make(std::initializer_list<std::pair<const char*, const char*>> sets) {
  Scenario s = preset_or_throw("order-status").scenario;
  for (const auto& [k, v] : sets) set_key_text(s, k, v);
  return s;
}

Scenario reimport(const Scenario& s, const std::string& system, std::string& text) {
  ExportResult e = export_config(s, system);
  text = e.text;
  Scenario back = s;
  apply_keys(back, import_configs({{"exported-" + system, e.text}}).keys);
  return back;
}

// An Istio VirtualService whose first route has `route_fields` (YAML at the
// route's indentation, e.g. "    retries: {attempts: 2}\n").
std::string virtual_service(const std::string& route_fields) {
  return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\n"
         "spec:\n  hosts: [a]\n  http:\n  - route:\n    - destination: {host: a}\n" +
         route_fields;
}
std::string destination_rule(const std::string& traffic_policy) {
  return "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a}\n"
         "spec:\n  host: a\n  trafficPolicy:\n" +
         traffic_policy;
}
// A Linkerd HTTPRoute with these annotations (YAML lines at 4 spaces) and rules.
std::string http_route(const std::string& annotations, const std::string& rule_fields = "") {
  return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: web\n" +
         (annotations.empty() ? std::string() : "  annotations:\n" + annotations) +
         "spec:\n  rules:\n  - backendRefs:\n    - name: web\n      port: 80\n" + rule_fields;
}

void expect_fixed_cap(const ImportResult& r, double cap) {
  EXPECT_EQ(str(r, "client.budget.kind"), "envoy_concurrency");
  EXPECT_EQ(num(r, "client.budget.ratio"), 0);
  EXPECT_EQ(num(r, "client.budget.min_concurrency"), cap);
}

// ---------------------------------------------------------------- item 1

// Envoy: a cluster without circuit_breakers caps concurrent retries at 3
// (envoyproxy/envoy source/common/upstream/upstream_impl.cc,
//  ClusterInfoImpl::ResourceManagers::load: "max_retries = 3", then the first
//  threshold of the priority). The model's form of that cap is the
//  envoy_concurrency budget with no share of traffic (docs/policies.md).
TEST(ConfigsEnvoyDefaults, RouteWithoutBreakersGetsDefaultRetryCap) {
  auto r = import_text("route.yaml", "retry_policy: {retry_on: 5xx, num_retries: 3}\n");
  expect_fixed_cap(r, 3);
  EXPECT_NE(from_of(r, "client.budget.kind").find("max_retries"), std::string::npos);
  EXPECT_NE(from_of(r, "client.budget.kind").find("default 3"), std::string::npos);
}

TEST(ConfigsEnvoyDefaults, ThresholdWithoutMaxRetriesGetsDefault) {
  expect_fixed_cap(import_text("c.yaml",
                               "circuit_breakers: {thresholds: [{priority: DEFAULT, "
                               "max_connections: 100}]}\n"
                               "retry_policy: {retry_on: 5xx, num_retries: 2}\n"),
                   3);
  // Only a HIGH threshold: the DEFAULT priority keeps Envoy's defaults.
  expect_fixed_cap(import_text("h.yaml",
                               "circuit_breakers: {thresholds: [{priority: HIGH, "
                               "max_retries: 50}]}\n"
                               "retry_policy: {retry_on: 5xx, num_retries: 2}\n"),
                   3);
  // Envoy reads the first threshold of a priority.
  expect_fixed_cap(import_text("two.yaml",
                               "circuit_breakers: {thresholds: [{max_retries: 7}, "
                               "{max_retries: 9}]}\n"
                               "retry_policy: {retry_on: 5xx, num_retries: 2}\n"),
                   7);
}

// An empty retry_budget leaves budget_percent and min_retry_concurrency unset,
// and RetryBudgetImpl::useRetryBudget (source/common/upstream/
// resource_manager_impl.h) is then false: max_retries applies.
TEST(ConfigsEnvoyDefaults, EmptyRetryBudgetFallsBackToMaxRetries) {
  auto r = import_text("c.yaml",
                       "circuit_breakers: {thresholds: [{retry_budget: {}}]}\n"
                       "retry_policy: {retry_on: 5xx, num_retries: 2}\n");
  expect_fixed_cap(r, 3);
  EXPECT_TRUE(any_contains(notes_of(r), "Envoy then ignores it")) << notes_of(r).size();
  // With one field set the budget is used, the other at its default.
  auto b = import_text("b.yaml",
                       "circuit_breakers: {thresholds: [{retry_budget: "
                       "{min_retry_concurrency: 5}}]}\n"
                       "retry_policy: {retry_on: 5xx, num_retries: 2}\n");
  EXPECT_DOUBLE_EQ(num(b, "client.budget.ratio"), 0.2);
  EXPECT_EQ(num(b, "client.budget.min_concurrency"), 5);
}

// Istio lifts the limit: every outbound cluster it builds has
// max_retries 4294967295 (istio/istio pilot/pkg/networking/core/
// cluster_traffic_policy.go getDefaultCircuitBreakerThresholds: MaxRetries
// math.MaxUint32); connectionPool.http.maxRetries replaces it only when > 0
// (applyConnectionPool), and minRetryConcurrency 0 counts as 3 (applyRetryBudget).
TEST(ConfigsEnvoyDefaults, IstioWithoutRetryBudgetIsUnbounded) {
  const std::string vs = virtual_service("    retries: {attempts: 2}\n");
  EXPECT_EQ(str(import_text("vs.yaml", vs), "client.budget.kind"), "none");
  auto zero = import_configs(
      {{"vs.yaml", vs},
       {"dr.yaml", destination_rule("    connectionPool: {http: {maxRetries: 0}}\n")}});
  EXPECT_EQ(str(zero, "client.budget.kind"), "none");
  auto capped = import_configs(
      {{"vs.yaml", vs},
       {"dr.yaml", destination_rule("    connectionPool: {http: {maxRetries: 6}}\n")}});
  expect_fixed_cap(capped, 6);
  auto minc = import_configs(
      {{"vs.yaml", vs},
       {"dr.yaml", destination_rule("    retryBudget: {percent: 10, minRetryConcurrency: 0}\n")}});
  EXPECT_EQ(num(minc, "client.budget.min_concurrency"), 3);
}

// Lint: Envoy without a retry_budget is not unbounded; it states the cap of
// 3 retries in flight per instance (RetryStateImpl::shouldRetry,
// source/common/router/retry_state_impl.cc: canCreate() before the backoff,
// overflow returned at once).
TEST(ConfigsEnvoyDefaults, LintDoesNotClaimUnboundedRetries) {
  LintReport r = lint_configs({{"route.yaml", "retry_policy: {retry_on: 5xx, num_retries: 3}\n"}});
  const Finding* f = find(r, "no-retry-budget");
  ASSERT_NE(f, nullptr) << lint_text(r);
  EXPECT_EQ(f->message.find("every failure is retried"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("3 retries may be in flight per Envoy instance"), std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("returned at once"), std::string::npos) << f->message;
  // With max_retries lifted it is unbounded, and lint says so.
  LintReport u = lint_configs({{"route.yaml",
                                "retry_policy: {retry_on: 5xx, num_retries: 3}\n"
                                "circuit_breakers: {thresholds: [{max_retries: 4294967295}]}\n"}});
  ASSERT_NE(find(u, "no-retry-budget"), nullptr);
  // 5xx retries answers (503, refused, reset) but no timeout: no per_try_timeout.
  EXPECT_NE(find(u, "no-retry-budget")
                ->message.find("every failure of these classes is retried 3 times (503, refused, "
                               "reset)"),
            std::string::npos)
      << find(u, "no-retry-budget")->message;
}

// Export: a scenario without a budget is written with max_retries lifted, as
// Istio does, since a cluster without circuit_breakers would mean 3.
TEST(ConfigsEnvoyDefaults, ExportWithoutBudgetRoundTrips) {
  Scenario s = make({{"client.retries", "3"}, {"client.budget.kind", "none"}});
  std::string text;
  Scenario b = reimport(s, "envoy", text);
  EXPECT_NE(text.find("max_retries: 4294967295"), std::string::npos) << text;
  EXPECT_EQ(b.client.budget.kind, BudgetKind::none) << text;
  Scenario cap = make({{"client.budget.kind", "envoy_concurrency"},
                       {"client.budget.ratio", "0"},
                       {"client.budget.min_concurrency", "3"}});
  Scenario c = reimport(cap, "envoy", text);
  EXPECT_EQ(c.client.budget.kind, BudgetKind::envoy_concurrency) << text;
  EXPECT_EQ(c.client.budget.min_concurrency, 3) << text;
}

// ---------------------------------------------------------------- item 4

// Linkerd ServiceProfile: no default route timeout since 2.9
// (linkerd/linkerd2 controller/api/destination/profile_translator.go toRoute:
//  "No default timeout", commit 6d67b8444, "profiles: Eliminate default timeout").
TEST(ConfigsLinkerdProfile, WithoutTimeoutHasNoDeadline) {
  auto r = import1_fixture("linkerd/sp-defaults.yaml");
  EXPECT_EQ(num(r, "client.deadline_s"), 0);
  EXPECT_FALSE(has_key(r, "client.timeout_s"));
  EXPECT_GT(num(r, "client.retries"), 0);
}

// The proxy drops a budget with a ttl outside [1 s, 60 s] or a retryRatio
// outside [0, 1000], and the route never retries (linkerd/linkerd2-proxy
// linkerd/service-profiles/src/proto.rs convert_retry_budget; a ttl of 0
// reaches it as missing: toDuration in profile_translator.go).
TEST(ConfigsLinkerdProfile, BudgetTheProxyDropsDisablesRetries) {
  auto profile = [](const std::string& ratio, const std::string& ttl) {
    return "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\n"
           "spec:\n  routes:\n  - name: all\n    condition: {pathRegex: .*}\n"
           "    isRetryable: true\n  retryBudget:\n    retryRatio: " +
           ratio + "\n    minRetriesPerSecond: 10\n    ttl: " + ttl + "\n";
  };
  for (const auto& [ratio, ttl] : std::vector<std::pair<std::string, std::string>>{
           {"0.2", "90s"}, {"0.2", "500ms"}, {"0.2", "0s"}, {"1001", "10s"}, {"-0.5", "10s"}}) {
    ImportResult r = import_configs({{"sp.yaml", profile(ratio, ttl)}}, false);
    EXPECT_EQ(num(r, "client.retries"), 0) << ratio << " " << ttl;
    EXPECT_TRUE(any_contains(r.warnings, "never retries")) << ratio << " " << ttl;
  }
  auto ok = import_text("sp.yaml", profile("0.2", "60s"));
  EXPECT_GT(num(ok, "client.retries"), 0);
  EXPECT_TRUE(ok.warnings.empty());
}

// How tower's TpsBudget reads the numbers (tower-rs/tower
// tower/src/retry/budget/tps_budget.rs TpsBudget::new): a retry withdraws
// floor(1/r) deposits, so 0.3 acts as 1/3; the reserve counts whole seconds
// of ttl. The import keeps what is written and says so.
TEST(ConfigsLinkerdProfile, EffectiveRatioAndWholeSecondsAreNoted) {
  auto r = import_text("sp.yaml",
                       "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: "
                       "a}\nspec:\n  routes:\n  - name: all\n    condition: {pathRegex: .*}\n"
                       "    isRetryable: true\n  retryBudget: {retryRatio: 0.3, "
                       "minRetriesPerSecond: 10, ttl: 1500ms}\n");
  EXPECT_DOUBLE_EQ(num(r, "client.budget.ratio"), 0.3);
  EXPECT_TRUE(any_contains(notes_of(r), "retryRatio 0.3 acts as 0.333")) << notes_of(r).size();
  EXPECT_TRUE(any_contains(notes_of(r), "10 x 1 retries, not x 1.5"));
}

// Export: a scenario without a deadline writes no route timeout (none is
// Linkerd's default since 2.9), and a ttl the proxy would drop is clamped.
TEST(ConfigsLinkerdProfile, ExportWithoutDeadlineWritesNoTimeout) {
  Scenario s = make({{"client.retries", "2"},
                     {"client.deadline_s", "0"},
                     {"client.budget.kind", "ratio_ttl"},
                     {"client.budget.ratio", "0.2"},
                     {"client.budget.ttl_s", "120"}});
  std::string text;
  Scenario b = reimport(s, "linkerd", text);
  EXPECT_EQ(text.find("    timeout:"), std::string::npos) << text;
  EXPECT_EQ(text.find("10s default"), std::string::npos) << text;
  EXPECT_EQ(b.client.deadline_s, 0) << text;
  EXPECT_NE(text.find("ttl: 1m"), std::string::npos) << text;
  EXPECT_EQ(b.client.budget.ttl_s, 60);
  EXPECT_GT(b.client.retries, 0) << text;
}

// ---------------------------------------------------------------- item 5

// Linkerd retry annotations (linkerd/linkerd2 policy-controller/k8s/index/src/
// outbound/index/http.rs parse_http_retry: a limit of 0 counts as left out;
// any of /http, /grpc, /limit, /timeout makes a policy with limit 1 by default).
TEST(ConfigsLinkerdAnnotations, LimitZeroWithConditionMeansOne) {
  auto r = import_text("r.yaml", http_route("    retry.linkerd.io/http: 5xx\n"
                                            "    retry.linkerd.io/limit: \"0\"\n"));
  EXPECT_EQ(num(r, "client.retries"), 1);
}

TEST(ConfigsLinkerdAnnotations, LimitZeroAloneMeansNone) {
  auto r = import_text("r.yaml", http_route("    retry.linkerd.io/limit: \"0\"\n"));
  EXPECT_EQ(num(r, "client.retries"), 0);
  EXPECT_TRUE(any_contains(r.warnings, "makes no retry policy"));
}

// /timeout alone: one retry, of timed-out attempts (and refused streams,
// fail-fast), no HTTP status (RetryPolicy::is_retryable, linkerd2-proxy
// linkerd/app/outbound/src/http/logical/policy/route/retry.rs).
TEST(ConfigsLinkerdAnnotations, TimeoutAloneStillRetries) {
  auto r = import_text("r.yaml", http_route("    retry.linkerd.io/timeout: 2s\n"));
  EXPECT_EQ(num(r, "client.retries"), 1);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(num(r, "client.timeout_s"), 2);
  EXPECT_TRUE(any_contains(notes_of(r), "no response status is retried"));
  auto limit = import_text("r.yaml", http_route("    retry.linkerd.io/limit: \"3\"\n"));
  EXPECT_EQ(num(limit, "client.retries"), 3);
  EXPECT_FALSE(flag(limit, "client.retry_on_timeout"));
}

// The backoff: 25 ms doubling to 250 ms, jitter 1 (convert_retry,
// policy-controller/grpc/src/outbound/http.rs); retry n waits
// base + min(U x base, 250 ms - base), base = min(25 ms x 2^(n-1), 250 ms)
// (linkerd2-proxy linkerd/exp-backoff/src/lib.rs ExponentialBackoff). Read as
// equal jitter on windows of 50 ms: exact for retries 1 to 3, same worst case.
TEST(ConfigsLinkerdAnnotations, BackoffIsLinkerds) {
  auto r = import_text("r.yaml", http_route("    retry.linkerd.io/http: 5xx\n"
                                            "    retry.linkerd.io/limit: \"5\"\n"));
  EXPECT_EQ(str(r, "client.backoff.jitter"), "equal");
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.05);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.cap_s"), 0.25);
  EXPECT_EQ(num(r, "client.backoff.multiplier"), 2);
  std::vector<DelayRange> ladder = r.layers.at(0).ladder();
  ASSERT_EQ(ladder.size(), 5u);
  EXPECT_DOUBLE_EQ(ladder[0].low_s, 0.025);
  EXPECT_DOUBLE_EQ(ladder[0].high_s, 0.05);
  EXPECT_DOUBLE_EQ(ladder[2].low_s, 0.1);
  EXPECT_DOUBLE_EQ(ladder[2].high_s, 0.2);
  for (const DelayRange& d : ladder) EXPECT_LE(d.high_s, 0.25);
  EXPECT_TRUE(any_contains(notes_of(r), "from the 4th retry"));
}

// The request timeout: the annotation, else the HTTPRoute rule's
// timeouts.request, 0 = none (convert_gateway_rule, index/http.rs; GEP-1742).
TEST(ConfigsLinkerdAnnotations, HttpRouteTimeoutsRequest) {
  const std::string rule = "    timeouts:\n      request: 5s\n";
  auto r = import_text("r.yaml", http_route("    retry.linkerd.io/http: 5xx\n", rule));
  EXPECT_EQ(num(r, "client.deadline_s"), 5);
  auto both = import_text("r.yaml", http_route("    retry.linkerd.io/http: 5xx\n"
                                               "    timeout.linkerd.io/request: 3s\n",
                                               rule));
  EXPECT_EQ(num(both, "client.deadline_s"), 3);
  auto zero = import_text("r.yaml", http_route("    retry.linkerd.io/http: 5xx\n",
                                               "    timeouts:\n      request: 0s\n"));
  EXPECT_EQ(num(zero, "client.deadline_s"), 0);
  // A route without any retry annotation does not retry; its timeout is read.
  auto bare = import_text("r.yaml", http_route("", rule));
  EXPECT_EQ(num(bare, "client.retries"), 0);
  EXPECT_EQ(num(bare, "client.deadline_s"), 5);
}

// Export: 0 retries writes no retry.linkerd.io annotation (a "0" limit with
// any other retry annotation would mean 1 retry), and re-imports as 0.
TEST(ConfigsLinkerdAnnotations, ExportZeroRetriesWritesNoRetryAnnotations) {
  for (const char* deadline : {"0", "8"}) {
    Scenario s = make({{"client.retries", "0"}, {"client.deadline_s", deadline}});
    std::string text;
    Scenario b = reimport(s, "linkerd", text);
    EXPECT_EQ(text.find("retry.linkerd.io/"), std::string::npos) << text;
    EXPECT_EQ(b.client.retries, 0) << text;
    EXPECT_EQ(b.client.deadline_s, s.client.deadline_s) << text;
  }
  // Linkerd's own backoff reads back without a note.
  Scenario l = make({{"client.retries", "2"}});
  std::string text;
  Scenario lb = reimport(l, "linkerd", text);
  ExportResult again = export_config(lb, "linkerd");
  EXPECT_FALSE(any_contains(again.notes, "backoff")) << again.text;
  EXPECT_FALSE(any_contains(again.notes, "at once")) << again.text;
}

// ---------------------------------------------------------------- item 6

// Istio: a retries block without attempts (or 0) disables retries; only a
// missing block gets the default 2 (istio/istio pilot/pkg/networking/core/
// route/retry/retry.go ConvertPolicy: "if in.Attempts <= 0 ... explicitly
// disabling the retry policy"; no block: the default policy, NumRetries 2,
// RetryOn connect-failure,refused-stream,unavailable,cancelled).
TEST(ConfigsIstioRetries, BlockWithoutAttemptsDisables) {
  auto r = import_text("vs.yaml", virtual_service("    retries: {perTryTimeout: 2s}\n"));
  EXPECT_EQ(num(r, "client.retries"), 0);
  auto zero = import_text("vs.yaml", virtual_service("    retries: {attempts: 0}\n"));
  EXPECT_EQ(num(zero, "client.retries"), 0);
  auto none = import_text("vs.yaml", virtual_service(""));
  EXPECT_EQ(num(none, "client.retries"), 2);
  EXPECT_TRUE(any_contains(notes_of(none), "connect-failure, refused-stream, unavailable"));
}

// retries.backoff (Istio 1.26+) is Envoy's base_interval; Envoy's
// max_interval is then 10 x base (ConvertPolicy: RetryBackOff{BaseInterval}).
TEST(ConfigsIstioRetries, BackoffSetsBaseAndTenfoldCap) {
  auto r = import_text("vs.yaml", virtual_service("    retries: {attempts: 3, backoff: 100ms}\n"));
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.1);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.cap_s"), 1);
  EXPECT_EQ(str(r, "client.backoff.jitter"), "full");
}

TEST(ConfigsIstioRetries, ExportWritesBackoffAndLintSuggestsIt) {
  Scenario s = make({{"client.retries", "3"},
                     {"client.backoff.base_s", "0.1"},
                     {"client.backoff.cap_s", "1"},
                     {"client.backoff.multiplier", "2"},
                     {"client.backoff.jitter", "full"}});
  std::string text;
  Scenario b = reimport(s, "istio", text);
  EXPECT_NE(text.find("backoff: 100ms"), std::string::npos) << text;
  EXPECT_EQ(text.find("cannot be expressed"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(b.client.backoff.base_s, 0.1);
  EXPECT_DOUBLE_EQ(b.client.backoff.cap_s, 1);
  // Lint never says Istio has no backoff; its ladder fix names retries.backoff.
  LintReport r = lint_configs({{"vs.yaml", virtual_service("    timeout: 1s\n    retries: "
                                                           "{attempts: 3, perTryTimeout: 1s, "
                                                           "retryOn: 5xx, backoff: 400ms}\n")}});
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.message.find("no backoff"), std::string::npos) << f.message;
    EXPECT_EQ(f.fix.find("no backoff"), std::string::npos) << f.fix;
  }
  const Finding* ladder = find(r, "ladder-exceeds-deadline");
  ASSERT_NE(ladder, nullptr) << lint_text(r);
  EXPECT_NE(ladder->fix.find("retries.backoff"), std::string::npos) << ladder->fix;
}

// budgetInterval arrived in Istio 1.31 (istio/api commit 7eca3b2a), not 1.27.
TEST(ConfigsIstioRetries, BudgetIntervalNoteNamesIstio131) {
  auto r = import_configs({{"vs.yaml", virtual_service("    retries: {attempts: 2}\n")},
                           {"dr.yaml", destination_rule("    retryBudget: {percent: 10, "
                                                        "budgetInterval: 10s}\n")}});
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_TRUE(any_contains(notes_of(r), "budgetInterval (Istio 1.31+) is not modelled"));
}

// ---------------------------------------------------------------- item 7

// botocore's default retry mode is legacy (boto/botocore botocore/
// configprovider.py: _DEFAULT_RETRY_MODE = 'standard' if NEW_RETRIES_ENABLED
// else 'legacy'); legacy waits U(0, 1) x 2^(n-1) s with no cap
// (botocore/retryhandler.py delay_exponential; botocore/data/_retry.json
// __default__: max_attempts 5, base "rand", growth_factor 2).
TEST(ConfigsAwsModes, LeftOutIsLegacyWithAWarningAndLegacyHasNoCap) {
  auto d = import_text("config", "[default]\nregion = eu-west-1\n");
  EXPECT_EQ(num(d, "client.retries"), 4);
  EXPECT_EQ(str(d, "client.budget.kind"), "none");
  EXPECT_EQ(num(d, "client.backoff.cap_s"), 0);
  EXPECT_TRUE(any_contains(d.warnings, "retry_mode left out: read as legacy"));
  auto l = import_text("config", "[default]\nretry_mode = legacy\n");
  EXPECT_EQ(num(l, "client.backoff.cap_s"), 0);
  EXPECT_EQ(num(l, "client.retries"), 4);
  // Standard mode: U(0, min(2^(n-1), 20)) s (botocore/retries/standard.py
  // ExponentialBackoff.delay_amount).
  auto s = import_text("config", "[default]\nretry_mode = standard\n");
  EXPECT_EQ(num(s, "client.backoff.cap_s"), 20);
  EXPECT_EQ(num(s, "client.backoff.base_s"), 1);
  EXPECT_TRUE(s.warnings.empty());
}

// The export never writes retry_mode = legacy: aws-sdk-go-v2 and other SDKs
// refuse it. A scenario without a budget gets standard and a note.
TEST(ConfigsAwsModes, ExportNeverWritesLegacy) {
  for (const auto& p : exportable_presets())
    for (const char* budget : {"none", "aws_quota", "window"}) {
      Scenario s = p.scenario;
      set_key_text(s, "client.budget.kind", budget);
      ExportResult e = export_config(s, "aws");
      EXPECT_EQ(e.text.find("legacy\n"), std::string::npos) << e.text;
      EXPECT_NE(e.text.find("retry_mode = standard"), std::string::npos) << e.text;
      if (std::string(budget) == "none") {
        EXPECT_TRUE(any_contains(e.notes, "this file adds one")) << e.text;
      }
    }
}

// ---------------------------------------------------------------- item 8

// perAttemptRecvTimeout is applied only by gRPC C-core (grpc/grpc
// src/core/client_channel/retry_filter_legacy_call_data.cc CallAttempt: a
// timer per attempt); grpc-go does not parse it (no field in
// service_config.go) and grpc-java stores RetryPolicy.perAttemptRecvTimeoutNanos
// but RetriableStream never reads it. Import reads it as C-core runs it,
// with a note; lint warns.
TEST(ConfigsGrpcVersions, PerAttemptRecvTimeoutIsCCoreOnly) {
  const std::string config =
      R"({"methodConfig":[{"name":[{}],"timeout":"10s","retryPolicy":{"maxAttempts":3,
 "initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,
 "retryableStatusCodes":["UNAVAILABLE"],"perAttemptRecvTimeout":"2s"}}]})";
  auto r = import_text("sc.json", config);
  EXPECT_EQ(num(r, "client.timeout_s"), 2);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_TRUE(any_contains(notes_of(r), "grpc-go and grpc-java ignore it"));
  LintReport l = lint_configs({{"sc.json", config}});
  const Finding* f = find(l, "per-attempt-timeout-c-core-only");
  ASSERT_NE(f, nullptr) << lint_text(l);
  EXPECT_EQ(f->severity, Severity::warning);
  EXPECT_NE(f->message.find("grpc-go and grpc-java ignore it"), std::string::npos);
  EXPECT_EQ(
      find(lint_configs({fixture("grpc/service-config.json")}), "per-attempt-timeout-c-core-only"),
      nullptr);
}

// Jitter: read as C-core (and grpc-go 1.69+, grpc-java 1.71+) draws it,
// backoff x U(0.8, 1.2); older grpc-go (stream.go csAttempt.shouldRetry
// before commit 4c07bca2) and grpc-java (RetriableStream.intervalWithJitter
// before commit 44e92e2c) drew U(0, backoff): the import and export say so.
TEST(ConfigsGrpcVersions, JitterNotesNameTheOlderReleases) {
  auto r = import1_fixture("grpc/service-config.json");
  EXPECT_EQ(str(r, "client.backoff.jitter"), "grpc");
  EXPECT_TRUE(any_contains(notes_of(r), "older grpc-go and grpc-java draw U(0, backoff)"));
  ExportResult e =
      export_config(make({{"client.retries", "2"}, {"client.backoff.jitter", "full"}}), "grpc");
  EXPECT_TRUE(any_contains(e.notes, "grpc-go before 1.69 and grpc-java before 1.71")) << e.text;
}

}  // namespace
}  // namespace retrystorm::configs
