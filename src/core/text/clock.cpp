#include "text/clock.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "text/number.hpp"

namespace retrystorm::text {

namespace {

std::string_view trim_space(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The value of `s` when it is one or more digits only (at most 9).
std::optional<int64_t> whole(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "SS" or "SS.fff" below 60.
std::optional<double> clock_seconds(std::string_view s) {
  if (s.size() < 2 || !whole(s.substr(0, 2))) return std::nullopt;
  if (s.size() > 2 && (s[2] != '.' || !whole(s.substr(3)))) return std::nullopt;
  double v = 0;
  if (parse_decimal(s, v) != NumberText::ok || v >= 60) return std::nullopt;
  return v;
}

// Days of "[Nd]H:MM[:SS]" split off `text`; nothing when the prefix is bad.
std::optional<double> clock_days(std::string_view& text) {
  auto d = text.find('d');
  if (d == std::string_view::npos) return 0.0;
  auto n = whole(text.substr(0, d));
  if (!n || static_cast<double>(*n) > kMaxClockDays) return std::nullopt;
  text.remove_prefix(d + 1);
  return static_cast<double>(*n);
}

// Beyond this many seconds (some 31,700 years) a clock or a count of minutes
// says nothing more, and past 9.2e18 a whole number of seconds would not fit:
// such spans are written as seconds in scientific notation.
constexpr double kLongestClockS = 1e12;
bool too_long_for_clock(double s) {
  return !(std::fabs(s) < kLongestClockS);
}
std::string long_span_text(double s) {
  return fmt::format("{:.3g}s", s);
}
}  // namespace

std::optional<double> parse_clock(std::string_view text) {
  text = trim_space(text);
  if (double v = 0; parse_decimal(text, v) == NumberText::ok)
    return v >= 0 ? std::optional(v) : std::nullopt;
  auto days = clock_days(text);
  size_t colon = text.find(':');
  if (!days || (colon != 1 && colon != 2) || text.size() < colon + 3) return std::nullopt;
  auto h = whole(text.substr(0, colon)), m = whole(text.substr(colon + 1, 2));
  if (!h || !m || *h > 23 || *m > 59) return std::nullopt;
  double s = 0;
  if (std::string_view rest = text.substr(colon + 3); !rest.empty()) {
    auto sec = rest.front() == ':' ? clock_seconds(rest.substr(1)) : std::nullopt;
    if (!sec) return std::nullopt;
    s = *sec;
  }
  return *days * kDay + static_cast<double>(*h) * kHour + static_cast<double>(*m) * kMinute + s;
}

std::string format_clock(double t_s) {
  if (too_long_for_clock(t_s)) return long_span_text(t_s);
  std::chrono::seconds s(static_cast<int64_t>(std::floor(t_s)));
  auto day = std::chrono::floor<std::chrono::days>(s);  // toward the past, also before day 0
  std::chrono::hh_mm_ss rest{s - day};
  return fmt::format("{}d{:02}:{:02}:{:02}", day.count(), rest.hours().count(),
                     rest.minutes().count(), rest.seconds().count());
}

std::string hour_label(int64_t hour) {
  int64_t day = hour >= 0 ? hour / 24 : -((-hour + 23) / 24);
  return fmt::format("{}d{:02}:00", day, hour - day * 24);
}

std::string format_minutes(double seconds) {
  if (too_long_for_clock(seconds)) return long_span_text(seconds);
  std::chrono::seconds total(static_cast<int64_t>(std::floor(seconds)));
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(total);
  return fmt::format("{}m{:02}s", minutes.count(), (total - minutes).count());
}

}  // namespace retrystorm::text
