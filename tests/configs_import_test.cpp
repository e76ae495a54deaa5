// Importing real retry configurations: each system's fixture (written from the
// system's documentation), defaults left out, every duration form, unknown
// fields (a warning) and broken files (InputError naming file, line and key).
#include <gtest/gtest.h>

#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "systems/common.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;

ImportResult import1(const std::string& rel) {
  return import_configs({fixture(rel)});
}

std::string error_of(const std::vector<ConfigFile>& files) {
  try {
    import_configs(files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Whether a warning of `r` contains `part`.
bool warned(const ImportResult& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// Every warning of `r`, for a failure's message.
std::string said(const ImportResult& r) {
  std::string out;
  for (const auto& w : r.warnings) out += w + "\n";
  return out;
}

TEST(ConfigsDetect, NamesEachFormat) {
  EXPECT_EQ(detect_system(fixture("envoy/route.yaml")), System::envoy);
  EXPECT_EQ(detect_system(fixture("envoy/route.json")), System::envoy);
  EXPECT_EQ(detect_system(fixture("envoy/cluster.yaml")), System::envoy);
  EXPECT_EQ(detect_system(fixture("grpc/service-config.json")), System::grpc);
  EXPECT_EQ(detect_system(fixture("istio/virtualservice.yaml")), System::istio);
  EXPECT_EQ(detect_system(fixture("istio/destinationrule.yaml")), System::istio);
  EXPECT_EQ(detect_system(fixture("linkerd/serviceprofile.yaml")), System::linkerd);
  EXPECT_EQ(detect_system(fixture("linkerd/annotations.yaml")), System::linkerd);
  EXPECT_EQ(detect_system(fixture("aws/config")), System::aws);
  EXPECT_EQ(detect_system(fixture("retrystorm/postmortem.yaml")), System::retrystorm);
  auto r = import_configs({fixture("envoy/route.yaml"), fixture("envoy/cluster.yaml")});
  ASSERT_EQ(r.formats.size(), 2u);
  EXPECT_NE(r.formats[0].find("Envoy route"), std::string::npos);
  EXPECT_NE(r.formats[1].find("Envoy cluster"), std::string::npos);
}

TEST(ConfigsDetect, UnknownFormatIsBadInput) {
  std::string e = error_of({{"x.yaml", "hello: world\n"}});
  EXPECT_NE(e.find("x.yaml"), std::string::npos);
  EXPECT_NE(e.find("cannot tell the format"), std::string::npos);
  EXPECT_NE(error_of({{"k.yaml", "kind: ConfigMap\nmetadata: {name: x}\n"}}).find("kind"),
            std::string::npos);
  // A Deployment says how many clients run (client_instances_test.cpp), not how they retry.
  EXPECT_NE(error_of({{"k.yaml", "kind: Deployment\nmetadata: {name: x}\n"}})
                .find("only Kubernetes workloads"),
            std::string::npos);
  EXPECT_NE(error_of({{"empty.yaml", ""}}).find("empty"), std::string::npos);
}

TEST(ConfigsEnvoy, RouteWithEverythingSet) {
  auto r = import1("envoy/route.yaml");
  EXPECT_EQ(num(r, "client.retries"), 3);
  EXPECT_EQ(num(r, "client.timeout_s"), 2);
  EXPECT_EQ(num(r, "client.deadline_s"), 10);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.1);
  EXPECT_EQ(num(r, "client.backoff.cap_s"), 1);
  EXPECT_EQ(num(r, "client.backoff.multiplier"), 2);
  EXPECT_EQ(str(r, "client.backoff.jitter"), "full");
  // No cluster given: Envoy's default max_retries, 3 concurrent retries
  // (ConfigsEnvoyDefaults.RouteWithoutBreakersGetsDefaultRetryCap).
  EXPECT_EQ(str(r, "client.budget.kind"), "envoy_concurrency");
  EXPECT_EQ(num(r, "client.budget.min_concurrency"), 3);
  EXPECT_EQ(num(r, "client.layers"), 1);
  // Every key says where it came from, with the line.
  for (const auto& k : r.keys)
    if (k.path == "client.retries") {
      EXPECT_NE(k.from.find("route.yaml:15"), std::string::npos);
    }
}

TEST(ConfigsEnvoy, DefaultsLeftOut) {
  auto r = import1("envoy/defaults.yaml");
  EXPECT_EQ(num(r, "client.retries"), 1);            // num_retries default
  EXPECT_EQ(num(r, "client.deadline_s"), 15);        // route timeout default
  EXPECT_FALSE(flag(r, "client.retry_on_timeout"));  // per_try_timeout unset
  EXPECT_EQ(num(r, "client.timeout_s"), 15);         // an attempt may take it all
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.025);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.cap_s"), 0.25);  // 10 x base
}

TEST(ConfigsEnvoy, JsonCamelCaseAndDurationObjects) {
  auto r = import1("envoy/route.json");
  EXPECT_EQ(num(r, "client.retries"), 2);              // {"value": 2}
  EXPECT_DOUBLE_EQ(num(r, "client.deadline_s"), 4.5);  // {seconds: 4, nanos: 5e8}
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 1.25);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.05);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.cap_s"), 0.4);
}

TEST(ConfigsEnvoy, ClusterBudgetMergesIntoTheRoute) {
  auto r = import_configs({fixture("envoy/route.yaml"), fixture("envoy/cluster.yaml")});
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(str(r, "client.budget.kind"), "envoy_concurrency");
  EXPECT_DOUBLE_EQ(num(r, "client.budget.ratio"), 0.25);
  EXPECT_EQ(num(r, "client.budget.min_concurrency"), 5);
  EXPECT_EQ(num(r, "client.layers"), 1);
  // Budget only, alone.
  auto c = import1("envoy/cluster.yaml");
  EXPECT_FALSE(has_key(c, "client.retries"));
  EXPECT_EQ(str(c, "client.budget.kind"), "envoy_concurrency");
}

