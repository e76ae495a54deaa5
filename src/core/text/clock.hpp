// Clock times and durations as the project writes them: seconds from day 0,
// 00:00:00, or a clock "[Nd]H:MM[:SS]" ("1d09:40", "9:40", "22:15:09.5").
// One parser and one set of formatters for the session model's keys, the
// incident logs, the command line and every report (docs/log-formats.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace retrystorm::text {

inline constexpr double kMinute = 60;
inline constexpr double kHour = 3600;
inline constexpr double kDay = 86400;

// Days beyond this are not a time of a run or a log (and keep the sum exact).
inline constexpr double kMaxClockDays = 1e6;

// Plain seconds ("70200", "12.5") or a clock: optional whole days "Nd", hours
// of one or two digits (below 24), two digits of minutes (below 60), and
// optionally ":SS" with a fraction (below 60). Whitespace around is ignored.
// Nothing when the text is neither, or negative.
std::optional<double> parse_clock(std::string_view text);

// "1d09:40:05": day, hours, minutes, whole seconds (rounded down; days of a
// negative time count down from day 0, like "-1d23:00:00").
std::string format_clock(double t_s);

// "1d13:00": hour number `hour` since day 0 as a clock.
std::string hour_label(int64_t hour);

// Minutes and whole seconds of a duration: "24m57s".
std::string format_minutes(double seconds);

}  // namespace retrystorm::text
