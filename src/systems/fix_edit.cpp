// Lint's fixes as edits of the user's file (docs/configs.md, "Fixes as file
// edits"): the text helpers the systems share, and the dispatch to each
// system's own edits (src/systems/<system>/fix.cpp).
#include "systems/fix_edit.hpp"

#include <exception>

#include "systems/fix_text.hpp"

namespace retrystorm::configs {

namespace fix_text {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

namespace {

// Where the scalar at `at` sits in its line, quotes left out: [begin, end).
std::optional<std::pair<size_t, size_t>> scalar_span(const std::vector<std::string>& lines,
                                                     LayerPolicy::Spot at) {
  if (at.line < 0 || static_cast<size_t>(at.line) >= lines.size()) return std::nullopt;
  const std::string& line = lines[static_cast<size_t>(at.line)];
  auto from = static_cast<size_t>(at.column);
  if (from >= line.size()) return std::nullopt;
  char quote = line[from] == '"' || line[from] == '\'' ? line[from] : 0;
  if (quote) {
    size_t end = line.find(quote, from + 1);
    if (end == std::string::npos) return std::nullopt;
    return std::pair{from + 1, end};
  }
  size_t end = line.find_first_of(",}] \t#", from);
  return std::pair{from, end == std::string::npos ? line.size() : end};
}

}  // namespace

std::optional<std::string> scalar_at(const std::vector<std::string>& lines, LayerPolicy::Spot at) {
  auto span = scalar_span(lines, at);
  if (!span) return std::nullopt;
  return lines[static_cast<size_t>(at.line)].substr(span->first, span->second - span->first);
}

bool replace_scalar(std::vector<std::string>& lines, LayerPolicy::Spot at,
                    const std::string& value) {
  auto span = scalar_span(lines, at);
  if (!span) return false;
  lines[static_cast<size_t>(at.line)].replace(span->first, span->second - span->first, value);
  return true;
}

bool insert_line(std::vector<std::string>& lines, int before, int indent, const std::string& text) {
  if (before < 0 || static_cast<size_t>(before) > lines.size()) return false;
  lines.insert(lines.begin() + before, std::string(static_cast<size_t>(indent), ' ') + text);
  return true;
}

std::optional<double> key_number(const Finding& f, const std::string& path) {
  for (const auto& [p, v] : f.fix_keys)
    if (p == path && std::holds_alternative<double>(v)) return std::get<double>(v);
  return std::nullopt;
}

}  // namespace fix_text

namespace {

std::optional<FileEdit> system_edit(const ConfigFile& file, const LayerPolicy& layer,
                                    const Finding& finding) {
  switch (layer.system) {
    case System::envoy:
      return envoy_fix_edit(file, layer, finding);
    case System::istio:
      return istio_fix_edit(file, layer, finding);
    case System::grpc:
      return grpc_fix_edit(file, layer, finding);
    case System::aws:
      return aws_fix_edit(file, layer, finding);
    case System::nginx:
      return nginx_fix_edit(file, layer, finding);
    default:
      return std::nullopt;  // the fix is said in the text only
  }
}

}  // namespace

std::optional<FileEdit> fix_edit(const ConfigFile& file, const LayerPolicy& layer,
                                 const Finding& finding) {
  std::optional<FileEdit> edit;
  try {
    edit = system_edit(file, layer, finding);
  } catch (const std::exception&) {
    return std::nullopt;  // a spot the text does not have: the fix stays text only
  }
  if (edit) edit->file = file.name;
  return edit;
}

}  // namespace retrystorm::configs
