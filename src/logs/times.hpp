// Times in incident logs and on the command line: seconds from the start of
// the run (day 0, 00:00:00), a clock "[Nd]HH:MM[:SS]" ("1d09:40"), or a
// date-time "2024-03-10T19:40:00Z". See docs/log-formats.md.
#pragma once

#include <optional>
#include <string_view>

namespace retrystorm::logs {

// Absolute times (date-times, Unix seconds) become seconds from midnight
// (UTC) of the first day a log shows, so every file of one run shares day 0.
class TimeBase {
 public:
  // Seconds since day 0 of `t`, which is absolute when `absolute`.
  double relative(double t, bool absolute);

 private:
  std::optional<double> midnight_;
};

// Unix seconds above this are taken as absolute (2001-09-09).
inline constexpr double kAbsoluteAfter = 1e9;
// ... and up to this (2286-11-20): a larger number is no time a log holds
// (Unix milliseconds, or a broken value), and is not a time.
inline constexpr double kAbsoluteBefore = 1e10;

// A time of the log: plain seconds (absolute when above kAbsoluteAfter, up
// to kAbsoluteBefore), a clock or a date-time. Nothing when the text is none
// of them.
std::optional<double> parse_time(std::string_view text, TimeBase& base);
// A time of the command line (--from, --to): seconds or a clock, never
// negative.
std::optional<double> parse_clock(std::string_view text);
// "2024-03-10T19:40:00.250Z" (or a space for T; an offset "+01:00"; no zone
// is UTC) as Unix seconds; nothing when the text is not one.
std::optional<double> parse_date_time(std::string_view text);
// A plain number; nothing unless the whole text is one.
std::optional<double> parse_number(std::string_view text);

}  // namespace retrystorm::logs
