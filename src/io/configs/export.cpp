#include "io/configs/export.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/configs/common.hpp"
#include "io/configs/import.hpp"
#include "io/logs/line_reader.hpp"
#include "model/keys.hpp"
#include "policies/backoff.hpp"
#include "policies/client_policy.hpp"

namespace retrystorm::configs {

using nlohmann::ordered_json;

namespace {

// The layer a configuration is written for: the innermost (the one that
// calls the dependency), as the one typed client policy reads the scenario.
int exported_retries(const Scenario& s) {
  return ClientPolicy::of(s).layer_retries.back();
}

// The scenario's name in a heading comment: a line break (or another control
// character) in it is escaped, so that it cannot end the comment.
std::string shown_name(const Scenario& s) {
  return logs::printable(s.name);
}

// The largest backoff window `n` retries reach: a cap that never binds.
double top_window(const Backoff& b, int n) {
  return backoff_window_s(b, std::max(n, 1));
}

std::string stack_note(const Scenario& s) {
  const ClientPolicy p = ClientPolicy::of(s);
  if (p.layers() <= 1) return "";
  std::string list;
  for (int r : p.layer_retries) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return "the scenario retries at " + std::to_string(p.layers()) + " layers (" + list +
         " retries, outermost first; up to " + std::to_string(p.attempts()) +
         " attempts per request): this is one layer's configuration (the innermost); each "
         "layer needs its own";
}

// A note as comment lines of at most 92 columns once "# " is put before
// them: the first line, then continuation lines indented by two spaces.
std::vector<std::string> wrapped(const std::string& note) {
  std::vector<std::string> lines{""};
  size_t len = 2;  // "# " before the first line, "#   " before the others
  bool line_start = true;
  std::istringstream words(note);
  for (std::string w; words >> w;) {
    if (!line_start && len + w.size() > 92) {
      lines.push_back("  ");
      len = 4;
      line_start = true;
    }
    lines.back() += (line_start ? "" : " ") + w;
    len += w.size() + 1;
    line_start = false;
  }
  return lines;
}

// Comment lines for INI and the proxies' files.
std::string commented(const std::vector<std::string>& notes, const std::string& mark) {
  std::string out;
  for (const auto& n : notes)
    for (const auto& line : wrapped(n)) out += mark + " " + line + "\n";
  return out;
}

// YAML goes through yaml-cpp's emitter, so quoting and escaping are the
// library's; what the system cannot express is a YAML::Comment.

// A comment on a line of its own at column 0 (before the first top-level
// value or after one); line breaks in `text` continue it.
void comment_line(YAML::Emitter& y, const std::string& text) {
  if (y.size() > 0) y << YAML::Newline;
  y << YAML::Comment(text);
}

// Notes, each wrapped as `commented` wraps it.
void comment_lines(YAML::Emitter& y, const std::vector<std::string>& notes) {
  for (const auto& n : notes) {
    std::string text;
    for (const auto& line : wrapped(n)) text += (text.empty() ? "" : "\n") + line;
    comment_line(y, text);
  }
}

// `key: value`, with `# comment` after it on the same line when given (a
// comment with line breaks continues under the first `#`).
template <typename Value>
void entry(YAML::Emitter& y, const std::string& key, const Value& value,
           const std::string& comment = "") {
  y << YAML::Key << key << YAML::Value << value;
  if (!comment.empty()) y << YAML::Comment(comment);
}

// `key: "value"`: strings the systems expect quoted (an annotation's number).
void quoted_entry(YAML::Emitter& y, const std::string& key, const std::string& value,
                  const std::string& comment = "") {
  y << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  if (!comment.empty()) y << YAML::Comment(comment);
}

// `key:` opening a block mapping, with `# comment` after the colon when given.
void begin_map(YAML::Emitter& y, const std::string& key, const std::string& comment = "") {
  y << YAML::Key << key << YAML::Value;
  if (!comment.empty()) y << YAML::Comment(comment);
  y << YAML::BeginMap;
}

// A Kubernetes resource's head: apiVersion, kind and metadata.name, with
// metadata left open for more fields (the caller ends it).
void begin_resource(YAML::Emitter& y, const std::string& api_version, const std::string& kind,
                    const std::string& name) {
  y << YAML::BeginMap;
  entry(y, "apiVersion", api_version);
  entry(y, "kind", kind);
  begin_map(y, "metadata");
  entry(y, "name", name);
}

// The emitter's text as a file (ending with a newline). A misuse of the
// emitter is a bug here, never the user's input.
std::string yaml_text(const YAML::Emitter& y) {
  if (!y.good()) throw std::logic_error("YAML emitter: " + y.GetLastError());
  return std::string(y.c_str()) + "\n";
}

std::string server_notes(const Scenario& s, std::vector<std::string>& notes) {
  if (s.server.shed_abandoned)
    notes.push_back(
        "shedding abandoned work happens in the server, not here: propagate the "
        "deadline and drop expired work");
  if (s.server.queue_limit > 0)
    notes.push_back("the queue limit of " + number_text(s.server.queue_limit) +
                    " belongs to the server (or Envoy's max_pending_requests)");
  return "";
}

// protobuf's Duration holds at most 315,576,000,000 s (10,000 years); gRPC
// refuses more (LoadDuration::LoadInto in gRPC's json_object_loader.cc), so
// does Envoy's proto validation.
constexpr double kProtoDurationMax = 315'576'000'000.0;

// The largest counts the systems' integer fields hold.
constexpr double kUint32Max = 4'294'967'295.0;  // uint32 fields (protobuf UInt32Value)
constexpr double kInt32Max = 2'147'483'647.0;   // int32 fields

// "1000000 s" (number_text writes whole numbers without an exponent).
std::string seconds_text(double v) {
  return number_text(v) + " s";
}

// Values as the system's own validator accepts them and our import reads them
// back into the key's range; each value changed gets a note saying so
// (docs/configs.md, "Export").
struct Fit {
  std::string system;
  double min_duration_s;  // Envoy, gRPC, Istio keep milliseconds: less reads as 0
  std::vector<std::string>& notes;

