// Importing the retry configuration of real systems (Envoy, gRPC, Istio,
// Linkerd, AWS SDKs, and our own retrystorm-policy) as scenario keys.
// Facts: ../shared/reference/retry-configs.md; mapping: docs/configs.md.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/keys.hpp"
#include "model/scenario.hpp"

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

// The retry policy one file (or one group of documents) describes: one layer.
struct LayerPolicy {
  std::string file;
  std::string format;             // "Envoy route + cluster", "gRPC service config", ...
  std::string system;             // envoy | grpc | istio | linkerd | aws | retrystorm
  bool has_retry_policy = false;  // false: only a budget (cluster, DestinationRule)
  bool has_budget_part = false;   // this file speaks about the budget

  int retries = 0;            // retries at this layer (attempts - 1)
  std::string counting;       // "retries" or "attempts": how the file counts
  long long as_written = 0;   // the number as the file writes it
  std::string count_field;    // "retry_policy.num_retries"
  long long capped_from = 0;  // gRPC maxAttempts above 5, as written

  std::optional<double> per_try_timeout_s;  // per attempt
  std::optional<double> deadline_s;         // whole request; 0 = none
  bool retry_on_timeout = true;
  bool per_try_timeout_unset = false;  // Envoy/Istio without per_try_timeout

  double base_s = 0, multiplier = 2, cap_s = 0;
  std::string jitter = "none";
  std::vector<double> ladder_s;  // explicit ladder (retrystorm-policy)

  std::string budget_kind = "none";
  std::map<std::string, double> budget;  // "ratio" -> 0.2 ... (client.budget.<name>)
  std::string budget_from;               // where the budget (or its absence) came from

  // Where each field came from, by scenario path ("client.retries" ->
  // "envoy.yaml:7: retry_policy.num_retries: 3 (retries; 4 attempts)").
  std::map<std::string, std::string> from;
  std::vector<ImportedKey> keys;   // this layer's keys, filled by finalize()
  std::vector<std::string> notes;  // what the mapping approximates

  // Builds `keys` from the fields above and `from`.
  void finalize();
};

struct ImportResult {
  std::vector<LayerPolicy> layers;  // outermost first, after merging budget-only files
  std::vector<ImportedKey> keys;    // the scenario keys, in table order
  std::vector<std::string> warnings;
  std::vector<std::string> formats;  // "envoy.yaml: Envoy route + cluster"
};

// Detects the format of one file: "envoy", "grpc", "istio", "linkerd", "aws",
// "retrystorm" (or throws InputError naming the file).
std::string detect_system(const ConfigFile& f);

// Reads one file into one layer (several documents of one file are one layer).
// `system` forces the format ("" = detect). Warnings are appended.
LayerPolicy import_file(const ConfigFile& f, std::vector<std::string>& warnings,
                        const std::string& system = "");

// Reads files describing stacked layers, outermost first. Throws InputError
// ("FILE:LINE: KEY: reason") for broken input.
ImportResult import_configs(const std::vector<ConfigFile>& files);

// Applies the imported keys onto a scenario (validating each key).
void apply_keys(Scenario& s, const std::vector<ImportedKey>& keys);

// Output: "path = value  # from" lines; the partial scenario object.
std::string keys_text(const ImportResult& r);
nlohmann::json keys_object(const std::vector<ImportedKey>& keys);  // nested
nlohmann::json keys_flat(const std::vector<ImportedKey>& keys);    // {path: value}
std::string json_to_yaml_text(const nlohmann::json& j);

// Reads a scenario key through the key table; `fallback` when the key is not
// in the table (yet).
double key_number(const Scenario& s, const std::string& path, double fallback);
std::string key_text(const Scenario& s, const std::string& path, const std::string& fallback);
bool key_bool(const Scenario& s, const std::string& path, bool fallback);

}  // namespace retrystorm::configs