// A budget file whose system has no retry policy among the files bounds
// nothing here: its budget is said and left out (its ratio and floor landed
// beside budget kind none on the gRPC layer); its other keys stay.
TEST(ConfigsImport, ABudgetWithoutItsSystemsRetriesIsLeftOut) {
  auto r =
      import_configs({fixture("grpc/no-throttling.json"), fixture("istio/destinationrule.yaml")});
  EXPECT_EQ(str(r, "client.budget.kind"), "none");
  EXPECT_FALSE(has_key(r, "client.budget.ratio"));
  EXPECT_FALSE(has_key(r, "client.budget.min_concurrency"));
  bool said = false;
  for (const std::string& w : r.warnings)
    said = said || (w.rfind("istio/destinationrule.yaml: ", 0) == 0 &&
                    w.find("no file here sets Istio's retries; the budget is not read") != w.npos);
  EXPECT_TRUE(said);
  // An Envoy cluster's connection limit stays.
  ConfigFile cluster{"od-cluster.yaml",
                     "name: orders\ncircuit_breakers:\n  thresholds:\n  - max_requests: 64\n"
                     "    retry_budget: {budget_percent: {value: 25}}\n"};
  auto kept = import_configs({fixture("grpc/no-throttling.json"), cluster});
  EXPECT_EQ(num(kept, "client.max_requests"), 64);
  EXPECT_FALSE(has_key(kept, "client.budget.ratio"));
  // Alone, a budget file is still read for its budget.
  EXPECT_EQ(str(import_configs({fixture("istio/destinationrule.yaml")}), "client.budget.kind"),
            "envoy_concurrency");
}

TEST(ConfigsEnvoy, MaxRetriesOnlyIsAFixedCap) {
  auto r = import_configs({{"c.yaml",
                            "circuit_breakers:\n  thresholds:\n  - max_retries: 7\n"
                            "retry_policy: {retry_on: 5xx, num_retries: 2}\n"}});
  EXPECT_EQ(str(r, "client.budget.kind"), "envoy_concurrency");
  EXPECT_EQ(num(r, "client.budget.ratio"), 0);
  EXPECT_EQ(num(r, "client.budget.min_concurrency"), 7);
}

TEST(ConfigsEnvoy, UnknownFieldAndWrongUnitWarn) {
  auto r = import1("envoy/unknown-field.yaml");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("unknown-field.yaml:8: route.retry_policy.retry_jitter"),
            std::string::npos);
  auto m = import1("envoy/ms-duration.yaml");
  EXPECT_DOUBLE_EQ(num(m, "client.timeout_s"), 0.5);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("\"0.5s\""), std::string::npos);
}

TEST(ConfigsEnvoy, BrokenFilesNameFileLineAndKey) {
  std::string e = error_of({fixture("envoy/broken-syntax.yaml")});
  EXPECT_NE(e.find("envoy/broken-syntax.yaml:6"), std::string::npos) << e;
  e = error_of({fixture("envoy/broken-num-retries.yaml")});
  EXPECT_NE(e.find("envoy/broken-num-retries.yaml:5: route.retry_policy.num_retries"),
            std::string::npos)
      << e;
  e = error_of({fixture("envoy/broken-backoff.yaml")});
  EXPECT_NE(e.find("broken-backoff.yaml:7: route.retry_policy.retry_back_off.max_interval"),
            std::string::npos)
      << e;
  e = error_of({{"neg.yaml", "retry_policy: {retry_on: 5xx, per_try_timeout: -1s}\n"}});
  EXPECT_NE(e.find("neg.yaml:1: retry_policy.per_try_timeout"), std::string::npos) << e;
}

TEST(ConfigsEnvoy, RetryOnWithoutTimeoutsAndEmpty) {
  auto r = import_configs(
      {{"a.yaml",
        "retry_policy: {retry_on: connect-failure, num_retries: 2, per_try_timeout: 1s}\n"}});
  EXPECT_FALSE(flag(r, "client.retry_on_timeout"));
  auto e = import_configs({{"b.yaml", "retry_policy: {num_retries: 2}\n"}});
  EXPECT_EQ(num(e, "client.retries"), 0);
  EXPECT_FALSE(e.warnings.empty());
}

TEST(ConfigsGrpc, ServiceConfig) {
  auto r = import1("grpc/service-config.json");
  EXPECT_EQ(num(r, "client.retries"), 3);  // maxAttempts 4
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.2);
  EXPECT_EQ(num(r, "client.backoff.cap_s"), 2);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.multiplier"), 1.5);
  EXPECT_EQ(str(r, "client.backoff.jitter"), "grpc");
  EXPECT_DOUBLE_EQ(num(r, "client.deadline_s"), 3.5);
  EXPECT_FALSE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(str(r, "client.budget.kind"), "grpc_throttling");
  EXPECT_EQ(num(r, "client.budget.max_tokens"), 20);
  EXPECT_DOUBLE_EQ(num(r, "client.budget.token_ratio"), 0.2);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(ConfigsGrpc, MaxAttemptsAboveFiveIsCappedWithAWarning) {
  auto r = import1("grpc/max-attempts-7.json");
  EXPECT_EQ(num(r, "client.retries"), 4);
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(r.layers[0].capped_from, 7);
  bool capped = false, unknown = false;
  for (const auto& w : r.warnings) {
    capped = capped || w.find("gRPC silently uses 5") != std::string::npos;
    unknown = unknown || w.find("retryEverything: unknown field") != std::string::npos;
  }
  EXPECT_TRUE(capped);
  EXPECT_TRUE(unknown);
}

TEST(ConfigsGrpc, NoThrottlingNoTimeout) {
  auto r = import1("grpc/no-throttling.json");
  EXPECT_EQ(str(r, "client.budget.kind"), "none");
  EXPECT_EQ(num(r, "client.deadline_s"), 0);
  EXPECT_FALSE(has_key(r, "client.timeout_s"));
}

