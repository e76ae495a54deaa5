// Envoy's retry settings written from a scenario: the route's timeout and
// retry_policy, and the cluster's circuit breaker with the retry budget.
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "systems/envoy/retry_on.hpp"
#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

namespace {

// The same threshold's bulkheads, where the scenario sets them (left out,
// Envoy allows 1,024 of each).
void envoy_bulkheads(YAML::Emitter& c, const Scenario& s) {
  if (s.client.max_requests > 0)
    entry(c, "max_requests", std::to_string(s.client.max_requests),
          "attempts in flight per Envoy; beyond them 503 at once, not retried");
  if (s.client.max_connections <= 0) return;
  entry(c, "max_connections", std::to_string(s.client.max_connections),
        "HTTP/1 connections per Envoy; attempts beyond them wait for one");
  entry(c, "max_pending_requests", std::to_string(s.client.max_pending_requests),
        "attempts that may wait for a connection; beyond them 503 at once");
}

// The cluster's outlier detection (consecutive 5xx, the only kind the model
// runs) and the load balancer's panic threshold, when the scenario sets them.
void envoy_outlier(YAML::Emitter& c, const Scenario& s, const Fit& fit) {
  const OutlierSettings& o = s.client.outlier;
  if (o.consecutive_5xx <= 0) return;
  begin_map(c, "outlier_detection",
            "eject a host after consecutive 5xx (a timeout counts as 504); success-rate "
            "ejection, on by default from 5 hosts, is not modelled");
  entry(c, "consecutive_5xx", std::to_string(o.consecutive_5xx));
  entry(c, "interval",
        proto_duration(fit.duration(o.interval_s, "client.outlier_interval_s", "interval")));
  entry(c, "base_ejection_time",
        proto_duration(
            fit.duration(o.ejection_s, "client.outlier_ejection_s", "base_ejection_time")));
  entry(c, "max_ejection_time",
        proto_duration(
            fit.duration(o.max_ejection_s, "client.outlier_max_ejection_s", "max_ejection_time")));
  entry(c, "max_ejection_percent",
        number_text(fit.whole(o.max_percent, 0, 100, "max_ejection_percent")));
  c << YAML::EndMap;
  begin_map(c, "common_lb_config");
  begin_map(c, "healthy_panic_threshold",
            "below this percent of hosts not ejected, every host takes traffic");
  entry(c, "value", number_text(o.panic_percent));
  c << YAML::EndMap << YAML::EndMap;
}

// The cluster's circuit breaker: the retry budget.
void envoy_cluster(YAML::Emitter& c, const Scenario& s, const Fit& fit) {
  auto& notes = fit.notes;
  const Budget& b = s.client.budget;
  comment_line(c, "Cluster: goes under clusters[] (the cluster this route sends to)");
  c << YAML::BeginMap;
  begin_map(c, "circuit_breakers");
  c << YAML::Key << "thresholds" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(c, "priority", "DEFAULT");
  if (b.kind == BudgetKind::envoy_concurrency && b.ratio == 0) {
    entry(c, "max_retries", number_text(fit.whole(b.min_concurrency, 0, kUint32Max, "max_retries")),
          "a fixed cap on concurrent retries, no retry_budget");
  } else if (b.kind == BudgetKind::envoy_concurrency || b.kind == BudgetKind::window ||
             b.kind == BudgetKind::token_bucket || b.kind == BudgetKind::ratio_ttl) {
    begin_map(c, "retry_budget");
    begin_map(c, "budget_percent", "active retries <= this share of active + pending requests");
    entry(c, "value", number_text(fit.percent(b.ratio, "retry_budget.budget_percent")));
    c << YAML::EndMap;
    double minc = b.kind == BudgetKind::envoy_concurrency ? b.min_concurrency : 3;
    entry(c, "min_retry_concurrency",
          number_text(fit.whole(minc, 0, kUint32Max, "retry_budget.min_retry_concurrency")));
    c << YAML::EndMap;
    if (b.kind != BudgetKind::envoy_concurrency)
      notes.push_back(
          "Envoy's retry budget counts concurrent retries against active requests; "
          "the scenario's '" +
          budget_kind_name(b.kind) + "' budget (retries against first attempts over " +
          human_duration(b.kind == BudgetKind::ratio_ttl ? b.ttl_s : b.window_s) +
          ") is approximated by the same share");
  } else {
    // Left out, max_retries is 3 (ClusterInfoImpl::ResourceManagers::load,
    // source/common/upstream/upstream_impl.cc): the largest UInt32Value lifts
    // it, as Istio does, so the file means "no limit" (docs/configs.md).
    entry(c, "max_retries", "4294967295",
          "no limit on concurrent retries (left out, Envoy allows 3)\n"
          "A budget caps retries as a share of traffic:\n"
          "retry_budget:\n  budget_percent: {value: 20}\n  min_retry_concurrency: 3");
    if (b.kind != BudgetKind::none)
      notes.push_back("the scenario's '" + budget_kind_name(b.kind) +
                      "' budget has no Envoy equivalent; written without a limit");
  }
  envoy_bulkheads(c, s);
  c << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  envoy_outlier(c, s, fit);
  c << YAML::EndMap;
}

// retry_policy's backoff: Envoy always uses full jitter and doubles the window.
void envoy_back_off(YAML::Emitter& y, const Scenario& s, const Fit& fit, int retries) {
  auto& notes = fit.notes;
  const Backoff& b = s.client.backoff;
  double base = fit.duration(first_window(b, "Envoy", "base_interval", notes),
                             "client.backoff.base_s", "base_interval");
  begin_map(y, "retry_back_off");
  entry(y, "base_interval", proto_duration(base));
  double cap = b.cap_s > 0 ? std::max(b.cap_s, base) : std::max(top_window(b, retries), base);
  cap = fit.duration(cap, "client.backoff.cap_s", "max_interval");
  entry(y, "max_interval", proto_duration(cap),
        b.cap_s > 0 ? "" : "no cap in the scenario: the largest window the retries reach");
  y << YAML::EndMap;
  if (b.jitter != Jitter::full)
    notes.push_back(
        "Envoy always draws each delay uniformly in [0, window) (full jitter); the "
        "scenario's jitter '" +
        jitter_name(b.jitter) + "' cannot be expressed");
  if (b.multiplier != 2)
    notes.push_back("Envoy doubles the window each retry; a multiplier of " +
                    number_text(b.multiplier) + " cannot be expressed");
}

// retry_on for the scenario's retried answers (client.retry_on) and
// timeouts (envoy::retry_on_items); a 429 as a retriable status code.
std::string envoy_retry_on(const Scenario& s, bool& with_429, const Fit& fit) {
  const AnswerSet a = s.retried_answers();
  with_429 = (a & answer_bit(FailureClass::http_429)) != 0;
  std::string out;
  for (const auto& i :
       envoy::retry_on_items(a, s.client.retry_on_timeout, s.client.retry_on, fit.notes))
    out += (out.empty() ? "" : ",") + i;
  return out;
}

// Envoy waits a retried answer's Retry-After (client.pushback envoy) with
// rate_limited_retry_back_off; it cannot wait one exactly.
void envoy_rate_limited(YAML::Emitter& y, const Scenario& s, const Fit& fit) {
  if (s.client.pushback == Pushback::ignore) return;
  if (s.client.pushback == Pushback::exact)
    fit.notes.push_back(
        "Envoy waits a Retry-After in [p, 1.5 p), not exactly: written as "
        "rate_limited_retry_back_off");
  begin_map(y, "rate_limited_retry_back_off");
  y << YAML::Key << "reset_headers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key
    << "name" << YAML::Value << "Retry-After" << YAML::Key << "format" << YAML::Value << "SECONDS"
    << YAML::EndMap << YAML::EndSeq;
  entry(y, "max_interval",
        proto_duration(
            fit.duration(s.client.pushback_max_s, "client.pushback_max_s", "max_interval")));
  y << YAML::EndMap;
}

// client.hedging: Envoy hedges on the per-try timeout (after the backoff).
void envoy_hedge_policy(YAML::Emitter& y, const Scenario& s, const Fit& fit, int retries) {
  Hedging hedging = exported_hedging(s);
  if (hedging == Hedging::none || retries <= 0) return;
  if (hedging == Hedging::grpc)
    fit.notes.push_back(
        "gRPC-style hedging is written as hedge_on_per_try_timeout: Envoy sends the next "
        "attempt after the backoff, not at once, and retries only the latest attempt's failure");
  if (!s.client.retry_on_timeout)
    fit.notes.push_back("hedge_on_per_try_timeout needs per_try_timeout; none is written");
  begin_map(y, "hedge_policy");
  entry(y, "hedge_on_per_try_timeout", true,
        "a per-try timeout sends the next attempt and keeps the slow one; the first good "
        "answer wins");
  y << YAML::EndMap;
}

// The route's timeout and retry_policy.
void envoy_route(YAML::Emitter& y, const Scenario& s, const Fit& fit, int retries) {
  comment_line(y, "Route: these fields go under route_config.virtual_hosts[].routes[].route");
  y << YAML::BeginMap;
  if (s.client.deadline_s > 0)
    entry(y, "timeout",
          proto_duration(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout")),
          "the whole request, all attempts and backoff included");
  else
    entry(y, "timeout", "0s", "no overall deadline (0s turns off Envoy's default of 15s)");
  begin_map(y, "retry_policy");
  bool with_429 = false;
  quoted_entry(y, "retry_on", envoy_retry_on(s, with_429, fit));
  if (with_429) {
    y << YAML::Key << "retriable_status_codes" << YAML::Value << YAML::Flow << YAML::BeginSeq << 429
      << YAML::EndSeq;
  }
  std::string attempts = "retries, so " + std::to_string(retries + 1) + " attempts per request";
  if (s.client.retry_on_timeout) {
    entry(y, "num_retries", retries, attempts);
    entry(y, "per_try_timeout",
          proto_duration(fit.duration(s.client.timeout_s, "client.timeout_s", "per_try_timeout")),
          "each attempt; without it a timed-out attempt is never retried");
  } else {
    entry(y, "num_retries", retries,
          attempts +
              "\nper_try_timeout left unset: an attempt may run until the route "
              "timeout\nand a timed-out attempt is never retried "
              "(client.retry_on_timeout: false)");
    if (s.client.deadline_s <= 0 || std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9)
      fit.notes.push_back(
          "without per_try_timeout an attempt's timeout is the route timeout; the "
          "scenario's " +
          human_duration(s.client.timeout_s) + " per attempt cannot be expressed");
  }
  envoy_back_off(y, s, fit, retries);
  envoy_rate_limited(y, s, fit);
  y << YAML::EndMap;
  envoy_hedge_policy(y, s, fit, retries);
  y << YAML::EndMap;
}

// The route part and the cluster part go to different places in Envoy's
// configuration: two blocks of one mapping, the notes between them. The
// cluster has an emitter of its own because its clamps add notes that are
// written before it.

}  // namespace

void write_envoy(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  YAML::Emitter route;
  comment_line(route, heading("Envoy", s));
  if (!notes.empty()) comment_lines(route, {notes.front()});  // the stack's note
  envoy_route(route, s, fit, retries);
  YAML::Emitter cluster;
  envoy_cluster(cluster, s, fit);
  server_notes(s, notes);
  comment_lines(route, notes);
  r.text = yaml_text(route) + "\n" + yaml_text(cluster);
}

}  // namespace retrystorm::configs