  // A duration written as `field` for the scenario key `key`.
  double duration(double v, const std::string& key, const std::string& field) const {
    double key_max = key_or_throw(key).max;
    double hi = std::min(kProtoDurationMax, key_max);
    double out = std::clamp(v, min_duration_s, hi);
    if (out > v)
      notes.push_back(field + ": " + human_duration(v) + " is below the " +
                      human_duration(min_duration_s) + " " + system + " can express; clamped to " +
                      human_duration(out));
    else if (out < v)
      notes.push_back(field + ": " + seconds_text(v) + " is more than " + key +
                      " allows (at most " + seconds_text(key_max) +
                      "; protobuf's Duration allows at most " + seconds_text(kProtoDurationMax) +
                      "); clamped to " + seconds_text(out) + " (" + human_duration(out) + ")");
    return out;
  }
  // A whole number from `lo` to `hi` written as `field`.
  double whole(double v, double lo, double hi, const std::string& field) const {
    double out = std::clamp(std::round(v), lo, hi);
    if (out != v)
      notes.push_back(field + ": " + number_text(v) + " is not a whole number from " +
                      number_text(lo) + " to " + number_text(hi) + "; clamped to " +
                      number_text(out));
    return out;
  }
  // A percentage of at most 100 written as `field`.
  double percent(double ratio, const std::string& field) const {
    double v = ratio * 100;
    if (v <= 100) return v;
    notes.push_back(field + ": " + number_text(v) + "% is above the 100% " + system +
                    " allows; clamped to 100");
    return 100;
  }
};

// ---------------------------------------------------------------- Envoy
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
  c << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
}

// retry_policy's backoff: Envoy always uses full jitter and doubles the window.
void envoy_back_off(YAML::Emitter& y, const Scenario& s, const Fit& fit, int retries) {
  auto& notes = fit.notes;
  const Backoff& b = s.client.backoff;
  double base = b.base_s > 0 ? b.base_s : 0.001;
  if (b.base_s <= 0)
    notes.push_back("Envoy needs base_interval > 0; 1ms is the closest to immediate retries");
  base = fit.duration(base, "client.backoff.base_s", "base_interval");
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
  quoted_entry(y, "retry_on", "5xx,reset,connect-failure,refused-stream");
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
  y << YAML::EndMap << YAML::EndMap;
}

// The route part and the cluster part go to different places in Envoy's
// configuration: two blocks of one mapping, the notes between them. The
// cluster has an emitter of its own because its clamps add notes that are
// written before it.
ExportResult envoy(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"envoy", "", {}};
  std::vector<std::string>& notes = r.notes;
  Fit fit{"Envoy", 0.001, notes};
  YAML::Emitter route;
  comment_line(
      route, "Envoy retry settings for scenario '" + shown_name(s) + "' (written by retrystorm).");
  if (!stack_note(s).empty()) {
    notes.push_back(stack_note(s));
    comment_lines(route, {notes.back()});
  }
  envoy_route(route, s, fit, retries);
  YAML::Emitter cluster;
  envoy_cluster(cluster, s, fit);
  server_notes(s, notes);
  comment_lines(route, notes);
  r.text = yaml_text(route) + "\n" + yaml_text(cluster);
  return r;
}

