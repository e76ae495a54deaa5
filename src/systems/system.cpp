#include "systems/system.hpp"

#include <array>

#include "systems/room.hpp"

namespace retrystorm::configs {

namespace {

// In the order every list of systems is shown.
const std::vector<SystemFacts> kFacts = {
    {System::envoy, "envoy", "Envoy", "yaml", true},
    {System::grpc, "grpc", "gRPC", "json", true},
    {System::istio, "istio", "Istio", "yaml", true},
    {System::linkerd, "linkerd", "Linkerd", "yaml", true},
    {System::aws, "aws", "AWS SDK", "ini", true},
    {System::haproxy, "haproxy", "HAProxy", "cfg", true},
    {System::nginx, "nginx", "nginx", "conf", true},
    {System::retrystorm, "retrystorm", "retrystorm", "yaml", false},
};

// Envoy's retry budget, which Istio configures too.
const KeyFix kEnvoyBudget = {{"client.budget.kind", std::string("envoy_concurrency")},
                             {"client.budget.ratio", 0.2},
                             {"client.budget.min_concurrency", 3.0}};

// The rooms, in the enum's order (room() indexes by it): each system's reader
// and writer (src/systems/<name>/), and the words lint's fixes use for its
// settings. Envoy, gRPC and Istio keep milliseconds; Linkerd's Go durations
// write microseconds ("1us").
const std::array<Room, 8> kRooms = {{
    {.system = System::envoy,
     .read_documents = read_envoy,
     .write = write_envoy,
     .min_duration_s = 0.001,
     .terms = {"retry_policy.num_retries", "retry_policy.per_try_timeout", "the route timeout",
               "retry_back_off.max_interval", false, "", "", ": ", ""},
     .budget_fix = {"add circuit_breakers.thresholds[].retry_budget {budget_percent: 20, "
                    "min_retry_concurrency: 3} to the cluster",
                    kEnvoyBudget},
     .budget_scope = " per Envoy instance",
     .deadline_stops = "Envoy ends the request at the route timeout and cancels the retries "
                       "still to come (Filter::onResponseTimeout)"},
    {.system = System::grpc,
     .read_documents = read_grpc,
     .write = write_grpc,
     .min_duration_s = 0.001,
     // gRPC refuses a retryPolicy with maxAttempts below 2 (C-core
     // RetryMethodConfig::JsonPostLoad, grpc-java's checkArgument): the whole
     // service config is rejected, so no retries means no retryPolicy.
     .terms = {"retryPolicy.maxAttempts", "retryPolicy.perAttemptRecvTimeout",
               "methodConfig.timeout", "retryPolicy.maxBackoff", true,
               "remove the retryPolicy (gRPC rejects the service config for a maxAttempts below "
               "2)",
               "", ": ", ""},
     .budget_fix = {"add retryThrottling {\"maxTokens\": 10, \"tokenRatio\": 0.1}",
                    {{"client.budget.kind", std::string("grpc_throttling")},
                     {"client.budget.max_tokens", 10.0},
                     {"client.budget.token_ratio", 0.1}}},
     .deadline_stops = "the call ends with DEADLINE_EXCEEDED at its deadline and no retry "
                       "starts after it"},
    {.system = System::istio,
     .read_documents = read_istio,
     .write = write_istio,
     .min_duration_s = 0.001,
     // Istio refuses a retry policy of attempts 0 with anything beside it
     // (ValidateHTTPRetry, istio pkg/config/validation/agent/validation.go).
     .terms = {"retries.attempts", "retries.perTryTimeout", "the route timeout",
               "retries.backoff (Istio 1.26+; Envoy caps the window at 10 x it)", false,
               "set retries to {attempts: 0} alone (Istio refuses perTryTimeout, retryOn and "
               "the rest beside attempts 0)",
               "", ": ", ""},
     .budget_fix = {"add a DestinationRule with trafficPolicy.retryBudget {percent: 20, "
                    "minRetryConcurrency: 3}",
                    kEnvoyBudget},
     .budget_scope = " per Envoy instance",
     .deadline_stops = "Envoy ends the request at the route timeout and cancels the retries "
                       "still to come"},
    {.system = System::linkerd,
     .read_documents = read_linkerd,
     .write = write_linkerd,
     .min_duration_s = 1e-6,
     // Linkerd reads retry.linkerd.io/limit: 0 as no limit given and keeps
     // its default of 1 retry: no retries means no retry condition.
     .terms = {"retry.linkerd.io/limit", "retry.linkerd.io/timeout",
               "timeout.linkerd.io/request (or the route's timeout)",
               "(Linkerd's backoff is fixed: 25 ms doubling to 250 ms)", false,
               "remove every retry.linkerd.io annotation (/http, /grpc, /limit, /timeout): each "
               "of them makes a retry policy, and Linkerd reads limit 0 as unset and keeps 1 "
               "retry",
               "", ": \"", "\""},
     .budget_fix = {"move the retries to a ServiceProfile with retryBudget {retryRatio: 0.2, "
                    "minRetriesPerSecond: 10, ttl: 10s}",
                    {{"client.budget.kind", std::string("ratio_ttl")},
                     {"client.budget.ratio", 0.2},
                     {"client.budget.min_retries_per_s", 10.0},
                     {"client.budget.ttl_s", 10.0}}},
     .deadline_stops = "the proxy ends the request at its timeout and no retry starts after it"},
    {.system = System::aws,
     .read_text = read_aws,
     .looks_like = looks_like_aws,
     .write = write_aws,
     .min_duration_s = 0.001,
     .terms = {"max_attempts", "the SDK client's read timeout", "the caller's deadline",
               "(fixed by the SDKs: 20 s in standard mode, no cap in legacy mode)", true, "", "",
               " = ", ""},
     .budget_fix = {"set retry_mode = standard (its retry quota stops retries when most fail)",
                    {{"client.budget.kind", std::string("aws_quota")},
                     {"client.budget.quota_tokens", 500.0},
                     {"client.budget.retry_cost", 5.0},
                     {"client.budget.timeout_cost", 10.0},
                     {"client.budget.success_reward", 1.0}}},
     .caller_sets_deadline = true},
    {.system = System::haproxy,
     .read_text = read_haproxy,
     .looks_like = looks_like_haproxy,
     .write = write_haproxy,
     .min_duration_s = 0.001,
     .terms = {"retries", "timeout server", "the caller's deadline (HAProxy has none per request)",
               "(HAProxy retries at once)", false, "", "", " ", ""},
     // No budget to add: the fix (fewer retries) is the text only.
     .budget_fix = {"HAProxy has no retry budget: keep retries at 1 and bound the queue (server "
                    "maxconn, timeout queue) so overload is shed, not retried",
                    {}}},
    {.system = System::nginx,
     .read_text = read_nginx,
     .looks_like = looks_like_nginx,
     .write = write_nginx,
     .min_duration_s = 0.001,
     .terms = {"proxy_next_upstream_tries", "proxy_read_timeout", "proxy_next_upstream_timeout",
               "(nginx retries at once)", true, "", "", " ", ";"},
     .budget_fix = {"nginx has no retry budget: set proxy_next_upstream_tries 2 (one retry) and "
                    "proxy_next_upstream_timeout",
                    {}},
     .deadline_stops = "nginx starts no try once proxy_next_upstream_timeout has passed since "
                       "the first (a try started before it runs on; ngx_http_upstream_next)"},
    {.system = System::retrystorm,
     .read_documents = read_policy,
     .terms = {"retries", "timeout_s", "deadline_s", "backoff.cap_s", false, "", "", ": ", ""},
     .budget_fix = {"add budget: {kind: window, ratio: 0.1, window_s: 10}",
                    {{"client.budget.kind", std::string("window")},
                     {"client.budget.ratio", 0.1},
                     {"client.budget.window_s", 10.0}}},
     .caller_sets_deadline = true,
     .our_own_format = true},
}};

}  // namespace

const std::vector<SystemFacts>& system_table() {
  return kFacts;
}

const SystemFacts& facts(System s) {
  return kFacts.at(static_cast<size_t>(s));
}

std::optional<System> system_named(std::string_view name) {
  for (const SystemFacts& f : kFacts)
    if (name == f.name) return f.system;
  return std::nullopt;
}

const Room& room(System s) {
  return kRooms.at(static_cast<size_t>(s));
}

LintTerms lint_terms(const LayerPolicy& l) {
  LintTerms t = room(l.system).terms;
  if (l.hedging == Hedging::grpc) {  // a gRPC hedgingPolicy counts its attempts the same way
    t.retries = "hedgingPolicy.maxAttempts";
    t.no_retries =
        "remove the hedgingPolicy (gRPC rejects the service config for a maxAttempts "
        "below 2)";
  }
  if (l.system == System::linkerd && l.format.rfind("Linkerd ServiceProfile", 0) == 0) {
    // A ServiceProfile has no retry count and ignores retry.linkerd.io
    // annotations: its route retries or not, and its budget bounds how much.
    t.cap = "(a ServiceProfile retries at once)";
    t.no_retries = "set isRetryable: false on the route (a ServiceProfile has no retry count)";
    t.no_count =
        "set a lower retryBudget.retryRatio (a ServiceProfile has no retry count; "
        "retry.linkerd.io annotations are ignored on it)";
  }
  return t;
}

}  // namespace retrystorm::configs
