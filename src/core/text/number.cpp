#include "text/number.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace retrystorm {

std::string number_text(double v) {
  return fmt::format("{}", v);
}

NumberText parse_decimal(std::string_view text, double& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return NumberText::not_a_number;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) return NumberText::out_of_range;
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return NumberText::not_a_number;
  out = v;
  return NumberText::ok;
}

}  // namespace retrystorm

namespace retrystorm::text {

std::string fixed_text(double v, int digits) {
  return fmt::format("{:.{}f}", v, digits);
}

std::string trimmed_text(double v, int digits) {
  std::string s = fixed_text(v, digits);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string general_text(double v, int digits) {
  return fmt::format("{:.{}g}", v, digits);
}

std::string decimal_text(double v, int digits) {
  double scale = std::pow(10.0, digits);
  return trimmed_text(std::round(v * scale) / scale, digits);
}

std::string grouped_text(double v) {
  std::string digits = fixed_text(std::fabs(std::round(v)), 0);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (std::round(v) < 0 ? "-" : "") + out;
}

}  // namespace retrystorm::text
