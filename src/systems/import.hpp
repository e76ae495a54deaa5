// Importing the retry configuration of real systems (Envoy, gRPC, Istio,
// Linkerd, AWS SDKs, HAProxy, nginx, and our own retrystorm-policy) as
// scenario keys.
// Mapping, and the upstream sources behind it: docs/configs.md.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/keys.hpp"
#include "model/scenario.hpp"
#include "policies/client_policy.hpp"
#include "systems/kubernetes/workloads.hpp"
#include "systems/system.hpp"

namespace retrystorm::configs {

struct ConfigFile {
  std::string name;  // shown in messages ("edge/envoy.yaml")
  std::string text;
};

// One scenario key and where its value came from.
struct ImportedKey {
  std::string path;  // "client.retries"
  KeyValue value;
  std::string from;  // "envoy.yaml:7: retry_policy.num_retries: 3 (retries; 4 attempts)"
};

// A budget as one file gives it: the budget, the numbers it gives, and where
// they came from (the client.budget.* entries of LayerPolicy::from).
struct BudgetPart {
  Budget budget;
  std::vector<std::string> given;
  std::string budget_from;
  std::map<std::string, std::string> from;
};

// The retry policy one file (or one group of documents) describes: one layer.
// A fault a route injects, as the Istio and Envoy rooms read it (Istio's
// VirtualService fault becomes Envoy's fault filter): import --mesh makes it
// the incident on its call (docs/graph.md, "A fault on a call").
struct RouteFault {
  double delay_s = 0, delay_share = 0;  // share 0: no delay
  double abort_share = 0;
  FailureClass abort_status = FailureClass::http_503;
  // Where each incident key came from: "incident.delay_s" -> "vs.yaml:12: ...".
  std::map<std::string, std::string> from;
  bool empty() const { return (delay_s == 0 || delay_share == 0) && abort_share == 0; }
};

struct LayerPolicy {
  std::string file;
  std::string format;  // "Envoy route + cluster", "gRPC service config", ...
  System system = System::retrystorm;
  bool has_retry_policy = false;  // false: only a budget (cluster, DestinationRule)
  bool has_budget_part = false;   // this file speaks about the budget

  int retries = 0;            // retries at this layer (attempts - 1)
  std::string counting;       // "retries" or "attempts": how the file counts
  long long as_written = 0;   // the number as the file writes it
  std::string count_field;    // "retry_policy.num_retries"
  long long capped_from = 0;  // gRPC maxAttempts above 5, as written
  // Retries the system makes where more than the model runs (client.retries's
  // maximum): the layer is read at that cap; 0 = not capped.
  long long uncapped_retries = 0;

  std::optional<double> per_try_timeout_s;  // per attempt
  std::optional<double> deadline_s;         // whole request; 0 = none
  bool retry_on_timeout = true;
  // The error answers this layer retries (client.retry_on): what the system
  // retries of 503, 429, a refused connection and a reset.
  AnswerSet retried_answers = kAllAnswers;
  // How a rejection's pushback (Retry-After, grpc-retry-pushback-ms) is
  // waited (client.pushback), and Envoy's longest (client.pushback_max_s).
  Pushback pushback = Pushback::ignore;
  double pushback_max_s = 300;
  bool per_try_timeout_unset = false;  // Envoy/Istio without per_try_timeout
  // Whether a timed-out attempt would be retried once a per-try timeout is
  // set: Envoy/Istio retry it only with 5xx, gateway-error or reset listed.
  bool timeouts_retriable = true;
  bool per_try_c_core_only = false;  // gRPC perAttemptRecvTimeout: Go and Java ignore it
  // How the layer hedges: gRPC hedgingPolicy, Envoy hedge_on_per_try_timeout.
  Hedging hedging = Hedging::none;
  bool hedges() const { return hedging != Hedging::none; }
  // AWS adaptive mode's client-side rate limiter (client.rate_limiter).
  RateLimiter rate_limiter = RateLimiter::none;
  // The session model's sessions.deadline_aware: a step that cannot end
  // before the deadline is not slept, so the deadline cuts the ladder.
  bool deadline_aware = false;

  Backoff backoff{0, 2, 0, Jitter::none};
  std::vector<double> ladder_s;  // explicit ladder (retrystorm-policy)

  Budget budget;  // kind none: no budget
  // The budget numbers this file gives, by key name ("ratio", "min_concurrency"):
  // only these become client.budget.* keys, the others keep the scenario's.
  std::vector<std::string> budget_given;
  std::string budget_from;      // where the budget (or its absence) came from
  bool budget_modelled = true;  // false: the scenario's engine has no retry budget (sessions)

  // Where each field came from, by scenario path ("client.retries" ->
  // "envoy.yaml:7: retry_policy.num_retries: 3 (retries; 4 attempts)").
  std::map<std::string, std::string> from;
  std::vector<ImportedKey> keys;   // this layer's keys, filled by finalize()
  std::vector<std::string> notes;  // what the mapping approximates
  // Keys beyond the retry policy the file sets, by scenario path: Envoy's
  // cluster max_requests (client.max_requests), its adaptive concurrency
  // filter (server.adaptive_concurrency, ...). `from` says where each was read.
  std::map<std::string, KeyValue> extra;
  // An Istio VirtualService whose gateways leave out "mesh": the policy of
  // calls entering through a gateway (the user's), not between sidecars.
  bool gateway_only = false;
  // The fault the route injects, if any (Istio, Envoy).
  std::optional<RouteFault> fault;
  // The client instances a Kubernetes workload beside the settings runs.
  std::vector<Instances> instances;
  // A proxy's own retry settings as read, by the proxy's name ("retry-on" ->
  // "conn-failure 503", "proxy_next_upstream_tries" -> "0", "servers" -> "3"):
  // HAProxy and nginx, for lint's proxy rules and the conformance tests.
  std::map<std::string, std::string> settings;
  // Where settings sit in the file, for lint's file edits: by name
  // ("num_retries", "retry_policy.first_key", "retry_mode"), 0-based.
  struct Spot {
    int line = 0, column = 0;
  };
  std::map<std::string, Spot> spots;

