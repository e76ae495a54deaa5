// Wall-clock times of the session model: seconds from day 0, 00:00:00,
// written as [Nd]HH:MM[:SS] ("1d09:40") in timelines and queues.
#pragma once

#include <string>

namespace retrystorm::sessions {

constexpr double kDay = 86400;
constexpr double kHour = 3600;

// "1d09:40", "09:40:30", "2d22:15" or plain seconds ("34800"); throws
// InputError naming `key` and the text when it is neither.
double parse_clock(const std::string& text, const std::string& key);

// "1d09:40:05" (day, hours, minutes, whole seconds).
std::string format_clock(double t_s);

// Minutes and seconds of a duration: "24m57s".
std::string format_minutes(double seconds);

}  // namespace retrystorm::sessions
