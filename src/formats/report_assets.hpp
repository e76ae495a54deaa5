// The HTML report's chart code (web/src/report, built by Vite with
// web/vite.report.config.ts) as text compiled into the program by
// cmake/report.cmake; empty with RETRYSTORM_WEB=OFF.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace retrystorm {

// Generated: ("report.js", text) and ("report.css", text), or nothing.
const std::vector<std::pair<std::string, std::string>>& report_asset_texts();

std::string_view report_script();
std::string_view report_style();

}  // namespace retrystorm