TEST(ConfigsGrpc, DurationFormsAndBrokenFiles) {
  auto obj =
      import_configs({{"o.json",
                       R"({"methodConfig":[{"name":[{}],"timeout":{"seconds":2,"nanos":500000000},
   "retryPolicy":{"maxAttempts":2,"initialBackoff":"0.1s","maxBackoff":"100ms","backoffMultiplier":2,
   "retryableStatusCodes":["UNAVAILABLE"]}}]})"}});
  EXPECT_DOUBLE_EQ(num(obj, "client.deadline_s"), 2.5);
  EXPECT_DOUBLE_EQ(num(obj, "client.backoff.cap_s"), 0.1);
  EXPECT_EQ(obj.warnings.size(), 2u);  // gRPC itself wants "2.5s" and "0.1s"
  std::string e = error_of({fixture("grpc/broken-missing-backoff.json")});
  EXPECT_NE(e.find("broken-missing-backoff.json:4: methodConfig[0].retryPolicy: initialBackoff"),
            std::string::npos)
      << e;
  e = error_of({fixture("grpc/broken-syntax.json")});
  EXPECT_NE(e.find("broken-syntax.json:4"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  e = error_of(
      {{"s.json",
        R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":1,"initialBackoff":"1s",
  "maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})"}});
  EXPECT_NE(e.find("maxAttempts"), std::string::npos) << e;
  e = error_of(
      {{"c.json",
        R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"1s",
  "maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["NOT_A_CODE"]}}]})"}});
  EXPECT_NE(e.find("retryableStatusCodes[0]"), std::string::npos) << e;
}

TEST(ConfigsIstio, VirtualServiceAndDestinationRule) {
  auto r =
      import_configs({fixture("istio/virtualservice.yaml"), fixture("istio/destinationrule.yaml")});
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(num(r, "client.retries"), 4);
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 1.5);  // "1500ms"
  EXPECT_EQ(num(r, "client.deadline_s"), 6);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(str(r, "client.budget.kind"), "envoy_concurrency");
  EXPECT_DOUBLE_EQ(num(r, "client.budget.ratio"), 0.15);
  EXPECT_EQ(num(r, "client.budget.min_concurrency"), 3);  // default
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.025);
}

TEST(ConfigsIstio, DefaultsAndOneFileWithBoth) {
  auto d = import1("istio/vs-defaults.yaml");
  EXPECT_EQ(num(d, "client.retries"), 2);
  EXPECT_EQ(num(d, "client.deadline_s"), 0);
  EXPECT_FALSE(flag(d, "client.retry_on_timeout"));
  EXPECT_EQ(str(d, "client.budget.kind"), "none");
  ASSERT_EQ(d.warnings.size(), 1u);  // trafficShadow
  EXPECT_NE(d.warnings[0].find("vs-defaults.yaml:13: spec.http[0].trafficShadow"),
            std::string::npos);
  auto b = import1("istio/vs-and-dr.yaml");
  EXPECT_EQ(num(b, "client.deadline_s"), 60);  // "1m"
  EXPECT_EQ(num(b, "client.timeout_s"), 20);
  EXPECT_FALSE(flag(b, "client.retry_on_timeout"));  // default retryOn has no 5xx
  EXPECT_EQ(num(b, "client.budget.min_concurrency"), 8);
  std::string e = error_of({{"bad.yaml",
                             "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n"
                             "  http:\n  - retries:\n      attempts: 2\n      perTryTimeout: 2 "
                             "seconds\n"}});
  EXPECT_NE(e.find("bad.yaml:7: spec.http[0].retries.perTryTimeout"), std::string::npos) << e;
}

// A subset's trafficPolicy is merged over the top level's for the routes that
// send to it (MergeTrafficPolicy, pilot/pkg/model/destination_rule.go):
// subset v2's retryBudget is the budget of a route to v2, in one file or two.
TEST(ConfigsIstio, TheRoutesSubsetPicksItsRetryBudget) {
  ConfigFile both = fixture("istio/subset-budget.yaml");
  auto one = import_configs({both});
  EXPECT_EQ(str(one, "client.budget.kind"), "envoy_concurrency");
  EXPECT_DOUBLE_EQ(num(one, "client.budget.ratio"), 0.1);
  EXPECT_EQ(num(one, "client.budget.min_concurrency"), 2);
  size_t split = both.text.find("---");
  ConfigFile vs{"vs.yaml", both.text.substr(0, split)};
  ConfigFile dr{"dr.yaml", both.text.substr(split + 4)};
  auto two = import_configs({vs, dr});
  EXPECT_DOUBLE_EQ(num(two, "client.budget.ratio"), 0.1);
  EXPECT_EQ(num(two, "client.budget.min_concurrency"), 2);
  // A route to v1 (no policy of its own) or to the host gets the top level's cap of 8.
  for (const std::string& to : {std::string("subset: v1"), std::string("subset: none")}) {
    std::string text = both.text;
    text.replace(text.find("subset: v2"), 10, to);
    auto other = import_configs({{"other.yaml", text}});
    EXPECT_DOUBLE_EQ(num(other, "client.budget.ratio"), 0) << to;
    EXPECT_EQ(num(other, "client.budget.min_concurrency"), 8) << to;
  }
}

// attempts 0 (or left out) turns retries off, and Istio drops the whole retry
// policy with it (ConvertPolicy): a perTryTimeout beside it is not applied.
TEST(ConfigsIstio, PerTryTimeoutOfADroppedRetriesBlockImportsNothing) {
  auto r = import_configs(
      {{"off.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n  - route:\n"
        "    - destination: {host: a}\n    timeout: 9s\n    retries:\n      attempts: 0\n"
        "      perTryTimeout: 2s\n"}});
  EXPECT_EQ(num(r, "client.retries"), 0);
  EXPECT_EQ(num(r, "client.timeout_s"), 9);  // the route timeout bounds the one attempt
  bool noted = false;
  for (const auto& n : r.layers.at(0).notes)
    noted |= n.find(
                 "off.yaml:10: spec.http[0].retries.perTryTimeout: the retries block turns "
                 "retries off") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Istio's ValidateDuration (pkg/config/validation/agent/validation.go), which
// validateHTTPRetry runs on perTryTimeout and the VirtualService validation
// on the route timeout, refuses a duration that is not whole milliseconds
// ("only durations to ms precision are supported"): read as written, with a
// warning naming the value, as for the other forms a system refuses.
TEST(ConfigsIstio, ADurationFinerThanAMillisecondIsWarnedAbout) {
  auto r = import_configs({{"ms.yaml",
                            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n"
                            "  http:\n  - timeout: 4s\n    retries:\n      attempts: 2\n"
                            "      perTryTimeout: 1.0005s\n"}});
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 1.0005);
  EXPECT_TRUE(warned(r,
                     "ms.yaml:8: spec.http[0].retries.perTryTimeout: '1.0005s' is not whole "
                     "milliseconds: Istio's validation refuses it"));
  EXPECT_EQ(r.warnings.size(), 1u);
  // Whole milliseconds, in any unit, are not warned about (1.001 s is no
  // whole number of nanoseconds as a double).
  for (const char* ok : {"1.001s", "1500ms", "2000us", "1m"}) {
    auto w = import_configs({{"ok.yaml", std::string("kind: VirtualService\nspec:\n  http:\n"
                                                     "  - retries: {attempts: 2, perTryTimeout: ") +
                                             ok + "}\n"}});
    EXPECT_TRUE(w.warnings.empty()) << ok << ": " << said(w);
  }
  auto t =
      import_configs({{"t.yaml", "kind: VirtualService\nspec:\n  http:\n  - timeout: 2500us\n"}});
  EXPECT_TRUE(warned(t, "t.yaml:4: spec.http[0].timeout: '2500us' is not whole milliseconds"));
}

