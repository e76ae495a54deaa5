// Lint's fixes written into an Envoy route file (docs/configs.md, "Fixes as
// file edits"): num_retries, and per_try_timeout with retry_on. A budget fix
// belongs in the cluster's circuit_breakers, another file: no edit.
#include <cmath>

#include "systems/fix_text.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {

using namespace fix_text;

namespace {

// A new field of the retry_policy, above its first (block style only).
bool add_field(std::vector<std::string>& lines, const LayerPolicy& l, const std::string& text) {
  auto first = l.spots.find("retry_policy.first_key");
  return first != l.spots.end() &&
         insert_line(lines, first->second.line, first->second.column, text);
}

std::optional<FileEdit> per_try_edit(const ConfigFile& f, const LayerPolicy& l, double per_try_s) {
  std::vector<std::string> lines = lines_of(f.text);
  std::string change = "retry_policy.per_try_timeout: " + number_text(per_try_s) + "s";
  if (!l.timeouts_retriable) {  // Envoy retries a timed-out attempt only with one of these
    auto on = l.spots.find("retry_on");
    if (on == l.spots.end()) return std::nullopt;
    auto value = scalar_at(lines, on->second);
    if (!value || !replace_scalar(lines, on->second, *value + ",5xx")) return std::nullopt;
    change += ", 5xx added to retry_on";
  }
  if (!add_field(lines, l, "per_try_timeout: " + number_text(per_try_s) + "s")) return std::nullopt;
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
  auto at = l.spots.find("num_retries");
  bool done = at != l.spots.end() ? replace_scalar(lines, at->second, n)
                                  : add_field(lines, l, "num_retries: " + n);
  if (!done) return std::nullopt;
  return FileEdit{f.name, "retry_policy.num_retries: " + n, joined(lines)};
}

}  // namespace retrystorm::configs
