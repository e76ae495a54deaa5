// The preset scenario files (presets/*.yaml), compiled into the program by
// CMake (cmake/embed_presets.cmake writes preset_texts.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace retrystorm {
// (file name, YAML text), in file name order.
const std::vector<std::pair<std::string, std::string>>& preset_texts();
}  // namespace retrystorm
