// Durations and shares as every report, message and note writes them: one
// spelling each, for the engines' reports, lint, export notes and the lab.
#pragma once

#include <string>

namespace retrystorm {

// "31 min 30 s", "250 ms", "0.35 ms", "1.5 s", "2 min 2.143 s": below a
// second in milliseconds to the microsecond, above it to the millisecond
// (each number through number_text).
std::string human_duration(double seconds);

// "41 s", "7.9 h", "3.2 days", "1,200 years": a duration estimated with
// an error of percents, to two significant digits in the largest unit
// that keeps it above 2 (up to seconds, minutes, hours, days, years).
std::string rough_duration(double seconds);
// "94.1%": a fraction as a percentage with one decimal at most.
std::string format_percent(double fraction);

}  // namespace retrystorm
