// What each real system retries, as its own source decides it: cases where
// retrystorm read a configuration differently from the system that runs it.
// Each test cites the upstream file and function it pins.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "configs_helpers.hpp"
#include "model/keys.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;

ImportResult import_text(const std::string& name, const std::string& text) {
  return import_configs({{name, text}});
}

std::string error_of(const std::string& name, const std::string& text) {
  try {
    import_text(name, text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ---- Envoy ----------------------------------------------------------------

// A route's own retry_policy wins over its virtual host's, and the timeout is
// the route's (RouteAction): source/common/router/config_impl.cc,
// RouteEntryImplBase::buildRetryPolicy ("Route specific policy wins") and
// buildHedgePolicy. The virtual host's policy was read, with Envoy's default
// 15 s as the deadline.
TEST(EnvoySemantics, ARoutesOwnPolicyAndTimeoutWinOverItsVirtualHosts) {
  const std::string vhost_only =
      "virtual_hosts:\n- name: backend\n  domains: [\"*\"]\n  retry_policy:\n"
      "    retry_on: 5xx\n    num_retries: 3\n    per_try_timeout: 1s\n  routes:\n"
      "  - match: {prefix: \"/\"}\n    route:\n      cluster: backend\n      timeout: 2s\n";
  auto a = import_text("vh.yaml", vhost_only);
  EXPECT_EQ(num(a, "client.retries"), 3);
  EXPECT_EQ(num(a, "client.deadline_s"), 2);
  const std::string both =
      "virtual_hosts:\n- name: backend\n  domains: [\"*\"]\n  retry_policy:\n"
      "    retry_on: 5xx\n    num_retries: 5\n  routes:\n  - match: {prefix: \"/\"}\n"
      "    route:\n      cluster: backend\n      timeout: 2s\n      retry_policy:\n"
      "        retry_on: connect-failure\n        num_retries: 1\n";
  auto b = import_text("vh2.yaml", both);
  EXPECT_EQ(num(b, "client.retries"), 1);
  EXPECT_EQ(str(b, "client.retry_on"), "refused");
  EXPECT_EQ(num(b, "client.deadline_s"), 2);
  // A virtual host's hedge_policy applies to its routes that have none.
  const std::string hedged =
      "virtual_hosts:\n- name: backend\n  domains: [\"*\"]\n  hedge_policy:\n"
      "    hedge_on_per_try_timeout: true\n  routes:\n  - match: {prefix: \"/\"}\n"
      "    route:\n      cluster: backend\n      timeout: 5s\n      retry_policy:\n"
      "        retry_on: connect-failure\n        num_retries: 2\n        per_try_timeout: 1s\n";
  auto c = import_text("vh3.yaml", hedged);
  EXPECT_EQ(str(c, "client.hedging"), "envoy");
  // The virtual host's hedge_policy beside its own retry_policy (the
  // resolution rewrote the virtual host's node and lost it), and the first
  // route that forwards, after a redirect.
  const std::string vhost_hedge =
      "virtual_hosts:\n- name: backend\n  domains: [\"*\"]\n"
      "  retry_policy: {retry_on: 5xx, num_retries: 4, per_try_timeout: 0.5s}\n"
      "  hedge_policy: {hedge_on_per_try_timeout: true}\n  routes:\n"
      "  - match: {prefix: /old}\n    redirect: {path_redirect: /new}\n"
      "  - match: {prefix: /}\n    route: {cluster: backend, timeout: 2s}\n";
  auto d = import_text("vh6.yaml", vhost_hedge);
  EXPECT_EQ(str(d, "client.hedging"), "envoy");
  EXPECT_EQ(num(d, "client.deadline_s"), 2);
}

// retry_on's gRPC and reset conditions retry failures too
// (source/common/router/retry_state_impl.cc): wouldRetryFromHeaders retries a
// grpc-status UNAVAILABLE or RESOURCE_EXHAUSTED answer, wouldRetryFromReset a
// reset before the request started and a refused stream. They read as
// retrying nothing, and lint found nothing to say.
TEST(EnvoySemantics, GrpcAndResetConditionsRetryTheirFailures) {
  auto retry_on = [](const std::string& conditions) {
    return str(
        import_text("r.yaml", "route:\n  timeout: 5s\n  retry_policy:\n    retry_on: \"" +
                                  conditions + "\"\n    num_retries: 3\n    per_try_timeout: 1s\n"),
        "client.retry_on");
  };
  EXPECT_EQ(retry_on("unavailable,resource-exhausted"), "503,429");
  EXPECT_EQ(retry_on("reset-before-request"), "refused");
  EXPECT_EQ(retry_on("refused-stream"), "refused");
  // Beside an HTTP answer condition the route carries HTTP, where a gRPC
  // condition never fires (Istio's default retryOn for every route).
  EXPECT_EQ(retry_on("connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"),
            "refused");
}

const Finding* find_rule(const LintReport& r, const std::string& rule) {
  for (const Finding& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

// The per-try timeout fix replaces a `per_try_timeout: 0s` (Envoy: disabled)
// instead of adding a second key (the edited file was refused as a YAML key
// given twice), and it adds reset to retry_on, as the simulated fix assumes
// (5xx would also retry every 503 answer; wouldRetryFromReset retries a
// per-try timeout with RETRY_ON_RESET).
TEST(EnvoySemantics, ThePerTryTimeoutFixReplacesAZeroAndAddsReset) {
  const std::string text =
      "route:\n  timeout: 10s\n  retry_policy:\n    retry_on: \"connect-failure,refused-stream\"\n"
      "    num_retries: 2\n    per_try_timeout: 0s\n";
  LintReport r = lint_configs({{"pt0.yaml", text}});
  const Finding* f = find_rule(r, "timeouts-never-retried");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->edit.has_value());
  const std::string& edited = f->edit->text;
  EXPECT_EQ(edited.find("per_try_timeout: 0s"), std::string::npos) << edited;
  EXPECT_NE(edited.find("connect-failure,refused-stream,reset"), std::string::npos) << edited;
  auto again = import_text("pt0.yaml", edited);  // the target accepts it: one key each
  EXPECT_TRUE(flag(again, "client.retry_on_timeout"));
  EXPECT_EQ(str(again, "client.retry_on"), "refused,reset");
  bool simulated = false;
  for (const auto& [path, value] : f->fix_keys)
    simulated =
        simulated || (path == "client.retry_on" && std::get<std::string>(value) == "refused,reset");
  EXPECT_TRUE(simulated);
}

// num_retries and max_retries are UInt32Value: 4294967296 is refused, and
// the range said is Envoy's; a duration Envoy refuses names Envoy's form.
TEST(EnvoySemantics, UInt32FieldsAndDurationFormsAreEnvoys) {
  std::string big = error_of("b.yaml",
                             "route:\n  retry_policy:\n    retry_on: 5xx\n"
                             "    num_retries: 4294967296\n");
  EXPECT_NE(big.find("4294967295"), std::string::npos) << big;
  std::string unit = error_of("d.yaml",
                              "route:\n  retry_policy:\n    retry_on: 5xx\n"
                              "    per_try_timeout: 1x\n");
  EXPECT_NE(unit.find("write e.g. 0.1s"), std::string::npos) << unit;
}

// Envoy keeps durations in whole milliseconds (PROTOBUF_GET_MS_OR_DEFAULT):
// a per-try timeout below 1 ms is none, and a backoff base below 1 ms is
// 1 ms ("Values less than 1 ms are rounded up to 1 ms", route_components.proto).
// A per_try_idle_timeout ends an attempt as a per-try timeout does
// (Filter::onPerTryIdleTimeout -> onPerTryTimeoutCommon), and RetryPolicy has
// no timeout field under a route.
TEST(EnvoySemantics, MillisecondsIdleTimeoutsAndTheRetryPolicysFields) {
  auto tiny = import_text("t.yaml",
                          "route:\n  timeout: 10s\n  retry_policy:\n    retry_on: 5xx\n"
                          "    num_retries: 2\n    per_try_timeout: 0.0000001s\n"
                          "    retry_back_off: {base_interval: 0.0004s}\n");
  EXPECT_EQ(num(tiny, "client.timeout_s"), 10);  // no per-try timeout: the route's
  EXPECT_FALSE(flag(tiny, "client.retry_on_timeout"));
  EXPECT_EQ(num(tiny, "client.backoff.base_s"), 0.001);
  auto idle = import_text("i.yaml",
                          "route:\n  timeout: 10s\n  retry_policy:\n    retry_on: 5xx\n"
                          "    num_retries: 3\n    per_try_idle_timeout: 1s\n");
  EXPECT_EQ(num(idle, "client.timeout_s"), 1);
  EXPECT_TRUE(flag(idle, "client.retry_on_timeout"));
  auto both = import_text("b.yaml",
                          "route:\n  timeout: 10s\n  retry_policy:\n    retry_on: 5xx\n"
                          "    num_retries: 3\n    per_try_timeout: 0.5s\n"
                          "    per_try_idle_timeout: 2s\n");
  EXPECT_EQ(num(both, "client.timeout_s"), 0.5);
  std::string field = error_of("f.yaml",
                               "route:\n  retry_policy:\n    retry_on: 5xx\n"
                               "    num_retries: 3\n    timeout: 2s\n");
  EXPECT_NE(field.find("timeout"), std::string::npos) << field;
  // A route at the file's root has no retry_policy timeout either.
  EXPECT_NE(error_of("g.yaml", "retry_policy: {retry_on: 5xx, num_retries: 3, timeout: 2s}\n")
                .find("RetryPolicy has no timeout field"),
            std::string::npos);
  // Both backoff bounds below 1 ms are 1 ms (RetryPolicyImpl rounds them up).
  auto both_tiny = import_text("m.yaml",
                               "route:\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 2\n"
                               "    retry_back_off: {base_interval: 0.0004s, max_interval: "
                               "0.0008s}\n");
  EXPECT_EQ(num(both_tiny, "client.backoff.cap_s"), 0.001);
  // A retry policy alone may say its route's timeout.
  EXPECT_EQ(num(import_text("p.yaml", "retry_on: 5xx\nnum_retries: 3\ntimeout: 2s\n"),
                "client.deadline_s"),
            2);
}

// ---- Linkerd --------------------------------------------------------------

std::string httproute(const std::string& annotations, const std::string& kind = "HTTPRoute") {
  return "apiVersion: gateway.networking.k8s.io/v1\nkind: " + kind +
         "\nmetadata:\n  name: orders\n  annotations:\n" + annotations +
         "spec:\n  parentRefs: [{name: orders, kind: Service, group: core, port: 80}]\n";
}

// Annotation durations are one whole number and a unit (parse_duration,
// linkerd2 policy-controller/k8s/index/src/outbound/index.rs): export wrote
// "1.5s" and "1m30s", which Linkerd refuses, and import read them.
TEST(LinkerdSemantics, AnnotationDurationsAreWholeNumbersWithOneUnit) {
  Scenario s;
  set_key(s, "step_s", 0.5);
  set_key(s, "client.timeout_s", 1.5);
  set_key(s, "client.deadline_s", 90.0);
  set_key(s, "client.retries", 2.0);
  set_key(s, "client.retry_on_timeout", true);
  const std::string text = export_config(s, "linkerd").text;
  EXPECT_NE(text.find("retry.linkerd.io/timeout: 1500ms"), std::string::npos) << text;
  EXPECT_NE(text.find("timeout.linkerd.io/request: 90s"), std::string::npos) << text;
  auto back = import_text("ld.yaml", text);
  EXPECT_EQ(num(back, "client.timeout_s"), 1.5);
  EXPECT_EQ(num(back, "client.deadline_s"), 90);
  for (const char* refused : {"1.5s", "1m30s", "100us", "5"}) {
    std::string e =
        error_of("bad.yaml",
                 httproute("    retry.linkerd.io/limit: \"2\"\n    retry.linkerd.io/timeout: \"" +
                           std::string(refused) + "\"\n"));
    EXPECT_NE(e.find("one whole number and one unit"), std::string::npos) << refused << ": " << e;
  }
  auto day = import_text("day.yaml", httproute("    timeout.linkerd.io/request: 1d\n"));
  EXPECT_EQ(num(day, "client.deadline_s"), 86400);
}

// retry.linkerd.io/http: "5xx" and "gateway-error" in any case (parse_http_retry,
// .../outbound/index/http.rs); "gateway-error" read as no 503 retried.
TEST(LinkerdSemantics, GatewayErrorAndUpperCaseFiveXxRetry503) {
  for (const char* http : {"gateway-error", "5XX", "500-599", "503"}) {
    auto r = import_text("r.yaml", httproute("    retry.linkerd.io/http: \"" + std::string(http) +
                                             "\"\n    retry.linkerd.io/limit: \"3\"\n"));
    EXPECT_EQ(str(r, "client.retry_on"), "503,refused") << http;
  }
}

// An HTTPRoute reads /http only, a GRPCRoute /grpc only (convert_route in
// index/http.rs and index/grpc.rs): /grpc on an HTTPRoute retried everything.
TEST(LinkerdSemantics, EachRouteKindReadsItsOwnConditions) {
  auto http_route = import_text("h.yaml", httproute("    retry.linkerd.io/grpc: unavailable\n"
                                                    "    retry.linkerd.io/limit: \"3\"\n"));
  EXPECT_EQ(str(http_route, "client.retry_on"), "refused");
  EXPECT_FALSE(http_route.warnings.empty());
  auto grpc_route = import_text("g.yaml", httproute("    retry.linkerd.io/http: 5xx\n"
                                                    "    retry.linkerd.io/limit: \"3\"\n",
                                                    "GRPCRoute"));
  EXPECT_EQ(str(grpc_route, "client.retry_on"), "refused");
}

// The annotations' lists as the policy controller splits them: at each
// comma, nothing trimmed, an unknown item fails the policy (parse_http_retry
// and parse_grpc_retry, linkerd2 policy-controller/k8s/index/src/outbound/
// index/http.rs and grpc.rs); /limit is a u16. These imported as retries.
TEST(LinkerdSemantics, AListLinkerdRefusesIsRefusedByName) {
  auto refusal = [](const std::string& annotations, const char* kind = "HTTPRoute") {
    try {
      import_text("a.yaml", httproute(annotations, kind));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal("    retry.linkerd.io/http: \"5xx, 429\"\n")
                .find("'5xx, 429': Linkerd refuses the item ' 429'"),
            std::string::npos);
  EXPECT_NE(refusal("    retry.linkerd.io/http: 5xx,timeout\n").find("the item 'timeout'"),
            std::string::npos);
  EXPECT_NE(refusal("    retry.linkerd.io/http: 600\n").find("the item '600'"), std::string::npos);
  EXPECT_NE(
      refusal("    retry.linkerd.io/grpc: unavailable,slow\n", "GRPCRoute").find("the item 'slow'"),
      std::string::npos);
  EXPECT_NE(refusal("    retry.linkerd.io/limit: \"70000\"\n").find("allowed 0 to 65535"),
            std::string::npos);
  // What it takes: any case, ranges, gateway-error, gRPC names in any case.
  auto upper = import_text("g.yaml", httproute("    retry.linkerd.io/grpc: UNAVAILABLE\n"
                                               "    retry.linkerd.io/limit: \"3\"\n",
                                               "GRPCRoute"));
  EXPECT_EQ(str(upper, "client.retry_on"),
            str(import_text("g.yaml", httproute("    retry.linkerd.io/grpc: "
                                                "unavailable\n",
                                                "GRPCRoute")),
                "client.retry_on"));
  EXPECT_NE(str(upper, "client.retry_on"), "refused");
  auto ranges = import_text("h.yaml", httproute("    retry.linkerd.io/http: 5XX,420-430\n"));
  EXPECT_EQ(str(ranges, "client.retry_on"), "503,429,refused");
}

// ---- gRPC -----------------------------------------------------------------

bool warned(const ImportResult& r, const std::string& needle) {
  for (const std::string& w : r.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

// The service config's names are read exactly (C-core ServiceConfigImpl::Create
// and RetryMethodConfig's JsonLoader; grpc-go's encoding/json matches case but
// not underscores): a snake_case config has no retries, it was read as 3.
TEST(GrpcSemantics, SnakeCaseNamesAreIgnoredByEveryClient) {
  const std::string snake =
      R"({"methodConfig":[{"name":[{"service":"shop.v1.Orders"}],"timeout":"2s",)"
      R"("retry_policy":{"max_attempts":4,"initial_backoff":"0.1s","max_backoff":"1s",)"
      R"("backoff_multiplier":2,"retryable_status_codes":["UNAVAILABLE"]}}]})";
  auto r = import_text("g.json", snake);
  EXPECT_EQ(num(r, "client.retries"), 0);
  EXPECT_TRUE(warned(r, "every gRPC client ignores 'retry_policy'"));
  // Another case is read as grpc-go reads it, with a warning for C-core.
  const std::string go_case =
      R"({"methodConfig":[{"name":[{"service":"shop.v1.Orders"}],"retryPolicy":{"MaxAttempts":4,)"
      R"("InitialBackoff":"0.1s","MaxBackoff":"1s","BackoffMultiplier":2,)"
      R"("RetryableStatusCodes":["UNAVAILABLE"]}}]})";
  auto go = import_text("go.json", go_case);
  EXPECT_EQ(num(go, "client.retries"), 3);
  EXPECT_TRUE(warned(go, "grpc-go"));
}

// A methodConfig without a name applies to no method (grpc-go
// parseServiceConfig `if m.Name == nil { continue }`; grpc-js refuses it).
TEST(GrpcSemantics, AMethodConfigWithoutANameIsNotRead) {
  const std::string text =
      R"({"methodConfig":[{"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s",)"
      R"("maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}},)"
      R"({"name":[{"service":"shop.v1.Orders"}],"timeout":"2s"}]})";
  auto r = import_text("g.json", text);
  EXPECT_EQ(num(r, "client.retries"), 0);
  EXPECT_TRUE(warned(r, "no name"));
}

// Lint's maxAttempts fix edits the method config the import read, not every
// one: Reports kept its own policy.
TEST(GrpcSemantics, TheFixEditsOnlyTheMethodConfigRead) {
  const std::string text =
      R"({"methodConfig":[{"name":[{"service":"shop.v1.Orders"}],"timeout":"1s",)"
      R"("retryPolicy":{"maxAttempts":5,"initialBackoff":"0.1s","maxBackoff":"1s",)"
      R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}},)"
      R"({"name":[{"service":"shop.v1.Reports"}],"timeout":"60s",)"
      R"("retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"1s",)"
      R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],)"
      R"("retryThrottling":{"maxTokens":10,"tokenRatio":0.1}})";
  LintReport lint = lint_configs({{"g.json", text}});
  bool edited = false;
  for (const Finding& f : lint.findings) {
    if (!f.edit || f.edit->change.find("maxAttempts") == std::string::npos) continue;
    edited = true;
    auto doc = nlohmann::json::parse(f.edit->text);
    EXPECT_EQ(doc["methodConfig"][1]["retryPolicy"]["maxAttempts"], 4) << f.edit->text;
  }
  EXPECT_TRUE(edited) << "no maxAttempts edit to check";
}

