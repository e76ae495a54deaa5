// A lint finding's fix as an edit of the file it is about (docs/configs.md,
// "Fixes as file edits"): the edited text, written in the system's own terms,
// so that the real system accepts it. Only where the fix is said in that one
// file; a fix that belongs in another file (an Envoy cluster's circuit
// breakers beside a route file) gets none.
#pragma once

#include <optional>
#include <string>

#include "systems/import.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {

std::optional<FileEdit> fix_edit(const ConfigFile& file, const LayerPolicy& layer,
                                 const Finding& finding);

}  // namespace retrystorm::configs
