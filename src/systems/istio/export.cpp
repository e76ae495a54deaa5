// Istio's retry settings written from a scenario: a VirtualService route's
// timeout and retries, and a DestinationRule with the retry budget.
#include <yaml-cpp/yaml.h>

#include "systems/envoy/retry_on.hpp"
#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

namespace {

// retryOn: Envoy's retry_on items for the scenario's retried failures
// (Istio's sidecar is Envoy), with a 429 as the code itself, which Istio
// moves into retriable_status_codes (route/retry/retry.go parseRetryOn).
std::string istio_retry_on(const Scenario& s, std::vector<std::string>& notes) {
  std::string out;
  for (std::string item : envoy::retry_on_items(s.retried_answers(), s.client.retry_on_timeout,
                                                s.client.retry_on, notes))
    out += (out.empty() ? "" : ",") + (item == "retriable-status-codes" ? "429" : item);
  return out;
}

// The budget part of a DestinationRule's trafficPolicy.
void istio_budget(YAML::Emitter& dr, const Scenario& s, const Fit& fit) {
  auto& notes = fit.notes;
  const Budget& b = s.client.budget;
  if (b.kind == BudgetKind::envoy_concurrency && b.ratio == 0) {
    double cap = fit.whole(b.min_concurrency, 0, kInt32Max, "maxRetries");
    begin_map(dr, "connectionPool");
    begin_map(dr, "http");
    entry(dr, "maxRetries", number_text(cap), "a fixed cap on concurrent retries");
    dr << YAML::EndMap << YAML::EndMap;
    if (cap == 0)
      notes.push_back(
          "maxRetries: Istio reads 0 as left out (no limit); a cap of 0 concurrent retries "
          "cannot be expressed: set retries.attempts to 0 instead");
  } else if (b.kind == BudgetKind::envoy_concurrency || b.kind == BudgetKind::window ||
             b.kind == BudgetKind::token_bucket || b.kind == BudgetKind::ratio_ttl) {
    double minc = b.kind == BudgetKind::envoy_concurrency ? b.min_concurrency : 3;
    begin_map(dr, "retryBudget", "recent Istio releases");
    entry(dr, "percent", number_text(fit.percent(b.ratio, "retryBudget.percent")));
    // applyRetryBudget (cluster_traffic_policy.go) sets the floor only above
    // 0: a 0 written would be read as 3. 1 is the closest floor it takes.
    double floor = fit.whole(minc, 0, kUint32Max, "retryBudget.minRetryConcurrency");
    if (floor == 0) {
      floor = 1;
      notes.push_back(
          "retryBudget.minRetryConcurrency: Istio reads 0 as left out (3); written as 1, the "
          "lowest floor it takes");
    }
    entry(dr, "minRetryConcurrency", number_text(floor));
    dr << YAML::EndMap;
    if (b.kind != BudgetKind::envoy_concurrency)
      notes.push_back("the scenario's '" + budget_kind_name(b.kind) +
                      "' budget is approximated by Envoy's concurrent retry budget of the "
                      "same share");
  } else {
    notes.push_back("the scenario's '" + budget_kind_name(b.kind) +
                    "' budget has no Istio equivalent");
  }
}

// The DestinationRule with the retry budget, a document of its own (nothing
// without a budget).
void istio_rule(YAML::Emitter& dr, const Scenario& s, const Fit& fit, const std::string& host) {
  if (s.client.budget.kind == BudgetKind::none) {
    fit.notes.push_back(
        "no retry budget: Istio lifts Envoy's retry limit; a DestinationRule "
        "trafficPolicy.retryBudget (percent 20, minRetryConcurrency 3) caps retries");
    return;
  }
  dr << YAML::BeginDoc;
  begin_resource(dr, "networking.istio.io/v1", "DestinationRule", host);
  dr << YAML::EndMap;
  begin_map(dr, "spec");
  entry(dr, "host", host);
  begin_map(dr, "trafficPolicy");
  istio_budget(dr, s, fit);
  dr << YAML::EndMap << YAML::EndMap << YAML::EndMap;
}

// retries.backoff (Istio 1.26+) sets Envoy's base_interval only; Envoy then
// doubles the window up to 10 x base with full jitter (ConvertPolicy, istio/istio
// pilot/pkg/networking/core/route/retry/retry.go; docs/policies.md).
void istio_backoff(const Scenario& s, const Fit& fit, YAML::Emitter& y) {
  const Backoff& b = s.client.backoff;
  if (b.base_s <= 0) {
    fit.notes.push_back(
        "Istio retries after Envoy's backoff (25 ms doubling to 250 ms when retries.backoff is "
        "left out); retrying at once cannot be expressed");
    return;
  }
  double base = fit.duration(b.base_s, "client.backoff.base_s", "retries.backoff");
  entry(y, "backoff", go_duration(base), "Istio 1.26+: Envoy's base_interval");
  bool envoy_shaped = b.multiplier == 2 && b.jitter == Jitter::full && b.cap_s > 0 &&
                      std::fabs(b.cap_s - 10 * b.base_s) <= 1e-9 * b.cap_s;
  if (!envoy_shaped)
    fit.notes.push_back(
        "Istio's retries.backoff sets the base only: Envoy doubles the window up to 10 x base "
        "and draws each delay in [0, window); the scenario's backoff (x" +
        number_text(b.multiplier) + ", cap " +
        (b.cap_s > 0 ? human_duration(b.cap_s) : std::string("none")) + ", jitter " +
        jitter_name(b.jitter) + ") cannot be expressed");
}

// The VirtualService route's timeout and retries.
void istio_retries(YAML::Emitter& y, const Scenario& s, const Fit& fit, int retries) {
  if (s.client.deadline_s > 0)
    entry(y, "timeout",
          go_duration(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout")),
          "the whole request, retries included");
  begin_map(y, "retries",
            s.client.deadline_s > 0
                ? ""
                : "no timeout: Istio's route timeout is off, so requests have no deadline");
  std::string attempts = "retries, so " + std::to_string(retries + 1) + " attempts";
  if (retries == 0) {
    // ConvertPolicy drops a policy of 0 attempts whole: a perTryTimeout or
    // retryOn written beside it would do nothing.
    entry(y, "attempts", 0, "no retries: Istio drops the retry policy, perTryTimeout with it");
    y << YAML::EndMap;
    if (s.client.deadline_s <= 0 || std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9)
      fit.notes.push_back("with no retries Istio applies no per-try timeout: the scenario's " +
                          human_duration(s.client.timeout_s) +
                          " per attempt is the route timeout's to bound");
    return;
  }
  if (s.client.retry_on_timeout) {
    entry(y, "attempts", retries, attempts);
    entry(y, "perTryTimeout",
          go_duration(fit.duration(s.client.timeout_s, "client.timeout_s", "perTryTimeout")));
  } else {
    entry(y, "attempts", retries,
          attempts + "\nperTryTimeout left unset: a timed-out attempt is never retried");
    if (s.client.deadline_s <= 0 || std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9)
      fit.notes.push_back(
          "without perTryTimeout an attempt's timeout is the route timeout; the "
          "scenario's " +
          human_duration(s.client.timeout_s) + " per attempt cannot be expressed");
  }
  entry(y, "retryOn", istio_retry_on(s, fit.notes));
  if (retries > 0) istio_backoff(s, fit, y);
  y << YAML::EndMap;
}

}  // namespace

void write_istio(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  const std::string host = "backend";
  YAML::Emitter y;
  comment_line(y, heading("Istio", s));
  comment_line(y, "Replace 'backend' with the service's host.");
  begin_resource(y, "networking.istio.io/v1", "VirtualService", host);
  y << YAML::EndMap;
  begin_map(y, "spec");
  y << YAML::Key << "hosts" << YAML::Value << YAML::BeginSeq << host << YAML::EndSeq;
  y << YAML::Key << "http" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "route" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  begin_map(y, "destination");
  entry(y, "host", host);
  y << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  istio_retries(y, s, fit, retries);
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  YAML::Emitter rule;  // written after the notes, which it adds to
  istio_rule(rule, s, fit, host);
  server_notes(s, notes);
  comment_lines(y, notes);
  r.text = yaml_text(y) + (rule.size() > 0 ? yaml_text(rule) : "");
}

}  // namespace retrystorm::configs