// What C-core refuses and grpc-go reads is read, with a warning naming both:
// a numeric status code (C-core loads the codes as strings) and a tokenRatio
// beyond three decimals (RetryGlobalConfig::JsonPostLoad keeps three).
TEST(GrpcSemantics, WhatCCoreRefusesIsSaid) {
  const std::string numeric =
      R"({"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":3,)"
      R"("initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,)"
      R"("retryableStatusCodes":[14]}}]})";
  EXPECT_TRUE(warned(import_text("n.json", numeric), "refuses the service config"));
  const std::string ratio = R"({"retryThrottling":{"maxTokens":10,"tokenRatio":0.0004}})";
  EXPECT_TRUE(warned(import_text("t.json", ratio), "keeps 3 decimals, 0, and refuses"));
}

// ---- Istio ----------------------------------------------------------------

// A route whose match names some callers only (sourceLabels) is not what the
// other callers get: the catch-all route below it is read (istio/api
// networking/v1alpha3/virtual_service.proto: "The first rule matching an
// incoming request is used"). It read attempts: 0 from the checkout-only route.
TEST(IstioSemantics, ARouteForSomeCallersOnlyIsNotRead) {
  const std::string vs =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\n"
      "spec:\n  hosts: [orders]\n  http:\n  - match: [{sourceLabels: {app: checkout}}]\n"
      "    route: [{destination: {host: orders}}]\n    retries: {attempts: 0}\n"
      "  - route: [{destination: {host: orders}}]\n    timeout: 3s\n"
      "    retries: {attempts: 4, perTryTimeout: 500ms}\n";
  auto r = import_text("vs.yaml", vs);
  EXPECT_EQ(num(r, "client.retries"), 4);
  EXPECT_EQ(num(r, "client.deadline_s"), 3);
  EXPECT_TRUE(warned(r, "some callers only"));
  // Routes for some callers only and none for all: the others match no
  // route and are not retried (the first route's 7 retries were read).
  auto only = import_text(
      "vs1.yaml",
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\n"
      "spec:\n  hosts: [orders]\n  http:\n  - match: [{sourceLabels: {app: batch}}]\n"
      "    route: [{destination: {host: orders}}]\n    retries: {attempts: 7}\n");
  EXPECT_EQ(num(only, "client.retries"), 0);
  // sourceNamespace is such a selector too (virtual_service.proto: "it filters
  // which workloads the VirtualService applies to"); its 10 retries were read.
  auto ns = import_text(
      "vsns.yaml",
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\n"
      "spec:\n  hosts: [orders]\n  http:\n  - match: [{sourceNamespace: batch}]\n"
      "    route: [{destination: {host: orders}}]\n    retries: {attempts: 10}\n"
      "  - route: [{destination: {host: orders}}]\n    retries: {attempts: 1}\n");
  EXPECT_EQ(num(ns, "client.retries"), 1);
  EXPECT_TRUE(warned(ns, "some callers only"));
  // What Istio's validation refuses is said (validateHTTPRetry, istio
  // pkg/config/validation/validation.go): apply fails.
  auto istio_vs = [](const std::string& retries) {
    return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: o}\n"
           "spec:\n  hosts: [orders]\n  http:\n  - route: [{destination: {host: orders}}]\n"
           "    retries: " +
           retries + "\n";
  };
  EXPECT_TRUE(warned(import_text("z.yaml", istio_vs("{attempts: 0, perTryTimeout: 1s}")),
                     "beside attempts 0"));
  EXPECT_FALSE(warned(import_text("z.yaml", istio_vs("{attempts: 0}")), "beside attempts 0"));
  EXPECT_TRUE(warned(import_text("b.yaml", istio_vs("{attempts: 2, retryOn: \"5xx,timeout\"}")),
                     "'timeout' is not a retryOn policy"));
  EXPECT_TRUE(warned(import_text("s.yaml", istio_vs("{attempts: 2, retryOn: \"5xx, reset\"}")),
                     "' reset' is not a retryOn policy"));
  EXPECT_TRUE(warned(import_text("c.yaml", istio_vs("{attempts: 2, retryOn: \"5xx,599\"}")),
                     "'599' is not a retryOn policy"));  // no http.StatusText
  EXPECT_FALSE(warned(import_text("g.yaml", istio_vs("{attempts: 2, retryOn: \"5xx,429,reset\"}")),
                      "is not a retryOn policy"));
  // Rules bound to gateways without "mesh" are said to be a gateway's.
  auto gw = import_text("gw.yaml",
                        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: "
                        "{name: o}\nspec:\n  hosts: [orders]\n  gateways: [istio-system/public]\n"
                        "  http:\n  - route: [{destination: {host: orders}}]\n"
                        "    retries: {attempts: 3, perTryTimeout: 1s}\n");
  EXPECT_TRUE(warned(gw, "only at the gateways"));
}

