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
    // Beside proxy_pass, in its block: on the next line when proxy_pass ends
    // its line, else right after its `;` (a `}` after it on the line closes
    // the location, and a line below would land outside it).
    std::string& line = lines.at(static_cast<size_t>(pass->second.line));
    const size_t at = line.find("proxy_pass");
    const size_t end = at == std::string::npos ? at : line.find(';', at);
    if (end == std::string::npos) return std::nullopt;
    const size_t rest = line.find_first_not_of(" \t", end + 1);
    if (rest == std::string::npos || line[rest] == '#') {
      lines.insert(lines.begin() + pass->second.line + 1,
                   line.substr(0, line.find_first_not_of(" \t")) + directive);
    } else {
      line.insert(end + 1, " " + directive);
    }
  } else {
    return std::nullopt;
  }
  return FileEdit{f.name, directive, joined(lines)};
}

}  // namespace retrystorm::configs
