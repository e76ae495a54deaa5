// Which failures each system retries (docs/policies.md, "Which failures are
// retried"): the classes of an attempt's failure, the retried answers each
// importer reads, and the verdict they change. The four configurations of
// the table there, imported and run on primary-failover with a queue of 50,
// where the outage answers 503 once the queue is full: today's model retried
// them (peak 3-4x), the real systems do not retry a 503 (peak 1x).
#include <gtest/gtest.h>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "policies/client_policy.hpp"
#include "preset_scenario.hpp"
#include "systems/import.hpp"

namespace retrystorm {
namespace {

Metrics run_imported(const std::string& name, const std::string& text,
                     std::map<std::string, std::string> sets = {}) {
  Scenario s = testing::preset("primary-failover", {{"server.queue_limit", "50"}});
  configs::ImportResult r = configs::import_configs({{name, text}}, false);
  configs::apply_keys(s, r.keys);
  for (const auto& [path, value] : sets) set_key_text(s, path, value);
  validate(s);
  return compute_metrics(run_engine(s));
}

std::string retry_on_of(const std::string& name, const std::string& text) {
  configs::ImportResult r = configs::import_configs({{name, text}}, false);
  for (const auto& k : r.keys)
    if (k.path == "client.retry_on") return std::get<std::string>(k.value);
  return "(not imported)";
}

struct Row {
  const char* system;
  const char* file;
  const char* text;
  const char* retry_on;  // what import reads
};

// HAProxy: back_handle_st_cer (src/backend.c) retries a failed connection;
// an answer is retried only by do_l7_retry, with TX_L7_RETRY, which the
// default retry-on conn-failure does not set.
// nginx: ngx_http_upstream_next passes a failure on only when its ft_type is
// in proxy_next_upstream's mask (default error timeout).
// Envoy: RetryStateImpl::wouldRetryFromHeaders returns false for a 503 without
// 5xx, gateway-error or a listed retriable status code.
// Istio: retry.go defaultPolicy, retriable_status_codes without 503 while
// EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY is on (the default).
const Row kRows[] = {
    {"HAProxy", "haproxy.cfg",
     "backend app\n  mode http\n  retries 3\n  timeout server 5s\n  server a 10.0.0.1:80\n",
     "refused"},
    {"nginx", "nginx.conf",
     "upstream app {\n  server 10.0.0.1:80;\n  server 10.0.0.2:80;\n  server 10.0.0.3:80;\n"
     "  server 10.0.0.4:80;\n}\nserver {\n  listen 80;\n"
     "  location / { proxy_pass http://app; }\n}\n",
     "refused,reset"},
    {"Envoy", "envoy.yaml",
     "timeout: 15s\nretry_policy:\n  retry_on: connect-failure,refused-stream\n  num_retries: 3\n"
     "  per_try_timeout: 5s\n",
     "refused"},
    {"Istio", "vs.yaml",
     "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata: {name: app}\n"
     "spec:\n  hosts: [app]\n  http:\n  - route:\n    - destination: {host: app}\n"
     "    retries: {attempts: 3, perTryTimeout: 5s}\n",
     "refused"},
};

TEST(FailureClasses, EachSystemsDefaultDoesNotRetryA503AndThePeakStaysAt1x) {
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.system);
    EXPECT_EQ(retry_on_of(row.file, row.text), row.retry_on);
    Metrics real = run_imported(row.file, row.text);
    EXPECT_NEAR(real.peak_amplification, 1, 1e-9);
    // The same policy retrying every answer, as the model read it before.
    Metrics every = run_imported(row.file, row.text, {{"client.retry_on", "all"}});
    EXPECT_GT(every.peak_amplification, 2);
  }
}

// The same files with a 503 listed: retried again.
TEST(FailureClasses, Listing503RetriesItInEachSystem) {
  const Row listed[] = {
      {"HAProxy", "haproxy.cfg",
       "backend app\n  mode http\n  retries 3\n  retry-on conn-failure 503\n  timeout server 5s\n"
       "  server a 10.0.0.1:80\n",
       "503,refused"},
      {"Envoy", "envoy.yaml",
       "retry_policy:\n  retry_on: retriable-status-codes\n  retriable_status_codes: [503, 429]\n"
       "  num_retries: 3\n",
       "503,429"},
      {"Istio", "vs.yaml",
       "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata: {name: app}\n"
       "spec:\n  hosts: [app]\n  http:\n  - route:\n    - destination: {host: app}\n"
       "    retries: {attempts: 3, retryOn: 'connect-failure,503'}\n",
       "503,refused"},
  };
  for (const Row& row : listed) {
    SCOPED_TRACE(row.system);
    EXPECT_EQ(retry_on_of(row.file, row.text), row.retry_on);
  }
  EXPECT_EQ(retry_on_of("envoy.yaml", "retry_policy: {retry_on: 5xx, num_retries: 2}\n"),
            "503,refused,reset");
}