// ---- HAProxy --------------------------------------------------------------

// A proxy without a mode line is in mode tcp (src/proxy.c, init_new_proxy sets
// PR_MODE_TCP), where only failed connections are retried, and only when
// retry-on lists conn-failure (src/backend.c, back_handle_st_cer checks
// retry_type & PR_RE_CONN_FAILED; proxy_parse_retry_on resets retry_type to
// the keywords listed). It was read as mode http, and as conn-failure.
TEST(HaproxySemantics, TcpIsTheDefaultModeAndRetriesOnlyListedConnectionFailures) {
  auto no_mode = import_text("b.cfg", "backend b\n  retries 3\n  retry-on 503 response-timeout\n");
  EXPECT_EQ(num(no_mode, "client.retries"), 0);
  EXPECT_TRUE(warned(no_mode, "default is mode tcp"));
  auto listed =
      import_text("c.cfg", "backend b\n  mode tcp\n  retries 3\n  retry-on conn-failure 503\n");
  EXPECT_EQ(num(listed, "client.retries"), 3);
  EXPECT_EQ(str(listed, "client.retry_on"), "refused");
  auto http = import_text("h.cfg", "backend b\n  mode http\n  retries 3\n  retry-on 503\n");
  EXPECT_EQ(num(http, "client.retries"), 3);
  EXPECT_EQ(str(http, "client.retry_on"), "503");
  // Every http-request rule applies: one after disable-l7-retry hid it.
  auto later = import_text("d.cfg",
                           "backend b\n  mode http\n  retries 3\n  retry-on 503\n"
                           "  http-request disable-l7-retry if METH_POST\n"
                           "  http-request set-header X-Seen 1\n");
  EXPECT_TRUE(warned(later, "never retried after the connection"));
}

