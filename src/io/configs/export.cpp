#include "io/configs/export.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/configs/common.hpp"
#include "io/configs/import.hpp"
#include "model/keys.hpp"

namespace retrystorm::configs {

using nlohmann::ordered_json;

namespace {

// The client policy, read through the key table.
struct Policy {
  std::string name;
  int retries = 0;  // at the layer exported (the innermost)
  int layers = 1;
  std::vector<int> stack;
  double timeout_s = 5, deadline_s = 0;
  bool retry_on_timeout = true;
  double base_s = 1, multiplier = 2, cap_s = 0;
  std::string jitter = "none";
  std::string budget = "none";
  double ratio = 0.1, window_s = 10, min_concurrency = 3, max_tokens = 10, token_ratio = 0.1;
  double quota_tokens = 500, retry_cost = 5, timeout_cost = 10, success_reward = 1;
  double min_retries_per_s = 10, ttl_s = 10;
  bool shed = false;
  double queue_limit = 0;

  // The largest backoff window the retries reach: a cap that never binds.
  double top_window() const {
    double w = base_s;
    for (int i = 1; i < retries; ++i) w *= multiplier;
    return cap_s > 0 ? std::min(w, cap_s) : w;
  }
};

Policy policy_of(const Scenario& s) {
  Policy p;
  p.name = s.name;
  p.layers = s.client.layers;
  p.retries = s.client.retries;
  std::string stack = key_text(s, "client.stack_retries", "");
  if (!stack.empty()) {
    std::stringstream in(stack);
    std::string item;
    while (std::getline(in, item, ','))
      if (!item.empty()) p.stack.push_back(std::atoi(item.c_str()));
    if (!p.stack.empty()) {
      p.retries = p.stack.back();
      p.layers = static_cast<int>(p.stack.size());
    }
  }
  p.timeout_s = s.client.timeout_s;
  p.deadline_s = key_number(s, "client.deadline_s", 0);
  p.retry_on_timeout = key_bool(s, "client.retry_on_timeout", true);
  p.base_s = key_number(s, "client.backoff.base_s", 1);
  p.multiplier = key_number(s, "client.backoff.multiplier", 2);
  p.cap_s = key_number(s, "client.backoff.cap_s", 0);
  p.jitter = key_text(s, "client.backoff.jitter", "none");
  p.budget = key_text(s, "client.budget.kind", "none");
  p.ratio = key_number(s, "client.budget.ratio", 0.1);
  p.window_s = key_number(s, "client.budget.window_s", 10);
  p.min_concurrency = key_number(s, "client.budget.min_concurrency", 3);
  p.max_tokens = key_number(s, "client.budget.max_tokens", 10);
  p.token_ratio = key_number(s, "client.budget.token_ratio", 0.1);
  p.quota_tokens = key_number(s, "client.budget.quota_tokens", 500);
  p.retry_cost = key_number(s, "client.budget.retry_cost", 5);
  p.timeout_cost = key_number(s, "client.budget.timeout_cost", 10);
  p.success_reward = key_number(s, "client.budget.success_reward", 1);
  p.min_retries_per_s = key_number(s, "client.budget.min_retries_per_s", 10);
  p.ttl_s = key_number(s, "client.budget.ttl_s", 10);
  p.shed = s.server.shed_abandoned;
  p.queue_limit = s.server.queue_limit;
  return p;
}

std::string stack_note(const Policy& p) {
  if (p.layers <= 1) return "";
  std::string list;
  int attempts = 1;
  if (p.stack.empty()) {
    for (int i = 0; i < p.layers; ++i) {
      list += (list.empty() ? "" : ", ") + std::to_string(p.retries);
      attempts *= p.retries + 1;
    }
  } else {
    for (int r : p.stack) {
      list += (list.empty() ? "" : ", ") + std::to_string(r);
      attempts *= r + 1;
    }
  }
  return "the scenario retries at " + std::to_string(p.layers) + " layers (" + list +
         " retries, outermost first; up to " + std::to_string(attempts) +
         " attempts per request): this is one layer's configuration (the innermost); each "
         "layer needs its own";
}

// Comment lines for YAML and INI.
std::string commented(const std::vector<std::string>& notes, const std::string& mark) {
  std::string out;
  for (const auto& n : notes) {
    std::string line = mark + " ";
    std::istringstream words(n);
    std::string w;
    size_t len = line.size();
    while (words >> w) {
      if (len + w.size() > 92 && len > mark.size() + 1) {
        out += line + "\n";
        line = mark + "   ";
        len = line.size();
      }
      line += w + " ";
      len += w.size() + 1;
    }
    line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string server_notes(const Policy& p, std::vector<std::string>& notes) {
  if (p.shed)
    notes.push_back(
        "shedding abandoned work happens in the server, not here: propagate the "
        "deadline and drop expired work");
  if (p.queue_limit > 0)
    notes.push_back("the queue limit of " + num_text(p.queue_limit) +
                    " belongs to the server (or Envoy's max_pending_requests)");
  return "";
}

// ---------------------------------------------------------------- Envoy
ExportResult envoy(const Policy& p) {
  ExportResult r{"envoy", "", {}};
  std::vector<std::string>& notes = r.notes;
  std::ostringstream y;
  y << "# Envoy retry settings for scenario '" << p.name << "' (written by retrystorm).\n";
  if (!stack_note(p).empty()) {
    notes.push_back(stack_note(p));
    y << commented({notes.back()}, "#");
  }
  y << "# Route: these fields go under route_config.virtual_hosts[].routes[].route\n";
  if (p.deadline_s > 0)
    y << "timeout: " << proto_duration(p.deadline_s)
      << "  # the whole request, all attempts and backoff included\n";
  else
    y << "timeout: 0s  # no overall deadline (0s turns off Envoy's default of 15s)\n";
  y << "retry_policy:\n";
  y << "  retry_on: \"5xx,reset,connect-failure,refused-stream\"\n";
  y << "  num_retries: " << p.retries << "  # retries, so " << p.retries + 1
    << " attempts per request\n";
  if (p.retry_on_timeout) {
    y << "  per_try_timeout: " << proto_duration(p.timeout_s)
      << "  # each attempt; without it a timed-out attempt is never retried\n";
  } else {
    y << "  # per_try_timeout left unset: an attempt may run until the route timeout and a\n"
         "  # timed-out attempt is never retried (client.retry_on_timeout: false)\n";
    if (p.deadline_s <= 0 || std::fabs(p.deadline_s - p.timeout_s) > 1e-9)
      notes.push_back(
          "without per_try_timeout an attempt's timeout is the route timeout; the "
          "scenario's " +
          human_duration(p.timeout_s) + " per attempt cannot be expressed");
  }
  double base = p.base_s > 0 ? p.base_s : 0.001;
  y << "  retry_back_off:\n";
  y << "    base_interval: " << proto_duration(base) << "\n";
  double cap = p.cap_s > 0 ? std::max(p.cap_s, base) : std::max(p.top_window(), base);
  y << "    max_interval: " << proto_duration(cap)
    << (p.cap_s > 0 ? "\n" : "  # no cap in the scenario: the largest window the retries reach\n");
  if (p.base_s <= 0)
    notes.push_back("Envoy needs base_interval > 0; 1ms is the closest to immediate retries");
  if (p.jitter != "full")
    notes.push_back(
        "Envoy always draws each delay uniformly in [0, window) (full jitter); the "
        "scenario's jitter '" +
        p.jitter + "' cannot be expressed");
  if (p.multiplier != 2)
    notes.push_back("Envoy doubles the window each retry; a multiplier of " +
                    num_text(p.multiplier) + " cannot be expressed");
  std::ostringstream c;
  c << "\n# Cluster: goes under clusters[] (the cluster this route sends to)\n";
  c << "circuit_breakers:\n  thresholds:\n  - priority: DEFAULT\n";
  if (p.budget == "envoy_concurrency" && p.ratio == 0) {
    c << "    max_retries: " << num_text(p.min_concurrency)
      << "  # a fixed cap on concurrent retries, no retry_budget\n";
  } else if (p.budget == "envoy_concurrency" || p.budget == "window" ||
             p.budget == "token_bucket" || p.budget == "ratio_ttl") {
    c << "    retry_budget:\n";
    c << "      budget_percent: " << num_text(p.ratio * 100)
      << "  # active retries <= this share of active + pending requests\n";
    double minc = p.budget == "envoy_concurrency" ? p.min_concurrency : 3;
    c << "      min_retry_concurrency: " << num_text(minc) << "\n";
    if (p.budget != "envoy_concurrency")
      notes.push_back(
          "Envoy's retry budget counts concurrent retries against active requests; "
          "the scenario's '" +
          p.budget + "' budget (retries against first attempts over " +
          human_duration(p.budget == "ratio_ttl" ? p.ttl_s : p.window_s) +
          ") is approximated by the same share");
  } else {
    c << "    # No retry budget: Envoy then caps only concurrent retries (max_retries, default\n"
         "    # 3). A budget caps retries as a share of traffic:\n"
         "    # retry_budget:\n    #   budget_percent: 20\n    #   min_retry_concurrency: 3\n";
    if (p.budget != "none")
      notes.push_back("the scenario's '" + p.budget + "' budget has no Envoy equivalent");
  }
  server_notes(p, notes);
  r.text = y.str() + commented(notes, "#") + c.str();
  return r;
}

// ---------------------------------------------------------------- gRPC
ExportResult grpc(const Policy& p) {
  ExportResult r{"grpc", "", {}};
  auto& notes = r.notes;
  if (!stack_note(p).empty()) notes.push_back(stack_note(p));
  ordered_json mc = ordered_json::object();
  mc["name"] = ordered_json::array({ordered_json::object()});
  if (p.deadline_s > 0)
    mc["timeout"] = proto_duration(p.deadline_s);
  else
    notes.push_back("no overall deadline: methodConfig has no timeout");
  if (p.retries > 0) {
    int attempts = p.retries + 1;
    if (attempts > 5) {
      notes.push_back(std::to_string(attempts) + " attempts: gRPC allows at most 5, so " +
                      "maxAttempts is 5 (" + std::to_string(p.retries) +
                      " retries cannot be expressed)");
      attempts = 5;
    }
    ordered_json rp = ordered_json::object();
    rp["maxAttempts"] = attempts;
    double base = p.base_s > 0 ? p.base_s : 0.001;
    if (p.base_s <= 0)
      notes.push_back("gRPC needs initialBackoff > 0; 1ms is the closest to immediate retries");
    rp["initialBackoff"] = proto_duration(base);
    double cap = p.cap_s > 0 ? std::max(p.cap_s, base) : std::max(p.top_window(), base);
    if (p.cap_s <= 0)
      notes.push_back(
          "no backoff cap in the scenario: maxBackoff is the largest delay the "
          "retries reach, so it never binds");
    rp["maxBackoff"] = proto_duration(cap);
    rp["backoffMultiplier"] = p.multiplier;
    rp["retryableStatusCodes"] = ordered_json::array({"UNAVAILABLE"});
    if (p.retry_on_timeout) {
      rp["perAttemptRecvTimeout"] = proto_duration(p.timeout_s);
      notes.push_back(
          "perAttemptRecvTimeout (per-attempt timeout) is honoured only by gRPC "
          "releases that support it; others end an attempt only at the deadline");
    } else if (p.deadline_s <= 0 || std::fabs(p.deadline_s - p.timeout_s) > 1e-9) {
      notes.push_back("an attempt's timeout is the deadline; the scenario's " +
                      human_duration(p.timeout_s) + " per attempt cannot be expressed");
    }
    if (p.jitter != "grpc")
      notes.push_back("gRPC multiplies each delay by U(0.8, 1.2); the scenario's jitter '" +
                      p.jitter + "' cannot be expressed");
    mc["retryPolicy"] = rp;
  } else {
    notes.push_back("no retries: no retryPolicy");
  }
  ordered_json sc = ordered_json::object();
  ordered_json th;
  if (p.budget == "grpc_throttling") {
    long long mt = std::clamp<long long>(std::llround(p.max_tokens), 1, 1000);
    th = {{"maxTokens", mt}, {"tokenRatio", std::round(p.token_ratio * 1000) / 1000}};
    if (static_cast<double>(mt) != p.max_tokens)
      notes.push_back("maxTokens must be a whole number from 1 to 1000");
    if (std::round(p.token_ratio * 1000) / 1000 != p.token_ratio)
      notes.push_back("gRPC keeps 3 decimals of tokenRatio");
  } else if (p.budget != "none") {
    notes.push_back("the scenario's '" + p.budget +
                    "' budget has no gRPC equivalent; retryThrottling {maxTokens: 10, "
                    "tokenRatio: 0.1} is the closest gRPC defence");
  } else {
    notes.push_back("no retry budget: add retryThrottling (e.g. maxTokens 10, tokenRatio 0.1)");
  }
  server_notes(p, notes);
  ordered_json comment = ordered_json::array();
  comment.push_back("gRPC service config for scenario '" + p.name + "' (written by retrystorm)");
  for (const auto& n : notes) comment.push_back(n);
  sc["_comment"] = comment;
  sc["methodConfig"] = ordered_json::array({mc});
  if (!th.is_null()) sc["retryThrottling"] = th;
  r.text = sc.dump(2) + "\n";
  return r;
}

// ---------------------------------------------------------------- Istio
ExportResult istio(const Policy& p) {
  ExportResult r{"istio", "", {}};
  auto& notes = r.notes;
  if (!stack_note(p).empty()) notes.push_back(stack_note(p));
  std::ostringstream y;
  std::string host = "backend";
  y << "# Istio retry settings for scenario '" << p.name << "' (written by retrystorm).\n";
  y << "# Replace 'backend' with the service's host.\n";
  y << "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: " << host
    << "\nspec:\n  hosts:\n  - " << host << "\n  http:\n  - route:\n    - destination:\n"
    << "        host: " << host << "\n";
  if (p.deadline_s > 0)
    y << "    timeout: " << go_duration(p.deadline_s)
      << "  # the whole request, retries included\n";
  else
    y << "    # no timeout: Istio's route timeout is off, so requests have no deadline\n";
  y << "    retries:\n      attempts: " << p.retries << "  # retries, so " << p.retries + 1
    << " attempts\n";
  if (p.retry_on_timeout) {
    if (p.timeout_s < 0.001) notes.push_back("Istio needs perTryTimeout >= 1ms");
    y << "      perTryTimeout: " << go_duration(std::max(p.timeout_s, 0.001)) << "\n";
  } else {
    y << "      # perTryTimeout left unset: a timed-out attempt is never retried\n";
    if (p.deadline_s <= 0 || std::fabs(p.deadline_s - p.timeout_s) > 1e-9)
      notes.push_back(
          "without perTryTimeout an attempt's timeout is the route timeout; the "
          "scenario's " +
          human_duration(p.timeout_s) + " per attempt cannot be expressed");
  }
  y << "      retryOn: 5xx,reset,connect-failure,refused-stream\n";
  if (p.retries > 0 &&
      (p.base_s != 0.025 || p.cap_s != 0.25 || p.multiplier != 2 || p.jitter != "full"))
    notes.push_back(
        "Istio leaves Envoy's backoff at 25 ms doubling to 250 ms with full jitter; "
        "the scenario's backoff (base " +
        human_duration(p.base_s) + ", x" + num_text(p.multiplier) + ", cap " +
        (p.cap_s > 0 ? human_duration(p.cap_s) : std::string("none")) + ", jitter " + p.jitter +
        ") cannot be expressed");
  std::ostringstream dr;
  if (p.budget != "none") {
    dr << "---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: "
       << host << "\nspec:\n  host: " << host << "\n  trafficPolicy:\n";
    if (p.budget == "envoy_concurrency" && p.ratio == 0) {
      dr << "    connectionPool:\n      http:\n        maxRetries: " << num_text(p.min_concurrency)
         << "  # a fixed cap on concurrent retries\n";
    } else if (p.budget == "envoy_concurrency" || p.budget == "window" ||
               p.budget == "token_bucket" || p.budget == "ratio_ttl") {
      dr << "    retryBudget:  # recent Istio releases\n      percent: " << num_text(p.ratio * 100)
         << "\n      minRetryConcurrency: "
         << num_text(p.budget == "envoy_concurrency" ? p.min_concurrency : 3) << "\n";
      if (p.budget != "envoy_concurrency")
        notes.push_back("the scenario's '" + p.budget +
                        "' budget is approximated by Envoy's concurrent retry budget of the "
                        "same share");
    } else {
      dr << "    {}\n";
      notes.push_back("the scenario's '" + p.budget + "' budget has no Istio equivalent");
    }
  } else {
    notes.push_back(
        "no retry budget: Istio lifts Envoy's retry limit; a DestinationRule "
        "trafficPolicy.retryBudget (percent 20, minRetryConcurrency 3) caps retries");
  }
  server_notes(p, notes);
  r.text = y.str() + commented(notes, "#") + dr.str();
  return r;
}

// ---------------------------------------------------------------- Linkerd
ExportResult linkerd(const Policy& p) {
  ExportResult r{"linkerd", "", {}};
  auto& notes = r.notes;
  if (!stack_note(p).empty()) notes.push_back(stack_note(p));
  std::ostringstream y;
  y << "# Linkerd retry settings for scenario '" << p.name << "' (written by retrystorm).\n";
  if (p.budget == "ratio_ttl") {
    y << "# A ServiceProfile: the only Linkerd retry configuration with a retry budget.\n";
    y << "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n"
         "  name: backend.default.svc.cluster.local\n  namespace: default\nspec:\n  routes:\n"
         "  - name: all\n    condition:\n      pathRegex: \".*\"\n    isRetryable: "
      << (p.retries > 0 ? "true" : "false") << "\n";
    y << "    timeout: " << go_duration(p.deadline_s > 0 ? p.deadline_s : 10)
      << "  # the whole request, retries included\n";
    if (p.deadline_s <= 0)
      notes.push_back("a ServiceProfile route always has a timeout (10s default)");
    y << "  retryBudget:\n    retryRatio: " << num_text(p.ratio)
      << "\n    minRetriesPerSecond: " << num_text(std::round(p.min_retries_per_s))
      << "\n    ttl: " << go_duration(p.ttl_s) << "\n";
    notes.push_back(
        "a ServiceProfile sets no retry count (the budget limits retries), no "
        "per-attempt timeout and no backoff: retries " +
        std::to_string(p.retries) + ", timeout " + human_duration(p.timeout_s) +
        " per attempt and the backoff cannot be expressed");
  } else {
    y << "# Annotations of Linkerd 2.16+ on the route (or Service) the client calls.\n";
    y << "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: backend\n"
         "  annotations:\n";
    y << "    retry.linkerd.io/http: 5xx\n";
    y << "    retry.linkerd.io/limit: \"" << p.retries << "\"  # retries, so " << p.retries + 1
      << " attempts\n";
    if (p.retry_on_timeout)
      y << "    retry.linkerd.io/timeout: " << go_duration(p.timeout_s) << "  # each attempt\n";
    else if (p.deadline_s <= 0 || std::fabs(p.deadline_s - p.timeout_s) > 1e-9)
      notes.push_back(
          "without retry.linkerd.io/timeout an attempt's timeout is the request "
          "timeout; the scenario's " +
          human_duration(p.timeout_s) + " per attempt cannot be expressed");
    if (p.deadline_s > 0)
      y << "    timeout.linkerd.io/request: " << go_duration(p.deadline_s)
        << "  # the whole request, retries included\n";
    y << "spec:\n  parentRefs:\n  - name: backend\n    kind: Service\n    group: core\n"
         "    port: 80\n  rules:\n  - backendRefs:\n    - name: backend\n      port: 80\n";
    if (p.retries > 0 && (p.base_s > 0 || p.jitter != "none"))
      notes.push_back("Linkerd retries at once; the scenario's backoff cannot be expressed");
    notes.push_back(p.budget == "none"
                        ? "retry annotations have no retry budget; a ServiceProfile retryBudget "
                          "(retryRatio 0.2, minRetriesPerSecond 10, ttl 10s) caps retries"
                        : "the scenario's '" + p.budget +
                              "' budget has no equivalent in Linkerd's annotations");
  }
  server_notes(p, notes);
  r.text = y.str() + commented(notes, "#");
  return r;
}

// ---------------------------------------------------------------- AWS
ExportResult aws(const Policy& p) {
  ExportResult r{"aws", "", {}};
  auto& notes = r.notes;
  if (!stack_note(p).empty()) notes.push_back(stack_note(p));
  std::string mode = p.budget == "none" ? "legacy" : "standard";
  if (p.budget != "none" && p.budget != "aws_quota")
    notes.push_back("the scenario's '" + p.budget +
                    "' budget is closest to standard mode's retry quota (500 tokens)");
  if (p.budget == "aws_quota" &&
      (p.quota_tokens != 500 || p.retry_cost != 5 || p.timeout_cost != 10 || p.success_reward != 1))
    notes.push_back(
        "the retry quota's sizes (500 tokens, costs 5 and 10, reward 1) are fixed "
        "by the SDKs");
  if (p.budget == "none")
    notes.push_back("no retry budget: legacy mode has no retry quota; standard mode adds one");
  if (p.retries > 0 && (p.base_s != 1 || p.multiplier != 2 || p.cap_s != 20 || p.jitter != "full"))
    notes.push_back(
        "AWS SDKs back off U(0,1) x min(20 s, 2^retry s); the scenario's backoff "
        "cannot be expressed here");
  notes.push_back("timeouts are not in the config file: set the per-attempt timeout (" +
                  human_duration(p.timeout_s) + ") as the SDK client's read timeout" +
                  (p.deadline_s > 0 ? " and the overall deadline (" + human_duration(p.deadline_s) +
                                          ") in the caller"
                                    : std::string()));
  server_notes(p, notes);
  std::ostringstream o;
  o << "# AWS SDK retry settings for scenario '" << p.name << "' (written by retrystorm).\n";
  o << "# Goes in ~/.aws/config (or the file AWS_CONFIG_FILE names).\n";
  o << commented(notes, "#");
  o << "[default]\nretry_mode = " << mode << "\nmax_attempts = " << p.retries + 1 << "\n";
  r.text = o.str();
  return r;
}

}  // namespace

const std::vector<std::string>& export_systems() {
  static const std::vector<std::string> systems = {"envoy", "grpc", "istio", "linkerd", "aws"};
  return systems;
}

ExportResult export_config(const Scenario& s, const std::string& system) {
  Policy p = policy_of(s);
  if (system == "envoy") return envoy(p);
  if (system == "grpc") return grpc(p);
  if (system == "istio") return istio(p);
  if (system == "linkerd") return linkerd(p);
  if (system == "aws") return aws(p);
  throw InputError("--to: '" + system +
                   "' is not a system we write; choose envoy, grpc, istio, "
                   "linkerd or aws");
}

}  // namespace retrystorm::configs