// gRPC: a 503 or 429 from a proxy, a refused connection and a reset reach the
// client as UNAVAILABLE (doc/http-grpc-status-mapping.md).
TEST(FailureClasses, GrpcRetriesTheAnswersItHearsAsUnavailable) {
  auto config = [](const std::string& codes) {
    return R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
        "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
        "retryableStatusCodes": [)" +
           codes + "]}}]}";
  };
  EXPECT_EQ(retry_on_of("service-config.json", config("\"UNAVAILABLE\"")), "all");
  EXPECT_EQ(retry_on_of("service-config.json", config("\"RESOURCE_EXHAUSTED\"")), "429");
  EXPECT_EQ(retry_on_of("service-config.json", config("\"ABORTED\"")), "none");
}

TEST(FailureClasses, TheDecisionReadsTheRetriedAnswers) {
  ClientPolicy::Settings s;
  s.layer_retries = {3};
  s.retried_answers = answer_bit(FailureClass::refused);
  ClientPolicy p(s);
  Failure refused{.attempt = 1, .answer = FailureClass::refused};
  Failure unavailable{.attempt = 1, .answer = FailureClass::http_503};
  Failure timed_out{.attempt = 1, .timed_out = true};
  EXPECT_TRUE(p.decide(refused).retries());
  EXPECT_EQ(p.decide(unavailable).verdict, RetryVerdict::answer_not_retried);
  EXPECT_FALSE(p.retryable(unavailable));      // gRPC's throttling does not count it
  EXPECT_TRUE(p.decide(timed_out).retries());  // timeouts: retry_on_timeout
}

TEST(FailureClasses, RetryOnIsCheckedAndSpelledOneWay) {
  Scenario s;
  for (const char* text : {"all", "none", "503", "429,refused", "refused, reset"}) {
    s.client.retry_on = text;
    EXPECT_NO_THROW(s.retried_answers()) << text;
  }
  s.client.retry_on = "503,teapot";
  try {
    s.retried_answers();
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("client.retry_on"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("teapot"), std::string::npos);
  }
  EXPECT_EQ(answer_set_text(kAllAnswers), "all");
  EXPECT_EQ(answer_set_text(0), "none");
  EXPECT_EQ(answer_set_text(answer_bit(FailureClass::reset) | answer_bit(FailureClass::http_503)),
            "503,reset");
}

// What the server answers when it rejects, and an incident that answers at
// once: refused connections during a 15 s outage, which HAProxy retries.
// Timed-out attempts are not retried here, so only answers can raise the peak.
TEST(FailureClasses, TheIncidentsFailureDecidesWhatIsRetried) {
  auto peak = [](const std::string& failure, const std::string& retry_on) {
    Scenario s = testing::preset("primary-failover", {{"engine", "agent"},
                                                      {"horizon_s", "60"},
                                                      {"incident.failure", failure},
                                                      {"client.retry_on", retry_on},
                                                      {"client.retry_on_timeout", "false"}});
    return compute_metrics(run_engine(s)).peak_amplification;
  };
  EXPECT_GT(peak("refused", "refused"), 2);      // answered at once and retried
  EXPECT_NEAR(peak("refused", "503"), 1, 1e-9);  // answered at once, not retried
  // The fluid engine has no instant at which one attempt finds the server busy.
  Scenario fluid = testing::preset("primary-failover");
  set_key_text(fluid, "incident.failure", "refused");
  EXPECT_THROW(validate(fluid), InputError);
  // A rejected attempt hears server.reject_status.
  auto rejected_peak = [](const std::string& status) {
    Scenario s = testing::preset("primary-failover", {{"server.queue_limit", "50"},
                                                      {"server.reject_status", status},
                                                      {"client.retry_on", "429"},
                                                      {"client.retry_on_timeout", "false"}});
    return compute_metrics(run_engine(s)).peak_amplification;
  };
  EXPECT_NEAR(rejected_peak("503"), 1, 1e-9);
  EXPECT_GT(rejected_peak("429"), 2);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// A layer that gives up on a refused connection answers the layer above with
// its own 503, as Envoy's router does once its retries are spent (router.cc,
// Filter::onUpstreamReset): an outer layer that retries refused connections
// only (Istio's default) does not retry it. The refusal went up as it came,
// and the outer layer multiplied the inner one's attempts (9 at the
// dependency, not 3).
TEST(FailureClasses, ALayerAnswersARefusedConnectionWithItsOwn503) {
  auto peak = [](const std::string& retry_on) {
    Scenario s = testing::preset("two-layer-stack", {{"engine", "agent"},
                                                     {"incident.failure", "refused"},
                                                     {"incident.capacity_factor", "0"},
                                                     {"client.retry_on", retry_on},
                                                     {"client.retry_on_timeout", "false"},
                                                     {"client.backoff.base_s", "0"},
                                                     {"client.backoff.jitter", "none"}});
    return compute_metrics(run_engine(s)).peak_amplification;  // retries at once: one step
  };
  const Scenario stack = testing::preset("two-layer-stack");
  const std::vector<int> retries = stack.layer_retries();
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_NEAR(peak("refused"), retries[1] + 1, 1e-9) << "the inner layer's attempts only";
  EXPECT_NEAR(peak("503,refused"), (retries[0] + 1) * (retries[1] + 1), 1e-9)
      << "an outer layer that retries 503 retries the inner one's answer";
}

}  // namespace
}  // namespace retrystorm