// ---- nginx ----------------------------------------------------------------

// The export's upstream is not its own listen address: nginx proxying to
// itself looped until it ran out of connections (a 504 after 15 s).
TEST(NginxSemantics, TheExportDoesNotProxyToItself) {
  Scenario s;
  const std::string text = export_config(s, "nginx").text;
  EXPECT_NE(text.find("listen 8080;"), std::string::npos) << text;
  EXPECT_EQ(text.find("server 127.0.0.1:8080"), std::string::npos) << text;
}

// A stream {} block is the TCP proxy, whose proxy_next_upstream is on|off
// (src/stream/ngx_stream_proxy_module.c): refused with a message instead of
// being read with the http module's conditions and defaults.
TEST(NginxSemantics, AStreamProxyIsRefusedByName) {
  std::string e =
      error_of("s.conf",
               "stream {\n  upstream db { server 10.0.0.1:5432; server 10.0.0.2:5432; }\n"
               "  server { listen 5432; proxy_pass db; proxy_next_upstream on; }\n}\n");
  EXPECT_NE(e.find("stream (TCP) proxy"), std::string::npos) << e;
}

// ---- AWS ------------------------------------------------------------------

// The config file as botocore's configparser reads it (configloader.py,
// raw_config_parse): option names in any case, ':' as well as '=', a comment
// after a section header. They were warned about, refused, or read as legacy.
TEST(AwsSemantics, TheProfileIsReadAsConfigparserReadsIt) {
  for (const char* text : {"[default]\nRetry_Mode = standard\nMAX_ATTEMPTS = 10\n",
                           "[default]\nretry_mode: standard\nmax_attempts: 10\n",
                           "[default]   # main\nretry_mode = standard\nmax_attempts = 10\n"}) {
    auto r = import_text("config", text);
    EXPECT_EQ(num(r, "client.retries"), 9) << text;
    EXPECT_EQ(str(r, "client.budget.kind"), "aws_quota") << text;
  }
}

}  // namespace
}  // namespace retrystorm::configs