// kubectl turns a manifest's YAML into JSON with sigs.k8s.io/yaml, which
// decodes with go-yaml v2 (decode.go: d.mapping, d.merge, isMerge): merge
// keys are expanded before Istio, Linkerd or Kubernetes see the resource.
// The entries are taken in order and a merge sets its keys where `<<`
// stands: a key after `<<` wins, a key before it loses, and of a list the
// earlier map wins. kubectl v1.32 (`kubectl label --local -o json`) gives
// exactly these values for the file below.
TEST(ConfigsKubernetes, MergeKeysAreExpandedAsKubectlDoes) {
  // The anchor sits on a route for one caller only (not read); the route
  // every caller takes merges it.
  const std::string vs =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n"
      "  - match: [{sourceLabels: {app: batch}}]\n"
      "    retries: &r {attempts: 4, perTryTimeout: 2s}\n"  // line 6
      "  - route: [{destination: {host: a}}]\n"
      "    retries:\n      <<: *r\n      retryOn: 5xx\n";
  auto r = import_configs({{"vs.yaml", vs}});
  EXPECT_EQ(num(r, "client.retries"), 4);
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 2);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));  // retryOn 5xx, written beside the merge
  EXPECT_FALSE(warned(r, "<<")) << said(r);         // no "<<: unknown field"
  // The merged value keeps the line it was written on.
  std::string text = keys_text(r);
  EXPECT_NE(text.find("vs.yaml:6: spec.http[1].retries.perTryTimeout"), std::string::npos) << text;
  auto f = [](const std::string& retries) {
    return import_configs(
        {{"m.yaml", "kind: VirtualService\nspec:\n  http:\n  - retries:\n" + retries}});
  };
  auto after = f("      <<: {attempts: 4, perTryTimeout: 2s}\n      attempts: 5\n");
  EXPECT_EQ(num(after, "client.retries"), 5);
  auto before =
      f("      attempts: 1\n      <<: [{attempts: 4, perTryTimeout: 2s}, {attempts: 9}]\n");
  EXPECT_EQ(num(before, "client.retries"), 4);
  EXPECT_TRUE(warned(before, "m.yaml:5: spec.http[0].retries.attempts: written before `<<`"));
  auto nested = f("      <<: {<<: {attempts: 7, perTryTimeout: 1s}, perTryTimeout: 3s}\n");
  EXPECT_EQ(num(nested, "client.retries"), 7);
  EXPECT_DOUBLE_EQ(num(nested, "client.timeout_s"), 3);
  // A quoted "<<" is a key of its own; a merge of a scalar is refused, as kubectl refuses it.
  auto quoted = f("      attempts: 3\n      \"<<\": {attempts: 4}\n");
  EXPECT_EQ(num(quoted, "client.retries"), 3);
  std::string e = error_of({{"m.yaml",
                             "kind: VirtualService\nspec:\n  http:\n  - retries:\n"
                             "      <<: 4\n"}});
  EXPECT_NE(e.find("m.yaml:5: spec.http[0].retries.<<: a merge key takes a map or a list of maps"),
            std::string::npos)
      << e;
  // Linkerd's annotations and a Deployment's replicas, merged in.
  auto l =
      import_configs({{"svc.yaml",
                       "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n"
                       "    <<: {retry.linkerd.io/http: 5xx, retry.linkerd.io/limit: \"3\"}\n"}});
  EXPECT_EQ(num(l, "client.retries"), 3);
  auto d = import_configs(
      {{"d.yaml", "kind: Deployment\nmetadata: {name: a}\nspec:\n  <<: {replicas: 6}\n"},
       {"vs.yaml", vs}});
  ASSERT_TRUE(d.instances.has_value());
  EXPECT_EQ(d.instances->count, 6);
}

// Two `<<` in one mapping are a duplicate key (YAML 1.2; kubectl refuses
// it): refused as any key given twice, with the one-key form to write
// instead, which merges both (the earlier map wins).
TEST(ConfigsKubernetes, TwoMergeKeysInAMapAreRefusedAndAListOfAliasesMerges) {
  auto vs = [](const std::string& merges) {
    return "kind: VirtualService\nspec:\n  http:\n"
           "  - match: [{sourceLabels: {app: a}}]\n    retries: &A {attempts: 4}\n"
           "  - match: [{sourceLabels: {app: b}}]\n"
           "    retries: &B {attempts: 9, perTryTimeout: 2s}\n"
           "  - route: [{destination: {host: a}}]\n    retries:\n" +
           merges;
  };
  std::string e = error_of({{"two.yaml", vs("      <<: *A\n      <<: *B\n")}});
  EXPECT_NE(e.find("two.yaml:11: key '<<' appears twice in the same mapping"), std::string::npos)
      << e;
  EXPECT_NE(e.find("; a mapping takes one merge key: merge several maps with `<<: [*A, *B]`"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("does not read YAML merge keys"), std::string::npos) << e;
  auto r = import_configs({{"list.yaml", vs("      <<: [*A, *B]\n")}});
  EXPECT_EQ(num(r, "client.retries"), 4);
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 2);
  // A quoted "<<" is an ordinary key: no hint about merging.
  std::string quoted = error_of({{"q.yaml", vs("      \"<<\": 1\n      \"<<\": 2\n")}});
  EXPECT_NE(quoted.find("q.yaml:11: key '<<' appears twice"), std::string::npos) << quoted;
  EXPECT_EQ(quoted.find("[*A, *B]"), std::string::npos) << quoted;
}