// ---------------------------------------------------------------- gRPC
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
  double base = s.client.backoff.base_s > 0 ? s.client.backoff.base_s : 0.001;
  if (s.client.backoff.base_s <= 0)
    notes.push_back("gRPC needs initialBackoff > 0; 1ms is the closest to immediate retries");
  base = fit.duration(base, "client.backoff.base_s", "initialBackoff");
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
  rp["retryableStatusCodes"] = ordered_json::array({"UNAVAILABLE"});
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

ExportResult grpc(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"grpc", "", {}};
  auto& notes = r.notes;
  Fit fit{"gRPC", 0.001, notes};
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  ordered_json mc = ordered_json::object();
  mc["name"] = ordered_json::array({ordered_json::object()});
  if (s.client.deadline_s > 0)
    mc["timeout"] =
        grpc_duration_text(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout"));
  else
    notes.push_back("no overall deadline: methodConfig has no timeout");
  if (retries > 0)
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
  return r;
}

// ---------------------------------------------------------------- Istio
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
    entry(dr, "minRetryConcurrency",
          number_text(fit.whole(minc, 0, kUint32Max, "retryBudget.minRetryConcurrency")));
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
  entry(y, "retryOn", "5xx,reset,connect-failure,refused-stream");
  if (retries > 0) istio_backoff(s, fit, y);
  y << YAML::EndMap;
}

ExportResult istio(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"istio", "", {}};
  auto& notes = r.notes;
  Fit fit{"Istio", 0.001, notes};  // Istio refuses durations below 1 ms
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  const std::string host = "backend";
  YAML::Emitter y;
  comment_line(
      y, "Istio retry settings for scenario '" + shown_name(s) + "' (written by retrystorm).");
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
  return r;
}

