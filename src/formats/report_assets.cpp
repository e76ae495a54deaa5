#include "formats/report_assets.hpp"

namespace retrystorm {

namespace {
std::string_view asset(const char* name) {
  for (const auto& [n, text] : report_asset_texts())
    if (n == name) return text;
  return {};
}
}  // namespace

std::string_view report_script() {
  return asset("report.js");
}
std::string_view report_style() {
  return asset("report.css");
}

}  // namespace retrystorm