// Envoy's loader does not expand merge keys: MessageUtil::loadFromYaml
// (source/common/protobuf/yaml_utility.cc, parseYamlNode) turns each yaml-cpp
// map entry into a field by its key, and yaml-cpp has no merge keys, so `<<`
// is a field Envoy does not know; import leaves it unexpanded too.
TEST(ConfigsEnvoy, MergeKeysAreNotExpanded) {
  auto r = import_configs({{"e.yaml",
                            "route:\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 3\n"
                            "    <<: {num_retries: 7}\n"}});
  EXPECT_EQ(num(r, "client.retries"), 3);
  EXPECT_TRUE(warned(r, "<<")) << said(r);
  // Two of them: a key given twice, and no hint to a merge form Envoy does not read.
  std::string e = error_of({{"two.yaml",
                             "route:\n  retry_policy:\n    retry_on: 5xx\n"
                             "    <<: {num_retries: 7}\n    <<: {num_retries: 9}\n"}});
  EXPECT_NE(e.find("two.yaml:5: key '<<' appears twice in the same mapping; this kind of file "
                   "does not read YAML merge keys (only Kubernetes resources do), so `<<` is an "
                   "ordinary key here"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("[*A, *B]"), std::string::npos) << e;
}

TEST(ConfigsLinkerd, ServiceProfile) {
  auto r = import1("linkerd/serviceprofile.yaml");
  EXPECT_GT(num(r, "client.retries"), 0);
  EXPECT_EQ(num(r, "client.deadline_s"), 2);
  EXPECT_FALSE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(str(r, "client.budget.kind"), "ratio_ttl");
  EXPECT_DOUBLE_EQ(num(r, "client.budget.ratio"), 0.25);
  EXPECT_EQ(num(r, "client.budget.min_retries_per_s"), 5);
  EXPECT_EQ(num(r, "client.budget.ttl_s"), 20);
  auto d = import1("linkerd/sp-defaults.yaml");
  EXPECT_EQ(num(d, "client.deadline_s"), 0);  // no default route timeout since Linkerd 2.9
  EXPECT_DOUBLE_EQ(num(d, "client.budget.ratio"), 0.2);
  EXPECT_EQ(num(d, "client.budget.min_retries_per_s"), 10);
  EXPECT_EQ(num(d, "client.budget.ttl_s"), 10);
}

TEST(ConfigsLinkerd, Annotations) {
  auto r = import1("linkerd/annotations.yaml");
  EXPECT_EQ(num(r, "client.retries"), 2);
  EXPECT_DOUBLE_EQ(num(r, "client.timeout_s"), 0.4);
  EXPECT_EQ(num(r, "client.deadline_s"), 2);
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(str(r, "client.budget.kind"), "none");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("retry.linkerd.io/backoff"), std::string::npos);
  auto d = import_configs({{"svc.yaml",
                            "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n"
                            "    retry.linkerd.io/http: 5xx\n"}});
  EXPECT_EQ(num(d, "client.retries"), 1);  // limit default
  std::string e = error_of({{"l.yaml",
                             "kind: Service\nmetadata:\n  annotations:\n    retry.linkerd.io/http: "
                             "5xx\n    retry.linkerd.io/limit: many\n"}});
  EXPECT_NE(e.find("l.yaml:5: metadata.annotations.retry.linkerd.io/limit"), std::string::npos)
      << e;
}

TEST(ConfigsAws, Profiles) {
  auto r = import1("aws/config");
  EXPECT_EQ(num(r, "client.retries"), 4);
  EXPECT_EQ(str(r, "client.budget.kind"), "aws_quota");
  EXPECT_EQ(num(r, "client.budget.quota_tokens"), 500);
  EXPECT_EQ(num(r, "client.budget.retry_cost"), 5);
  EXPECT_EQ(num(r, "client.budget.timeout_cost"), 10);
  EXPECT_EQ(num(r, "client.backoff.cap_s"), 20);
  EXPECT_EQ(str(r, "client.backoff.jitter"), "full");
  EXPECT_EQ(r.warnings.size(), 2u);  // two profiles; retry_jitter unknown
  auto l = import1("aws/legacy.ini");
  EXPECT_EQ(num(l, "client.retries"), 4);  // legacy default 5 attempts
  EXPECT_EQ(str(l, "client.budget.kind"), "none");
  auto d = import1("aws/defaults.ini");    // retry_mode left out: botocore's legacy
  EXPECT_EQ(num(d, "client.retries"), 4);  // legacy default 5 attempts
  EXPECT_EQ(str(d, "client.budget.kind"), "none");
  std::string e = error_of({fixture("aws/broken-mode.ini")});
  EXPECT_NE(e.find("broken-mode.ini:3: [default] retry_mode"), std::string::npos) << e;
  e = error_of({fixture("aws/broken-line.ini")});
  EXPECT_NE(e.find("broken-line.ini:3"), std::string::npos) << e;
  e = error_of({{"z.ini", "[default]\nmax_attempts = 0\n"}});
  EXPECT_NE(e.find("z.ini:2: [default] max_attempts"), std::string::npos) << e;
}

// botocore reads the config file with configparser, strictly
// (botocore/configloader.py: raw_config_parse, a RawConfigParser whose
// DuplicateOptionError and DuplicateSectionError become ConfigParseError):
// a setting twice in a section (names compared in lower case) or a section
// twice is refused, not read as its last value.
TEST(ConfigsAws, RepeatsBotocoreRefusesAreRefused) {
  std::string e = error_of(
      {{"d.ini", "[default]\nretry_mode = standard\nmax_attempts = 3\nMax_Attempts = 9\n"}});
  EXPECT_NE(e.find("d.ini:4: [default] Max_Attempts: the setting appears twice in its section "
                   "(line 3)"),
            std::string::npos)
      << e;
  e = error_of({{"s.ini", "[default]\nretry_mode = standard\n[default]\nmax_attempts = 3\n"}});
  EXPECT_NE(e.find("s.ini:3: [default]: the section appears twice (line 1)"), std::string::npos)
      << e;
  // A service's nested settings may repeat a top-level name.
  auto r = import_configs({{"n.ini",
                            "[default]\nretry_mode = standard\nmax_attempts = 4\ns3 =\n"
                            "  max_attempts = 3\n"}});
  EXPECT_EQ(num(r, "client.retries"), 3);
}