// ---------------------------------------------------------------- Linkerd
// A ServiceProfile: the only Linkerd retry configuration with a budget. The
// proxy drops a retryBudget with retryRatio outside [0, 1000] or a ttl
// outside [1 s, 60 s] (convert_retry_budget, linkerd2-proxy
// linkerd/service-profiles/src/proto.rs): both are clamped, with a note.
void linkerd_profile(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  auto& notes = fit.notes;
  const Budget& b = s.client.budget;
  comment_line(y, "A ServiceProfile: the only Linkerd retry configuration with a retry budget.");
  begin_resource(y, "linkerd.io/v1alpha2", "ServiceProfile", "backend.default.svc.cluster.local");
  entry(y, "namespace", "default");
  y << YAML::EndMap;
  begin_map(y, "spec");
  y << YAML::Key << "routes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "all");
  begin_map(y, "condition");
  quoted_entry(y, "pathRegex", ".*");
  y << YAML::EndMap;
  entry(y, "isRetryable", retries > 0);
  // No default route timeout since Linkerd 2.9: none is written for none.
  if (s.client.deadline_s > 0)
    entry(y, "timeout",
          go_duration(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout")),
          "the whole request, retries included");
  y << YAML::EndMap << YAML::EndSeq;
  double ratio = std::clamp(b.ratio, 0.0, 1000.0);
  if (ratio != b.ratio)
    notes.push_back("retryRatio: " + number_text(b.ratio) +
                    " is above the 1000 Linkerd allows; clamped to 1000");
  double ttl = std::clamp(b.ttl_s, 1.0, 60.0);
  if (ttl != b.ttl_s)
    notes.push_back("ttl: " + human_duration(b.ttl_s) +
                    " is outside the 1 s to 60 s the Linkerd proxy accepts (it would never "
                    "retry); clamped to " +
                    human_duration(ttl));
  begin_map(y, "retryBudget");
  entry(y, "retryRatio", number_text(ratio));
  entry(y, "minRetriesPerSecond",
        number_text(fit.whole(b.min_retries_per_s, 0, kUint32Max, "minRetriesPerSecond")));
  entry(y, "ttl", go_duration(ttl));
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  notes.push_back(
      "a ServiceProfile sets no retry count (the budget limits retries), no per-attempt "
      "timeout and no backoff (it retries at once): retries " +
      std::to_string(retries) + ", timeout " + human_duration(s.client.timeout_s) +
      " per attempt and the backoff cannot be expressed");
}

// Linkerd 2.16+ annotations back off 25 ms doubling to 250 ms; the import
// reads that as equal jitter on windows of 50 ms doubling to 250 ms
// (import_linkerd.cpp, docs/policies.md).
bool linkerd_backoff(const Backoff& b) {
  return b.jitter == Jitter::equal && b.base_s == 0.05 && b.multiplier == 2 && b.cap_s == 0.25;
}

// The retry.linkerd.io and timeout.linkerd.io annotations. No retries: no
// retry.linkerd.io annotation at all, since a limit of "0" with any other retry
// annotation means 1 retry (parse_http_retry, linkerd2
// policy-controller/k8s/index/src/outbound/index/http.rs).
void linkerd_annotation_entries(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  auto& notes = fit.notes;
  if (retries > 0) {
    entry(y, "retry.linkerd.io/http", "5xx");
    quoted_entry(y, "retry.linkerd.io/limit", std::to_string(retries),
                 "retries, so " + std::to_string(retries + 1) + " attempts");
    if (s.client.retry_on_timeout)
      entry(y, "retry.linkerd.io/timeout",
            go_duration(
                fit.duration(s.client.timeout_s, "client.timeout_s", "retry.linkerd.io/timeout")),
            "each attempt but the last");
    else if (s.client.deadline_s <= 0 || std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9)
      notes.push_back(
          "without retry.linkerd.io/timeout an attempt's timeout is the request "
          "timeout; the scenario's " +
          human_duration(s.client.timeout_s) + " per attempt cannot be expressed");
    if (!linkerd_backoff(s.client.backoff))
      notes.push_back(
          "Linkerd's backoff is fixed (25 ms doubling to 250 ms, each delay in [w, 2w)); the "
          "scenario's backoff cannot be expressed");
  }
  if (s.client.deadline_s > 0)
    entry(y, "timeout.linkerd.io/request",
          go_duration(
              fit.duration(s.client.deadline_s, "client.deadline_s", "timeout.linkerd.io/request")),
          "the whole request, retries included");
}

// Annotations on an HTTPRoute (no annotations block when there is none).
void linkerd_annotations(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  comment_line(y, "Annotations of Linkerd 2.16+ on the route (or Service) the client calls.");
  begin_resource(y, "gateway.networking.k8s.io/v1", "HTTPRoute", "backend");
  if (retries > 0 || s.client.deadline_s > 0) {
    begin_map(y, "annotations");
    linkerd_annotation_entries(y, s, retries, fit);
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  begin_map(y, "spec");
  y << YAML::Key << "parentRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "backend");
  entry(y, "kind", "Service");
  entry(y, "group", "core");
  entry(y, "port", 80);
  y << YAML::EndMap << YAML::EndSeq;
  y << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "backendRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "backend");
  entry(y, "port", 80);
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndSeq;
  y << YAML::EndMap << YAML::EndMap;
  fit.notes.push_back(s.client.budget.kind == BudgetKind::none
                          ? "retry annotations have no retry budget; a ServiceProfile retryBudget "
                            "(retryRatio 0.2, minRetriesPerSecond 10, ttl 10s) caps retries"
                          : "the scenario's '" + budget_kind_name(s.client.budget.kind) +
                                "' budget has no equivalent in Linkerd's annotations");
}

ExportResult linkerd(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"linkerd", "", {}};
  auto& notes = r.notes;
  Fit fit{"Linkerd", 1e-6, notes};  // Go durations: microseconds are written as "1us"
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  YAML::Emitter y;
  comment_line(
      y, "Linkerd retry settings for scenario '" + shown_name(s) + "' (written by retrystorm).");
  if (s.client.budget.kind == BudgetKind::ratio_ttl)
    linkerd_profile(y, s, retries, fit);
  else
    linkerd_annotations(y, s, retries, fit);
  server_notes(s, notes);
  comment_lines(y, notes);
  r.text = yaml_text(y);
  return r;
}

// ---------------------------------------------------------------- AWS
ExportResult aws(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"aws", "", {}};
  auto& notes = r.notes;
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  // Never legacy: aws-sdk-go-v2 and other SDKs refuse it, and botocore's
  // legacy mode retries 5 times by default without a backoff cap.
  const std::string mode = "standard";
  if (s.client.budget.kind != BudgetKind::none && s.client.budget.kind != BudgetKind::aws_quota)
    notes.push_back("the scenario's '" + budget_kind_name(s.client.budget.kind) +
                    "' budget is closest to standard mode's retry quota (500 tokens)");
  if (s.client.budget.kind == BudgetKind::aws_quota &&
      (s.client.budget.quota_tokens != 500 || s.client.budget.retry_cost != 5 ||
       s.client.budget.timeout_cost != 10 || s.client.budget.success_reward != 1))
    notes.push_back(
        "the retry quota's sizes (500 tokens, costs 5 and 10, reward 1) are fixed "
        "by the SDKs");
  if (s.client.budget.kind == BudgetKind::none)
    notes.push_back(
        "the scenario has no retry budget, but standard mode always keeps a retry quota (500 "
        "tokens, 5 per retry, 10 after a timeout) that no setting turns off: this file adds "
        "one; legacy mode, which has none, is not written (several SDKs refuse it)");
  if (retries > 0 && (s.client.backoff.base_s != 1 || s.client.backoff.multiplier != 2 ||
                      s.client.backoff.cap_s != 20 || s.client.backoff.jitter != Jitter::full))
    notes.push_back(
        "AWS standard mode backs off U(0, 1) x min(2^(retry-1), 20) s; the scenario's backoff "
        "cannot be expressed here");
  notes.push_back(
      "timeouts are not in the config file: set the per-attempt timeout (" +
      human_duration(s.client.timeout_s) + ") as the SDK client's read timeout" +
      (s.client.deadline_s > 0
           ? " and the overall deadline (" + human_duration(s.client.deadline_s) + ") in the caller"
           : std::string()));
  server_notes(s, notes);
  std::ostringstream o;
  o << "# AWS SDK retry settings for scenario '" << shown_name(s) << "' (written by retrystorm).\n";
  o << "# Goes in ~/.aws/config (or the file AWS_CONFIG_FILE names).\n";
  o << commented(notes, "#");
  o << "[default]\nretry_mode = " << mode << "\nmax_attempts = " << retries + 1 << "\n";
  r.text = o.str();
  return r;
}

