// Lint's fixes written into an nginx configuration (docs/configs.md, "Fixes
// as file edits"): proxy_next_upstream_tries, which counts attempts.
#include <cmath>
#include <regex>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

using namespace fix_text;

std::optional<FileEdit> nginx_fix_edit(const ConfigFile& f, const LayerPolicy& l,
                                       const Finding& finding) {
  auto retries = key_number(finding, "client.retries");
  if (!retries) return std::nullopt;
  std::string tries = std::to_string(std::llround(*retries) + 1);
  std::vector<std::string> lines = lines_of(f.text);
  std::string directive = "proxy_next_upstream_tries " + tries + ";";
  if (auto at = l.spots.find("tries"); at != l.spots.end()) {
    std::string& line = lines.at(static_cast<size_t>(at->second.line));
    static const std::regex written(R"(proxy_next_upstream_tries\s+[^;\s]+\s*;)");
    if (!std::regex_search(line, written)) return std::nullopt;
    line = std::regex_replace(line, written, directive);
  } else if (auto pass = l.spots.find("proxy_pass"); pass != l.spots.end()) {
    const std::string line = lines.at(static_cast<size_t>(pass->second.line));
    size_t indent = line.find_first_not_of(" \t");
    if (indent == std::string::npos) return std::nullopt;
    lines.insert(lines.begin() + pass->second.line + 1, line.substr(0, indent) + directive);
  } else {
    return std::nullopt;
  }
  return FileEdit{f.name, directive, joined(lines)};
}

}  // namespace retrystorm::configs
