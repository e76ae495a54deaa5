// The page's files (web/dist), embedded at build time by cmake/embed_dir.cmake.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace retrystorm {
// Path relative to web/dist ("index.html") to the file's bytes.
const std::map<std::string, std::string_view>& web_assets();
}  // namespace retrystorm
