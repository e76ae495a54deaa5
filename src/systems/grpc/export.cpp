// A gRPC service config written from a scenario: methodConfig's timeout and
// retryPolicy, and retryThrottling for the budget.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces
using nlohmann::ordered_json;

namespace {

// retryableStatusCodes for the scenario's retried failures, as the importer
// reads them: UNAVAILABLE is how a 503, a proxy's 429, a refused connection
// and a reset reach a gRPC client, RESOURCE_EXHAUSTED a server's own 429.
// Never empty (gRPC refuses an empty list).
ordered_json grpc_retryable_codes(const Scenario& s, std::vector<std::string>& notes) {
  const AnswerSet a = s.retried_answers(), k429 = answer_bit(FailureClass::http_429);
  if (a == k429) {
    note_retried(s, k429, "gRPC", notes);
    return ordered_json::array({"RESOURCE_EXHAUSTED"});
  }
  note_retried(s, kAllAnswers, "gRPC", notes);
  return ordered_json::array({"UNAVAILABLE"});
}

// methodConfig.retryPolicy. gRPC's own limits are in RetryMethodConfig::
// JsonPostLoad (src/core/client_channel/retry_service_config.cc): maxAttempts
// 2 or more, above 5 clamped to 5; backoffs above 0 (gRPC keeps milliseconds).
ordered_json grpc_retry_policy(const Scenario& s, const Fit& fit) {
  const int retries = exported_retries(s);
  auto& notes = fit.notes;
  int attempts = retries + 1;
  if (attempts > 5) {
    notes.push_back(std::to_string(attempts) + " attempts: gRPC allows at most 5, so " +
                    "maxAttempts is 5 (" + std::to_string(retries) +
                    " retries cannot be expressed)");
    attempts = 5;
  }
  ordered_json rp = ordered_json::object();
  rp["maxAttempts"] = attempts;
  double base = fit.duration(first_window(s.client.backoff, "gRPC", "initialBackoff", notes),
                             "client.backoff.base_s", "initialBackoff");
  rp["initialBackoff"] = grpc_duration_text(base);
  // Without a cap: the largest window the retries gRPC makes reach.
  double cap = s.client.backoff.cap_s > 0
                   ? std::max(s.client.backoff.cap_s, base)
                   : std::max(top_window(s.client.backoff, attempts - 1), base);
  if (s.client.backoff.cap_s <= 0)
    notes.push_back(
        "no backoff cap in the scenario: maxBackoff is the largest delay the "
        "retries reach, so it never binds");
  rp["maxBackoff"] = grpc_duration_text(fit.duration(cap, "client.backoff.cap_s", "maxBackoff"));
  rp["backoffMultiplier"] = s.client.backoff.multiplier;
  rp["retryableStatusCodes"] = grpc_retryable_codes(s, notes);
  if (s.client.retry_on_timeout) {
    rp["perAttemptRecvTimeout"] = grpc_duration_text(
        fit.duration(s.client.timeout_s, "client.timeout_s", "perAttemptRecvTimeout"));
    notes.push_back(
        "perAttemptRecvTimeout (per-attempt timeout) is applied only by gRPC C-core (C++, "
        "Python, Ruby, PHP, ...), and only on channels created with the argument "
        "grpc.experimental.enable_hedging; grpc-js, grpc-go and grpc-java ignore it and end "
        "an attempt only at the deadline, without retrying it");
  } else if (s.client.deadline_s <= 0 ||
             std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9) {
    notes.push_back("an attempt's timeout is the deadline; the scenario's " +
                    human_duration(s.client.timeout_s) + " per attempt cannot be expressed");
  }
  if (s.client.backoff.jitter == Jitter::full)
    notes.push_back(
        "full jitter is what grpc-go before 1.69 and grpc-java before 1.71 draw (U(0, "
        "backoff)); gRPC C-core and newer grpc-go / grpc-java multiply each delay by U(0.8, "
        "1.2)");
  else if (s.client.backoff.jitter != Jitter::grpc)
    notes.push_back(
        "gRPC multiplies each delay by U(0.8, 1.2) (grpc-go before 1.69 and "
        "grpc-java before 1.71: U(0, backoff)); the scenario's jitter '" +
        jitter_name(s.client.backoff.jitter) + "' cannot be expressed");
  return rp;
}

// methodConfig.hedgingPolicy (client.hedging): maxAttempts as retryPolicy's,
// hedgingDelay the per-attempt timeout, the retried 503 as UNAVAILABLE.
ordered_json grpc_hedging_policy(const Scenario& s, const Fit& fit) {
  auto& notes = fit.notes;
  int attempts = std::min(exported_retries(s) + 1, 5);
  if (exported_retries(s) + 1 > 5)
    notes.push_back("gRPC allows at most 5 hedged attempts: maxAttempts is 5");
  if (exported_hedging(s) == Hedging::envoy)
    notes.push_back(
        "Envoy-style hedging is written as a hedgingPolicy: gRPC sends the next hedge at once "
        "after hedgingDelay, without a backoff");
  ordered_json hp = ordered_json::object();
  hp["maxAttempts"] = attempts;
  hp["hedgingDelay"] =
      grpc_duration_text(fit.duration(s.client.timeout_s, "client.timeout_s", "hedgingDelay"));
  if (s.retried_answers() & answer_bit(FailureClass::http_503))
    hp["nonFatalStatusCodes"] = ordered_json::array({"UNAVAILABLE"});
  notes.push_back(
      "hedging runs in grpc-java and grpc-js; gRPC C-core and grpc-go ignore a hedgingPolicy "
      "and send one attempt");
  return hp;
}

// retryThrottling: maxTokens a whole number from 1 to 1000, tokenRatio above
// 0 with 3 decimals (RetryGlobalConfig::JsonPostLoad, same file).
ordered_json grpc_throttling(const Scenario& s, const Fit& fit) {
  auto& notes = fit.notes;
  if (s.client.budget.kind == BudgetKind::grpc_throttling) {
    long long mt = std::clamp<long long>(std::llround(s.client.budget.max_tokens), 1, 1000);
    double ratio = std::max(std::round(s.client.budget.token_ratio * 1000) / 1000, 0.001);
    if (static_cast<double>(mt) != s.client.budget.max_tokens)
      notes.push_back("maxTokens must be a whole number from 1 to 1000");
    if (ratio != s.client.budget.token_ratio)
      notes.push_back("gRPC keeps 3 decimals of tokenRatio and needs it above 0: " +
                      number_text(s.client.budget.token_ratio) + " written as " +
                      number_text(ratio));
    return {{"maxTokens", mt}, {"tokenRatio", ratio}};
  }
  if (s.client.budget.kind != BudgetKind::none)
    notes.push_back("the scenario's '" + budget_kind_name(s.client.budget.kind) +
                    "' budget has no gRPC equivalent; retryThrottling {maxTokens: 10, "
                    "tokenRatio: 0.1} is the closest gRPC defence");
  else
    notes.push_back("no retry budget: add retryThrottling (e.g. maxTokens 10, tokenRatio 0.1)");
  return nullptr;
}

}  // namespace

void write_grpc(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  ordered_json mc = ordered_json::object();
  mc["name"] = ordered_json::array({ordered_json::object()});
  if (s.client.deadline_s > 0)
    mc["timeout"] =
        grpc_duration_text(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout"));
  else
    notes.push_back("no overall deadline: methodConfig has no timeout");
  if (retries > 0 && exported_hedging(s) != Hedging::none)
    mc["hedgingPolicy"] = grpc_hedging_policy(s, fit);
  else if (retries > 0)
    mc["retryPolicy"] = grpc_retry_policy(s, fit);
  else
    notes.push_back("no retries: no retryPolicy");
  ordered_json th = grpc_throttling(s, fit);
  server_notes(s, notes);
  ordered_json sc = ordered_json::object();
  ordered_json comment = ordered_json::array();
  comment.push_back("gRPC service config for scenario '" + s.name + "' (written by retrystorm)");
  for (const auto& n : notes) comment.push_back(n);
  sc["_comment"] = comment;
  sc["methodConfig"] = ordered_json::array({mc});
  if (!th.is_null()) sc["retryThrottling"] = th;
  r.text = sc.dump(2) + "\n";
}

}  // namespace retrystorm::configs