  // The service the layer's calls go to, as the file names it (an Istio
  // host, an Envoy cluster, a HAProxy backend, ...): import --mesh matches it
  // to a call's callee (docs/graph.md, "From the mesh's configuration").
  std::string host;
  // The destination the layer's route sends to, where a budget file keeps
  // budgets by destination (an Istio subset: "v2"); "" = the host itself.
  std::string destination;
  // A budget-only file's budgets by destination (Istio DestinationRule
  // subsets with a trafficPolicy of their own, merged over the top level).
  std::map<std::string, BudgetPart> destination_budgets;

  // This layer's budget as a part; take_budget() puts in the budget of a
  // budget file (`file` may be this layer): the part for this layer's
  // destination when the file has one, else the file's own.
  BudgetPart budget_part() const;
  void take_budget(const LayerPolicy& file);
  // Sets the budget number client.budget.<name> (through the key table) and
  // marks it given; clear_budget() forgets every budget number given.
  void set_budget(const std::string& name, double value);
  void clear_budget();

  // Builds `keys` from the fields above and `from`.
  void finalize();
  // This layer as the one typed client policy (one layer): its ladder,
  // attempts and budget are read from there (src/core/policies/client_policy.hpp).
  ClientPolicy policy() const;
  // The ranges of this layer's backoff delays, retry 1 first: the explicit
  // ladder of a retrystorm policy as written, else the policy's ladder.
  std::vector<DelayRange> ladder() const;
};

// The key table's names of the typed choices ("full", "envoy_concurrency"):
// scenario files, --set and imported keys spell them one way.
std::string jitter_name(Jitter j);
std::string budget_kind_name(BudgetKind k);

struct ImportResult {
  std::vector<LayerPolicy> layers;  // outermost first, after merging budget-only files
  std::vector<ImportedKey> keys;    // the scenario keys, in table order
  std::vector<std::string> warnings;
  std::vector<std::string> formats;  // "envoy.yaml: Envoy route + cluster"
  // How many client instances run, from a Kubernetes workload given with the
  // files (also client.budget.clients among `keys`); nullopt: no file says.
  std::optional<Instances> instances;
};

// Detects the system of one file (or throws InputError naming the file).
System detect_system(const ConfigFile& f);

// Reads one file into one layer (several documents of one file are one layer).
// `system` forces the format by its name ("" = detect; an unknown name is an
// InputError listing the names). Warnings are appended.
LayerPolicy import_file(const ConfigFile& f, std::vector<std::string>& warnings,
                        std::string_view system = "");

// A scenario's own client policy as lint reads a stack of files: one layer
// per retrying layer (ClientPolicy::of), named "<source> (client policy)",
// and the client.* keys the scenario uses. No text is written or parsed.
ImportResult import_scenario(const Scenario& s, const std::string& source);

// Whether the scenario uses the key (the key table's when_path / when_values:
// client.timeout_s is not the session model's, client.budget.ratio is not an
// aws_quota budget's, ...).
bool key_applies(const Scenario& s, const std::string& path);

// Reads files describing stacked layers, outermost first. Throws InputError
// ("FILE:LINE: KEY: reason") for broken input and, with `check`, for keys that
// make a scenario `run` refuses (see check_runnable). Lint passes false: a
// file far outside the model's ranges is still worth its findings.
ImportResult import_configs(const std::vector<ConfigFile>& files, bool check = true);

// Throws InputError when the keys are outside a key's range (naming the key,
// the range and where the value came from) or make more layers or attempts
// than `run` allows (naming the files).
void check_runnable(const ImportResult& r);

// Applies the imported keys onto a scenario (validating each key).
void apply_keys(Scenario& s, const std::vector<ImportedKey>& keys);

// Output: "path = value  # from" lines; the partial scenario object.
std::string keys_text(const ImportResult& r);
nlohmann::json keys_object(const std::vector<ImportedKey>& keys);  // nested
nlohmann::json keys_flat(const std::vector<ImportedKey>& keys);    // {path: value}
std::string json_to_yaml_text(const nlohmann::json& j);

// A proxy's configuration as `retrystorm lab --config` runs it (docs/lab.md):
// only the sections and directives the importer reads, each option among
// those it knows (anything else is refused with InputError naming the line),
// every server pointed at the lab's backend and every listen on 127.0.0.1.
// What the file says is run by a real proxy: nothing in it may start a
// program, read or write a file, or bind or reach another address.
struct LabProxyConfig {
  std::string text;     // the settings, rewritten
  std::string backend;  // HAProxy: the backend section the lab's frontend uses
  std::string mode =
      "http";  // HAProxy: the backend's mode, as the importer reads it (tcp without one)
};
LabProxyConfig lab_haproxy_config(const std::string& text, const std::string& file,
                                  const std::string& backend_address);
LabProxyConfig lab_nginx_config(const std::string& text, const std::string& file,
                                const std::string& backend_address, int listen_port);

}  // namespace retrystorm::configs