// ---------------------------------------------------------------- proxies
// What HAProxy and nginx cannot express, shared: they retry at once, and
// have no per-request deadline (HAProxy) and no retry budget.
void proxy_notes(const Scenario& s, int retries, const std::string& system,
                 std::vector<std::string>& notes) {
  const Backoff& b = s.client.backoff;
  if (retries > 0 && b.base_s > 0)
    notes.push_back(system + " retries at once: the scenario's backoff (base " +
                    human_duration(b.base_s) + ", x" + number_text(b.multiplier) + ", cap " +
                    (b.cap_s > 0 ? human_duration(b.cap_s) : std::string("none")) + ", jitter " +
                    jitter_name(b.jitter) + ") cannot be expressed");
  if (s.client.budget.kind != BudgetKind::none)
    notes.push_back(system + " has no retry budget: the scenario's '" +
                    budget_kind_name(s.client.budget.kind) + "' budget cannot be expressed");
}

// Milliseconds as both proxies write them: whole, at least 1, at most `max_ms`.
long long proxy_ms(double seconds, double max_ms, const std::string& field, const Fit& fit,
                   const std::string& key) {
  double v = fit.duration(seconds, key, field);  // at least 1 ms, at most the key's maximum
  double ms = std::round(v * 1000);
  if (ms > max_ms) {
    fit.notes.push_back(field + ": " + human_duration(v) + " is more than the " +
                        number_text(max_ms) + " ms " + fit.system + " allows; clamped to " +
                        number_text(max_ms) + " ms");
    ms = max_ms;
  }
  return static_cast<long long>(ms);
}