// botocore reads the file with configparser.RawConfigParser
// (botocore/configloader.py: raw_config_parse); configparser's _read makes a
// line indented deeper than the setting above it (blank and comment lines
// between) part of that setting's value. botocore 1.43.11 reads the first
// file below as region = 'us-west-2\nmax_attempts = 7' and max_attempts
// unset, and refuses retry_mode 'standard\n\nmax_attempts = 7'
// (InvalidRetryModeError). "s3 =" with indented lines is its nested form
// (_parse_nested, which refuses a line without '=').
TEST(ConfigsAws, AnIndentedLineContinuesTheValueAboveIt) {
  auto r = import_configs(
      {{"c.ini", "[default]\nretry_mode = standard\nregion = us-west-2\n  max_attempts = 7\n"}});
  EXPECT_EQ(num(r, "client.retries"), 2);  // standard's 3 attempts: max_attempts is not set
  EXPECT_TRUE(warned(r,
                     "c.ini:4: [default] region: 'max_attempts = 7' is indented deeper than "
                     "the setting on line 3, so botocore (configparser) reads it as part of "
                     "region's value"))
      << said(r);
  // As deep as the setting above it, a line is a setting of its own.
  auto own =
      import_configs({{"o.ini", "[default]\n  retry_mode = standard\n  max_attempts = 7\n"}});
  EXPECT_EQ(num(own, "client.retries"), 6);
  EXPECT_TRUE(own.warnings.empty());
  // A blank line and a comment do not end the value; a header indented under it is value too.
  std::string e =
      error_of({{"e.ini", "[default]\nretry_mode = standard\n\n# x\n  max_attempts = 7\n"}});
  EXPECT_NE(e.find("e.ini:2: [default] retry_mode: the value runs on over the indented lines "
                   "below it: botocore reads 'standard\\n\\nmax_attempts = 7'"),
            std::string::npos)
      << e;
  auto h = import_configs({{"h.ini",
                            "[default]\nretry_mode = standard\nmax_attempts = 3\noutput = json\n"
                            "  [profile b]\n  max_attempts = 9\n"}});
  EXPECT_EQ(num(h, "client.retries"), 2);
  EXPECT_FALSE(warned(h, "profiles"));  // [profile b] is no section
  e = error_of({{"n.ini", "[default]\nretry_mode = standard\ns3 =\n  addressing_style\n"}});
  EXPECT_NE(e.find("n.ini:4: [default] s3: 'addressing_style' under 's3 =' is not 'key = value'"),
            std::string::npos)
      << e;
}

// Lint's edit adds a setting under the header as deep as the first setting
// there: with less, that setting would continue the new one's value.
TEST(ConfigsAws, TheFixNeverTurnsASettingIntoAContinuation) {
  LintReport lint = lint_configs({{"config", "[default]\n  region = us-west-2\n"}});
  const FileEdit* edit = nullptr;
  for (const auto& f : lint.findings)
    if (f.rule == "no-retry-budget" && f.edit) edit = &*f.edit;
  ASSERT_NE(edit, nullptr);
  auto r = import_configs({{"config", edit->text}});
  EXPECT_EQ(str(r, "client.budget.kind"), "aws_quota") << edit->text;
  EXPECT_EQ(num(r, "client.retries"), 4) << edit->text;  // legacy's 5 attempts, as before
  EXPECT_FALSE(warned(r, "indented deeper")) << edit->text;
}

// nginx keeps one value of most directives and refuses a second in one block
// ("directive is duplicate": ngx_conf_set_num_slot, ngx_conf_set_msec_slot in
// src/core/ngx_conf_file.c), but ORs the conditions of repeated
// proxy_next_upstream lines (ngx_conf_set_bitmask_slot); Debian's nginx
// 1.22 `nginx -t` refuses the first two files below and accepts the third.
TEST(ConfigsNginx, RepeatsAreRefusedOrJoinedAsNginxDoes) {
  std::string e =
      error_of({{"t.conf",
                 "location / {\n  proxy_pass http://127.0.0.1:9;\n"
                 "  proxy_next_upstream_tries 3;\n  proxy_next_upstream_tries 5;\n}\n"}});
  EXPECT_NE(e.find("t.conf:4: proxy_next_upstream_tries: directive is duplicate"),
            std::string::npos)
      << e;
  e = error_of({{"r.conf",
                 "location / {\n  proxy_pass http://127.0.0.1:9;\n  proxy_read_timeout 5s;\n"
                 "  proxy_read_timeout 6s;\n}\n"}});
  EXPECT_NE(e.find("r.conf:4: proxy_read_timeout: directive is duplicate"), std::string::npos) << e;
  auto joined = import_configs({{"j.conf",
                                 "location / {\n  proxy_pass http://127.0.0.1:9;\n"
                                 "  proxy_next_upstream error;\n"
                                 "  proxy_next_upstream http_503 timeout;\n}\n"}});
  auto alone = import_configs({{"a.conf",
                                "location / {\n  proxy_pass http://127.0.0.1:9;\n"
                                "  proxy_next_upstream error http_503 timeout;\n}\n"}});
  for (const char* path : {"client.retry_on", "client.retry_on_timeout", "client.retries"})
    EXPECT_EQ(key(joined, path), key(alone, path)) << path;
}

// A Service bundled with its VirtualService (a common layout) is a
// bystander: the file imports its route's retries whatever document comes
// first; a file of such resources alone is still refused by kind.
TEST(ConfigsIstio, AServiceBesideItsVirtualServiceIsABystander) {
  const std::string service =
      "apiVersion: v1\nkind: Service\nmetadata: {name: orders}\n"
      "spec: {ports: [{port: 80}]}\n";
  const std::string route =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\n"
      "spec:\n  hosts: [orders]\n  http:\n  - route: [{destination: {host: orders}}]\n"
      "    retries: {attempts: 3, perTryTimeout: 2s, retryOn: 5xx}\n";
  for (const std::string& text : {service + "---\n" + route, route + "---\n" + service}) {
    auto r = import_configs({{"bundle.yaml", text}});
    EXPECT_EQ(num(r, "client.retries"), 3);
    EXPECT_EQ(num(r, "client.timeout_s"), 2);
  }
  std::string e = error_of({{"svc.yaml", service}});
  EXPECT_NE(e.find("svc.yaml:2: kind: 'Service' carries no retry settings we read"),
            std::string::npos)
      << e;
}

