#include "engines/sessions/clock.hpp"

#include <cmath>
#include <cstdio>
#include <regex>

#include "model/keys.hpp"

namespace retrystorm::sessions {

double parse_clock(const std::string& text, const std::string& key) {
  static const std::regex clock(R"(\s*(?:(\d+)d)?(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?\s*)");
  static const std::regex seconds(R"(\s*(\d+(?:\.\d+)?)\s*)");
  std::smatch m;
  if (std::regex_match(text, m, seconds)) return std::stod(m[1]);
  if (std::regex_match(text, m, clock)) {
    double day = m[1].matched ? std::stod(m[1]) : 0;
    double h = std::stod(m[2]), min = std::stod(m[3]);
    double sec = m[4].matched ? std::stod(m[4]) : 0;
    if (h < 24 && min < 60 && sec < 60) return day * kDay + h * kHour + min * 60 + sec;
  }
  throw InputError(key + ": '" + text +
                   "' is not a time; write seconds or [Nd]HH:MM[:SS], like 1d09:40");
}

std::string format_clock(double t_s) {
  long total = std::lround(std::floor(t_s));
  char out[48];
  std::snprintf(out, sizeof out, "%ldd%02ld:%02ld:%02ld", total / 86400, total % 86400 / 3600,
                total % 3600 / 60, total % 60);
  return out;
}

std::string format_minutes(double seconds) {
  long total = std::lround(std::floor(seconds));
  char out[32];
  std::snprintf(out, sizeof out, "%ldm%02lds", total / 60, total % 60);
  return out;
}

}  // namespace retrystorm::sessions
