// Lint's fixes written into a gRPC service config (docs/configs.md, "Fixes as
// file edits"): retryThrottling added, maxAttempts set, or the retryPolicy
// (hedgingPolicy) removed where no retries are left: gRPC refuses a
// maxAttempts below 2 (RetryMethodConfig::JsonPostLoad). JSON has no
// comments to keep; the key order is kept.
#include <cmath>
#include <nlohmann/json.hpp>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

using namespace fix_text;
using nlohmann::ordered_json;

namespace {

// The method config the import read (`index`) gets `attempts` in its
// retryPolicy or hedgingPolicy, or loses the policy; the others keep theirs.
std::string set_attempts(ordered_json& doc, size_t index, long long attempts) {
  std::string change;
  if (index >= doc["methodConfig"].size()) return change;
  auto& mc = doc["methodConfig"][index];
  for (const char* policy : {"retryPolicy", "hedgingPolicy"}) {
    if (!mc.is_object() || !mc.contains(policy)) continue;
    if (attempts < 2) {
      mc.erase(policy);
      change = std::string(policy) + " removed (gRPC refuses a maxAttempts below 2)";
    } else {
      mc[policy]["maxAttempts"] = attempts;
      change = std::string(policy) + ".maxAttempts: " + std::to_string(attempts);
    }
  }
  return change;
}

}  // namespace

std::optional<FileEdit> grpc_fix_edit(const ConfigFile& f, const LayerPolicy& l,
                                      const Finding& finding) {
  ordered_json doc = ordered_json::parse(f.text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("methodConfig") ||
      !doc["methodConfig"].is_array())
    return std::nullopt;  // YAML or another shape: said in the fix text only
  std::string change;
  if (finding.rule == "no-retry-budget" ||
      (finding.rule == "hedging" && !doc.contains("retryThrottling"))) {
    doc["retryThrottling"] = {{"maxTokens", 10}, {"tokenRatio", 0.1}};
    change = "retryThrottling {\"maxTokens\": 10, \"tokenRatio\": 0.1} added";
  } else if (auto retries = key_number(finding, "client.retries")) {
    auto read = l.spots.find("method_config");
    if (read == l.spots.end()) return std::nullopt;
    change = set_attempts(doc, static_cast<size_t>(read->second.line), std::llround(*retries) + 1);
  }
  if (change.empty()) return std::nullopt;
  return FileEdit{f.name, change, doc.dump(2) + "\n"};
}

}  // namespace retrystorm::configs
