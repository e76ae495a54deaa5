// Lint's fixes written into an Envoy route file (docs/configs.md, "Fixes as
// file edits"): num_retries, and per_try_timeout with retry_on. A budget fix
// belongs in the cluster's circuit_breakers, another file: no edit.
#include <cmath>

#include "systems/fix_text.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {

using namespace fix_text;

namespace {

// A field of the retry_policy: its value replaced where it is written (a
// `per_try_timeout: 0s` left there would make the key appear twice), else a
// new line above the first field (block style only).
bool set_field(std::vector<std::string>& lines, const LayerPolicy& l, const std::string& field,
               const std::string& value) {
  if (auto at = l.spots.find(field); at != l.spots.end())
    return replace_scalar(lines, at->second, value);
  if (l.spots.count(field + ".not_scalar")) return false;
  auto first = l.spots.find("retry_policy.first_key");
  return first != l.spots.end() &&
         insert_line(lines, first->second.line, first->second.column, field + ": " + value);
}

std::optional<FileEdit> per_try_edit(const ConfigFile& f, const LayerPolicy& l, double per_try_s) {
  std::vector<std::string> lines = lines_of(f.text);
  std::string change = "retry_policy.per_try_timeout: " + number_text(per_try_s) + "s";
  if (!l.timeouts_retriable) {  // Envoy retries a timed-out attempt only with one of these
    auto on = l.spots.find("retry_on");
    if (on == l.spots.end()) return std::nullopt;
    auto value = scalar_at(lines, on->second);
    // reset: the smallest addition that retries a timed-out attempt (5xx or
    // gateway-error would also retry every 503 answer).
    if (!value || !replace_scalar(lines, on->second, *value + ",reset")) return std::nullopt;
    change += ", reset added to retry_on";
  }
  if (!set_field(lines, l, "per_try_timeout", number_text(per_try_s) + "s")) return std::nullopt;
  return FileEdit{f.name, change, joined(lines)};
}

}  // namespace

std::optional<FileEdit> envoy_fix_edit(const ConfigFile& f, const LayerPolicy& l,
                                       const Finding& finding) {
  if (finding.rule == "timeouts-never-retried") {
    auto per_try = key_number(finding, "client.timeout_s");
    return per_try ? per_try_edit(f, l, *per_try) : std::nullopt;
  }
  auto retries = key_number(finding, "client.retries");
  if (!retries) return std::nullopt;
  std::vector<std::string> lines = lines_of(f.text);
  std::string n = std::to_string(std::llround(*retries));
  if (!set_field(lines, l, "num_retries", n)) return std::nullopt;
  return FileEdit{f.name, "retry_policy.num_retries: " + n, joined(lines)};
}

}  // namespace retrystorm::configs
