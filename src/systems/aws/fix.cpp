// Lint's fixes written into an AWS shared config file (docs/configs.md,
// "Fixes as file edits"): retry_mode = standard for the retry quota, and
// max_attempts, in the profile the import read.
#include <cmath>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

using namespace fix_text;

namespace {

// The indent of the section's first setting after line `from`: a line
// inserted above it with less would make it, indented deeper, part of the new
// line's value (configparser's continuation lines), not a setting.
int first_setting_indent(const std::vector<std::string>& lines, size_t from) {
  for (size_t i = from; i < lines.size(); ++i) {
    size_t p = lines[i].find_first_not_of(" \t\r\f\v");
    if (p == std::string::npos || lines[i][p] == '#' || lines[i][p] == ';') continue;
    return lines[i][p] == '[' ? 0 : static_cast<int>(p);
  }
  return 0;
}

// `name = value` on the setting's line, or a new line under the section. The
// spots are lines the import read as settings, never a line that continues
// another setting's value (aws/import.cpp, parse_sections); and the import
// refuses a max_attempts or retry_mode continued over lines, so the line
// rewritten has no continuation under it.
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
  if (section == l.spots.end()) return false;
  const int below = section->second.line + 1;
  return below >= 0 &&
         insert_line(lines, below, first_setting_indent(lines, static_cast<size_t>(below)), text);
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