TEST(ConfigsPolicy, PostMortemLadder) {
  auto r = import1("retrystorm/postmortem.yaml");
  EXPECT_EQ(num(r, "client.retries"), 6);
  EXPECT_EQ(num(r, "client.backoff.base_s"), 30);
  EXPECT_EQ(num(r, "client.backoff.multiplier"), 2);
  EXPECT_EQ(num(r, "client.deadline_s"), 1800);
  auto u = import1("retrystorm/postmortem-units.yaml");
  EXPECT_EQ(num(u, "client.deadline_s"), 1800);
  EXPECT_EQ(u.layers[0].ladder_s, r.layers[0].ladder_s);
}

TEST(ConfigsStack, LayersMultiplyAndDifferentRetriesUseTheStack) {
  auto r = import_configs({fixture("stack/edge-envoy.yaml"), fixture("stack/service-grpc.json")});
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(num(r, "client.layers"), 2);
  EXPECT_EQ(str(r, "client.stack_retries"), "3,2");
  EXPECT_EQ(num(r, "client.deadline_s"), 30);  // the outermost layer's
  EXPECT_EQ(num(r, "client.timeout_s"), 4);    // the innermost layer's
  Scenario s = preset_or_throw("primary-failover").scenario;
  apply_keys(s, r.keys);
  EXPECT_EQ(s.attempts(), 12);
  auto same =
      import_configs({fixture("envoy/unknown-field.yaml"), fixture("envoy/unknown-field.yaml")});
  EXPECT_EQ(num(same, "client.retries"), 2);
  EXPECT_EQ(str(same, "client.stack_retries"), "");
}

// Issue 10, item 10: 7 files imported as `client.layers: 7`, which `run`
// refuses. Keys outside their range (key table, src/core/model/keys.cpp) or a
// stack with more attempts than `run` allows are refused, naming the files.
TEST(ConfigsStack, ImportsOutsideAKeysRangeAreRefused) {
  std::vector<ConfigFile> seven;
  for (int i = 1; i <= 7; ++i)
    seven.push_back({"layer" + std::to_string(i) + ".yaml",
                     "retry_policy:\n  retry_on: 5xx\n  num_retries: 1\n"});
  std::string err = error_of(seven);
  EXPECT_NE(err.find("client.layers: 7 is out of range; allowed from 1 to 6"), std::string::npos)
      << err;
  EXPECT_NE(err.find("layer1.yaml"), std::string::npos) << err;
  EXPECT_NE(err.find("layer7.yaml"), std::string::npos) << err;
  seven.pop_back();
  EXPECT_EQ(error_of(seven), "");  // 6 layers: as many as `run` takes

  ConfigFile hundred{"edge.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 100\n"};
  err = error_of({hundred, hundred});  // 101 x 101 attempts
  EXPECT_NE(err.find("10201 attempts per request; the limit is 10000"), std::string::npos) << err;
  EXPECT_NE(err.find("edge.yaml"), std::string::npos) << err;

  err = error_of({{"slow.yaml",
                   "retry_policy:\n  retry_on: 5xx\n  num_retries: 1\n"
                   "  per_try_timeout: 100000000s\n"}});
  EXPECT_NE(err.find("client.timeout_s: 100000000 is out of range"), std::string::npos) << err;
  EXPECT_NE(err.find("slow.yaml:4: retry_policy.per_try_timeout"), std::string::npos) << err;

  // Lint still reads such files: their findings are the point.
  std::vector<ConfigFile> eight(8, hundred);
  EXPECT_NO_THROW(import_configs(eight, false));
}

// Every importer caps a count above the model's 100 retries per layer
// through model_retries: read as 100, one warning naming the file's line,
// the count in the file's own terms and the cap, and lint's
// retries-above-model-cap. The systems run such counts: Envoy's num_retries
// is a UInt32Value, Istio's attempts an int32, Linkerd's limit a u16, AWS
// max_attempts unbounded.
struct CappedCase {
  ConfigFile file;
  long long uncapped;   // retries the system makes
  std::string warning;  // file:line: key: the count as the file counts it
};

void expect_capped(const CappedCase& c) {
  ImportResult r = import_configs({c.file});  // runnable: 101 attempts
  EXPECT_EQ(num(r, "client.retries"), 100) << c.file.name;
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(r.layers[0].retries, 100);
  EXPECT_EQ(r.layers[0].uncapped_retries, c.uncapped);
  EXPECT_NE(r.layers[0].from.at("client.retries").find(", read as the model's most: 100 retries"),
            std::string::npos)
      << r.layers[0].from.at("client.retries");
  int said_cap = 0;
  for (const auto& w : r.warnings)
    said_cap += w.find("more than the model runs") != std::string::npos;
  EXPECT_EQ(said_cap, 1) << said(r);
  EXPECT_TRUE(warned(r, c.warning)) << said(r);
  EXPECT_TRUE(warned(r, "A request that keeps failing makes 101 attempts in the simulation, not " +
                            std::to_string(c.uncapped + 1)))
      << said(r);
  LintReport lr = lint_configs({c.file});
  int fired = 0;
  for (const auto& f : lr.findings)
    if (f.rule == "retries-above-model-cap") {
      ++fired;
      EXPECT_EQ(f.severity, Severity::warning);
      EXPECT_EQ(f.numbers["retries"], c.uncapped);
      EXPECT_EQ(f.numbers["model_retries"], 100);
    }
  EXPECT_EQ(fired, 1) << c.file.name;
}

TEST(ConfigsModelCap, EnvoyNumRetriesAboveTheCap) {
  expect_capped({{"e.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 1000\n"},
                 1000,
                 "e.yaml:3: retry_policy.num_retries: 1000 retries (1001 attempts per request) "
                 "is more than the model runs: at most 100 retries per layer, so this layer is "
                 "imported with 100."});
  // 100 is the model's own: no warning, no finding.
  ImportResult at =
      import_configs({{"h.yaml", "retry_policy:\n  retry_on: 5xx\n  num_retries: 100\n"}});
  EXPECT_EQ(at.layers.at(0).uncapped_retries, 0);
  EXPECT_FALSE(warned(at, "more than the model runs")) << said(at);
}

