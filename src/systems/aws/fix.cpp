// Lint's fixes written into an AWS shared config file (docs/configs.md,
// "Fixes as file edits"): retry_mode = standard for the retry quota, and
// max_attempts, in the profile the import read.
#include <cmath>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

using namespace fix_text;

namespace {

// `name = value` on the setting's line, or a new line under the section.
bool set_setting(std::vector<std::string>& lines, const LayerPolicy& l, const std::string& name,
                 const std::string& value) {
  std::string text = name + " = " + value;
  if (auto at = l.spots.find(name); at != l.spots.end()) {
    std::string& line = lines.at(static_cast<size_t>(at->second.line));
    size_t indent = line.find_first_not_of(" \t");
    line = line.substr(0, indent == std::string::npos ? 0 : indent) + text;
    return true;
  }
  auto section = l.spots.find("section");
  return section != l.spots.end() && insert_line(lines, section->second.line + 1, 0, text);
}

}  // namespace

std::optional<FileEdit> aws_fix_edit(const ConfigFile& f, const LayerPolicy& l,
                                     const Finding& finding) {
  std::vector<std::string> lines = lines_of(f.text);
  std::string change;
  if (finding.rule == "no-retry-budget") {
    // The attempts stay as read: legacy's default is 5, standard's 3. The
    // line is changed before one is added above it.
    if (!set_setting(lines, l, "retry_mode", "standard")) return std::nullopt;
    if (!l.spots.count("max_attempts") &&
        !set_setting(lines, l, "max_attempts", std::to_string(l.retries + 1)))
      return std::nullopt;
    change = "retry_mode = standard (its retry quota), max_attempts as before";
  } else if (auto retries = key_number(finding, "client.retries")) {
    std::string attempts = std::to_string(std::llround(*retries) + 1);
    if (!set_setting(lines, l, "max_attempts", attempts)) return std::nullopt;
    change = "max_attempts = " + attempts;
  } else {
    return std::nullopt;
  }
  return FileEdit{f.name, change, joined(lines)};
}

}  // namespace retrystorm::configs
