// Wall-clock times of the session model: seconds from day 0, 00:00:00,
// written as [Nd]HH:MM[:SS] ("1d09:40") in timelines and queues. The clock
// grammar and its formatters are the project's one toolkit (text/clock.hpp).
#pragma once

#include <string>

#include "text/clock.hpp"

namespace retrystorm::sessions {

using text::format_clock;
using text::format_minutes;
using text::kDay;
using text::kHour;

// A clock of text::parse_clock; throws InputError naming `key` and the text
// when it is not one.
double parse_clock(const std::string& text, const std::string& key);

}  // namespace retrystorm::sessions