// max_attempts counts attempts, the first included: 1000 is 999 retries,
// and the warning says attempts first, as the file does.
TEST(ConfigsModelCap, AwsMaxAttemptsAboveTheCap) {
  expect_capped({{"a.ini", "[default]\nretry_mode = standard\nmax_attempts = 1000\n"},
                 999,
                 "a.ini:3: [default] max_attempts: 1000 attempts per request (999 retries) is "
                 "more than the model runs: at most 101 attempts (100 retries) per layer, so "
                 "this layer is imported with 101 attempts."});
  // 101 attempts are 100 retries: the model's own.
  ImportResult at =
      import_configs({{"b.ini", "[default]\nretry_mode = standard\nmax_attempts = 101\n"}});
  EXPECT_EQ(num(at, "client.retries"), 100);
  EXPECT_EQ(at.layers.at(0).uncapped_retries, 0);
  EXPECT_FALSE(warned(at, "more than the model runs")) << said(at);
}

TEST(ConfigsModelCap, IstioAndLinkerdCountsAboveTheCap) {
  expect_capped({{"vs.yaml",
                  "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n"
                  "  - route:\n    - destination: {host: a}\n    retries:\n      attempts: 1000\n"},
                 1000,
                 "vs.yaml:8: spec.http[0].retries.attempts: 1000 retries (1001 attempts per "
                 "request) is more than the model runs"});
  expect_capped({{"l.yaml",
                  "kind: Service\nmetadata:\n  annotations:\n    retry.linkerd.io/http: 5xx\n"
                  "    retry.linkerd.io/limit: \"65535\"\n"},
                 65535,
                 "l.yaml:5: metadata.annotations.retry.linkerd.io/limit: 65535 retries (65536 "
                 "attempts per request) is more than the model runs"});
  // Istio's attempts is an int32: one more does not fit Istio's API, refused.
  std::string e = error_of({{"big.yaml",
                             "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n"
                             "  http:\n  - route:\n    - destination: {host: a}\n    retries:\n"
                             "      attempts: 2147483648\n"}});
  EXPECT_NE(e.find("big.yaml:8: spec.http[0].retries.attempts: '2147483648' is out of range; "
                   "allowed 0 to 2147483647"),
            std::string::npos)
      << e;
}

TEST(ConfigsFuzzFindings, InputsThatHungYamlCppLoadAll) {
  // yaml-cpp 0.7's LoadAll never returns on these (found by fuzz/); we split
  // documents ourselves.
  for (const std::string& text : {std::string(",\xb8\xa2|"), std::string("#A\x05\x07\0\0a\0t: 30s"
                                                                         "retriesy_policy:\n   , "
                                                                         "retry_o retry_o 0s\n",
                                                                         55)}) {
    std::vector<std::string> warnings;
    for (const char* system : {"envoy", "istio", "linkerd", "retrystorm"})
      EXPECT_THROW(import_file({"hang.yaml", text}, warnings, system), InputError);
  }
  // A number nlohmann::json cannot hold is bad input, not a crash.
  std::string big = error_of({{"big.json", "{\"methodConfig\": 1e99999}"}});
  EXPECT_NE(big.find("big.json: not valid JSON"), std::string::npos) << big;
  // Documents split by --- keep their line numbers.
  std::string e = error_of({{"two.yaml",
                             "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec:\n  "
                             "host: a\n---\napiVersion: networking.istio.io/v1\nkind: "
                             "VirtualService\nspec:\n  http:\n  - timeout: soon\n"}});
  EXPECT_NE(e.find("two.yaml:10: spec.http[0].timeout"), std::string::npos) << e;
}

TEST(ConfigsDurations, EveryForm) {
  Where w{"f", "k", 1};
  DurationRules go{false, false, true}, proto{true, false, false}, plain{false, true, true};
  EXPECT_DOUBLE_EQ(parse_duration_text("0.1s", w, proto), 0.1);
  EXPECT_DOUBLE_EQ(parse_duration_text("100ms", w, go), 0.1);
  EXPECT_DOUBLE_EQ(parse_duration_text("1m", w, go), 60);
  EXPECT_DOUBLE_EQ(parse_duration_text("1m30s", w, go), 90);
  EXPECT_DOUBLE_EQ(parse_duration_text("2h", w, go), 7200);
  EXPECT_DOUBLE_EQ(parse_duration_text("250us", w, go), 0.00025);
  EXPECT_DOUBLE_EQ(parse_duration_text("30", w, plain), 30);
  EXPECT_THROW(parse_duration_text("30", w, go), InputError);
  EXPECT_THROW(parse_duration_text("100ms", w, proto), InputError);
  EXPECT_THROW(parse_duration_text("-1s", w, go), InputError);
  EXPECT_THROW(parse_duration_text("1x", w, go), InputError);
  EXPECT_EQ(human_duration(1890), "31 min 30 s");
  EXPECT_EQ(human_duration(1800), "30 min");
  EXPECT_EQ(human_duration(0.25), "250 ms");
  EXPECT_EQ(go_duration(90), "1m30s");
  EXPECT_EQ(go_duration(0.1), "100ms");
  EXPECT_EQ(go_duration(1.5), "1.5s");
  EXPECT_EQ(proto_duration(0.1), "0.1s");
}

TEST(ConfigsOutput, TextJsonYaml) {
  auto r = import1("envoy/route.yaml");
  std::string t = keys_text(r);
  EXPECT_NE(t.find("client.retries = 3"), std::string::npos) << t;
  EXPECT_NE(t.find("# envoy/route.yaml:15"), std::string::npos) << t;
  auto j = keys_object(r.keys);
  EXPECT_EQ(j["client"]["retries"], 3);
  EXPECT_EQ(j["client"]["backoff"]["jitter"], "full");
  // The partial scenario object reads back as a scenario.
  Scenario s = scenario_from_json(j, preset_or_throw("order-status").scenario);
  EXPECT_EQ(s.client.retries, 3);
  Scenario y = scenario_from_text(json_to_yaml_text(j), "import.yaml");
  EXPECT_EQ(y.client.retries, 3);
  EXPECT_DOUBLE_EQ(y.client.timeout_s, 2);
}

}  // namespace
}  // namespace retrystorm::configs