// HAProxy 2.6: a backend (proxy_parse_retry_on, back_handle_st_cer; the facts
// in import_haproxy.cpp). Timers above 2147483647 ms are refused.
ExportResult haproxy(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"haproxy", "", {}};
  auto& notes = r.notes;
  Fit fit{"HAProxy", 0.001, notes};
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  std::ostringstream b;
  b << "backend retrystorm\n    mode http\n";
  b << "    retries " << retries << "  # retries, so " << retries + 1 << " attempts per request\n";
  if (retries == 0)
    b << "    retry-on none\n";
  else
    b << "    retry-on conn-failure empty-response "
      << (s.client.retry_on_timeout ? "response-timeout " : "") << "502 503 504\n";
  long long t =
      proxy_ms(s.client.timeout_s, 2147483647.0, "timeout server", fit, "client.timeout_s");
  b << "    timeout connect " << t << "ms\n";
  b << "    timeout server " << t << "ms  # each attempt (time without data from the server)\n";
  b << "    server s1 127.0.0.1:8080  # the service's servers\n";
  if (!s.client.retry_on_timeout && retries > 0)
    notes.push_back(
        "retry-on has no response-timeout: an attempt past timeout server is not retried");
  if (s.client.deadline_s > 0)
    notes.push_back("HAProxy has no per-request deadline: the scenario's " +
                    human_duration(s.client.deadline_s) + " must be set by the caller");
  if (retries > 0)
    notes.push_back(
        "HAProxy replays every method on an L7 retry (POST included): make the handlers "
        "idempotent or use retry-on conn-failure for routes that are not");
  proxy_notes(s, retries, "HAProxy", notes);
  server_notes(s, notes);
  std::ostringstream o;
  o << "# HAProxy 2.6 retry settings for scenario '" << shown_name(s)
    << "' (written by retrystorm).\n";
  o << "# Goes in haproxy.cfg; point a frontend's default_backend at it.\n";
  o << commented(notes, "#") << b.str();
  r.text = o.str();
  return r;
}

