// Lint's fixes written into an Istio VirtualService (docs/configs.md, "Fixes
// as file edits"): retries.attempts. A budget fix belongs in a
// DestinationRule, another file: no edit.
#include <cmath>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

using namespace fix_text;

std::optional<FileEdit> istio_fix_edit(const ConfigFile& f, const LayerPolicy& l,
                                       const Finding& finding) {
  auto retries = key_number(finding, "client.retries");
  auto at = l.spots.find("attempts");
  // attempts: 0 makes Istio drop the whole retry policy; a count of 0 is said in the text.
  if (!retries || *retries < 1 || at == l.spots.end()) return std::nullopt;
  std::vector<std::string> lines = lines_of(f.text);
  std::string n = std::to_string(std::llround(*retries));
  if (!replace_scalar(lines, at->second, n)) return std::nullopt;
  return FileEdit{f.name, "retries.attempts: " + n, joined(lines)};
}

}  // namespace retrystorm::configs
