// Text edits of configuration files that keep everything else as written
// (comments, order, spacing): for lint's file edits (systems/fix_edit.hpp).
// Internal to src/systems.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "systems/import.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {

namespace fix_text {

std::vector<std::string> lines_of(const std::string& text);
std::string joined(const std::vector<std::string>& lines);
// The scalar that starts at `at`, without its quotes.
std::optional<std::string> scalar_at(const std::vector<std::string>& lines, LayerPolicy::Spot at);
// The scalar that starts at `at` (quoted or not) becomes `value`; false when
// nothing is there.
bool replace_scalar(std::vector<std::string>& lines, LayerPolicy::Spot at,
                    const std::string& value);
// A new line `text`, indented by `indent` spaces, before line `before`.
bool insert_line(std::vector<std::string>& lines, int before, int indent, const std::string& text);
// A number among the finding's fix keys.
std::optional<double> key_number(const Finding& f, const std::string& path);

}  // namespace fix_text

// Each system's edits, in its own room.
std::optional<FileEdit> envoy_fix_edit(const ConfigFile&, const LayerPolicy&, const Finding&);
std::optional<FileEdit> istio_fix_edit(const ConfigFile&, const LayerPolicy&, const Finding&);
std::optional<FileEdit> grpc_fix_edit(const ConfigFile&, const LayerPolicy&, const Finding&);
std::optional<FileEdit> aws_fix_edit(const ConfigFile&, const LayerPolicy&, const Finding&);
std::optional<FileEdit> nginx_fix_edit(const ConfigFile&, const LayerPolicy&, const Finding&);

}  // namespace retrystorm::configs