// nginx 1.22: an upstream and a location (ngx_http_upstream_next; the facts in
// import_nginx.cpp). nginx tries each server entry at most once, so N retries
// need N + 1 entries: the same address is listed N + 1 times.
ExportResult nginx(const Scenario& s) {
  const int retries = exported_retries(s);
  ExportResult r{"nginx", "", {}};
  auto& notes = r.notes;
  Fit fit{"nginx", 0.001, notes};
  if (!stack_note(s).empty()) notes.push_back(stack_note(s));
  constexpr double kMaxMs = 1e12;  // far above every key's range
  std::ostringstream u;
  u << "upstream retrystorm_backend {\n";
  u << "    # nginx tries each server entry at most once per request: " << retries + 1
    << (retries == 0 ? " entry, no retries.\n"
                     : " entries\n    # (the same address repeated) allow " +
                           std::to_string(retries) + " retries.\n");
  u << "    # max_fails=0: a failed try does not take the entry out for fail_timeout.\n";
  for (int i = 0; i <= retries; ++i) u << "    server 127.0.0.1:8080 max_fails=0;\n";
  u << "}\n";
  long long t = proxy_ms(s.client.timeout_s, kMaxMs, "proxy_read_timeout", fit, "client.timeout_s");
  std::ostringstream l;
  l << "server {\n    listen 8080;\n    location / {\n";
  l << "        proxy_pass http://retrystorm_backend;\n";
  if (retries == 0) {
    l << "        proxy_next_upstream off;\n";
  } else {
    l << "        proxy_next_upstream error " << (s.client.retry_on_timeout ? "timeout " : "")
      << "http_502 http_503 http_504;\n";
    l << "        proxy_next_upstream_tries " << retries + 1
      << ";  # attempts, the first included\n";
  }
  if (s.client.deadline_s > 0 && retries > 0) {
    long long d = proxy_ms(s.client.deadline_s, kMaxMs, "proxy_next_upstream_timeout", fit,
                           "client.deadline_s");
    l << "        proxy_next_upstream_timeout " << d << "ms;  # no new try after this\n";
    notes.push_back(
        "proxy_next_upstream_timeout stops new tries but does not end a started one: a "
        "request can take up to that plus proxy_read_timeout");
  } else {
    l << "        proxy_next_upstream_timeout 0;  # no limit\n";
    if (s.client.deadline_s > 0)
      notes.push_back("no retries: the scenario's deadline of " +
                      human_duration(s.client.deadline_s) + " is the caller's to set");
  }
  l << "        proxy_connect_timeout " << t << "ms;\n";
  l << "        proxy_send_timeout " << t << "ms;\n";
  l << "        proxy_read_timeout " << t << "ms;  # each attempt (between two reads)\n";
  l << "    }\n}\n";
  if (retries > 0)
    notes.push_back(
        "POST, LOCK and PATCH are not retried once sent; add non_idempotent to "
        "proxy_next_upstream only if the handlers are idempotent");
  proxy_notes(s, retries, "nginx", notes);
  server_notes(s, notes);
  std::ostringstream o;
  o << "# nginx 1.22 retry settings for scenario '" << shown_name(s)
    << "' (written by retrystorm).\n";
  o << "# Both blocks go inside http { }; move the location into your own server { }.\n";
  o << commented(notes, "#") << u.str() << l.str();
  r.text = o.str();
  return r;
}

}  // namespace

const std::vector<std::string>& export_systems() {
  static const std::vector<std::string> systems = {"envoy", "grpc",    "istio", "linkerd",
                                                   "aws",   "haproxy", "nginx"};
  return systems;
}

ExportResult export_config(const Scenario& s, const std::string& system) {
  if (system == "envoy") return envoy(s);
  if (system == "grpc") return grpc(s);
  if (system == "istio") return istio(s);
  if (system == "linkerd") return linkerd(s);
  if (system == "aws") return aws(s);
  if (system == "haproxy") return haproxy(s);
  if (system == "nginx") return nginx(s);
  throw InputError("--to: '" + system +
                   "' is not a system we write; choose envoy, grpc, istio, "
                   "linkerd, aws, haproxy or nginx");
}

}  // namespace retrystorm::configs
