#include "logs/times.hpp"

#include <chrono>
#include <cmath>

#include "model/keys.hpp"
#include "text/clock.hpp"

namespace retrystorm::logs {

namespace {

using text::kDay;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Reads `width` digits at `at`; nothing unless they are all digits.
std::optional<int> digits(std::string_view s, size_t at, size_t width) {
  if (at + width > s.size()) return std::nullopt;
  int v = 0;
  for (size_t i = at; i < at + width; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<double> parse_date_time(std::string_view s) {
  auto y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  if (!y || !mo || !d || s[4] != '-' || s[7] != '-' || s.size() < 19) return std::nullopt;
  if (s[10] != 'T' && s[10] != ' ') return std::nullopt;
  auto h = digits(s, 11, 2), mi = digits(s, 14, 2), se = digits(s, 17, 2);
  if (!h || !mi || !se || s[13] != ':' || s[16] != ':' || *mo < 1 || *mo > 12 || *d < 1 ||
      *d > 31 || *h > 23 || *mi > 59 || *se > 60)
    return std::nullopt;
  // Days since 1970-01-01 by the proleptic Gregorian calendar of <chrono>.
  std::chrono::year_month_day date{std::chrono::year{*y},
                                   std::chrono::month{static_cast<unsigned>(*mo)},
                                   std::chrono::day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::nullopt;  // 2024-02-30 is no day (it read as March 1st)
  auto days = std::chrono::sys_days{date}.time_since_epoch().count();
  double t = static_cast<double>(days) * kDay + *h * text::kHour + *mi * text::kMinute + *se;
  size_t at = 19;
  if (at < s.size() && s[at] == '.') {
    size_t end = at + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    auto frac = parse_number(s.substr(at, end - at));
    if (!frac) return std::nullopt;
    t += *frac;
    at = end;
  }
  std::string_view zone = s.substr(at);
  if (zone.empty() || zone == "Z") return t;
  auto zh = digits(zone, 1, 2), zm = digits(zone, 4, 2);
  // RFC 3339's offset: +HH:MM, hours to 23 and minutes to 59.
  if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':' || !zh || !zm ||
      *zh > 23 || *zm > 59)
    return std::nullopt;
  double offset = *zh * text::kHour + *zm * text::kMinute;
  return zone[0] == '+' ? t - offset : t + offset;
}

double TimeBase::relative(double t, bool absolute) {
  if (!absolute) return t;
  if (!midnight_) midnight_ = std::floor(t / kDay) * kDay;
  return t - *midnight_;
}

std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  if (parse_decimal(trim(text), v) != NumberText::ok) return std::nullopt;
  return v;
}

std::optional<double> parse_clock(std::string_view text) {
  return text::parse_clock(trim(text));
}

std::optional<double> parse_time(std::string_view text, TimeBase& base) {
  text = trim(text);
  if (auto v = parse_number(text)) {
    if (*v > kAbsoluteBefore) return std::nullopt;
    return base.relative(*v, *v > kAbsoluteAfter);
  }
  if (auto v = parse_date_time(text)) return base.relative(*v, true);
  return parse_clock(text);
}

}  // namespace retrystorm::logs
