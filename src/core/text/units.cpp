#include "text/units.hpp"

#include <chrono>
#include <cmath>

#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm {

std::string human_duration(double s) {
  if (!(s > 0)) return "0 s";
  if (s >= 1e12) return number_text(s) + " s";
  if (s < 1) return number_text(std::round(s * 1e6) / 1e3) + " ms";
  if (s < text::kMinute) return number_text(std::round(s * 1000) / 1000) + " s";
  // Whole milliseconds, so the seconds are a number of ms / 1000 and print
  // as such (a fraction split off a double prints as 2.1430000000000007).
  std::chrono::hh_mm_ss t{std::chrono::milliseconds(std::llround(s * 1000))};
  double sec = static_cast<double>((t.seconds() + t.subseconds()).count()) / 1000;
  std::string out;
  if (t.hours().count() > 0) out += std::to_string(t.hours().count()) + " h";
  if (t.minutes().count() > 0)
    out += (out.empty() ? "" : " ") + std::to_string(t.minutes().count()) + " min";
  if (sec > 0) out += (out.empty() ? "" : " ") + number_text(sec) + " s";
  return out;
}

namespace {

// Two significant digits: "7.9", "41", "1,200".
std::string two_digits(double v) {
  const double unit = std::pow(10.0, std::floor(std::log10(v)) - 1);
  const double r = std::round(v / unit) * unit;
  return r >= 100 ? text::grouped_text(r) : text::general_text(r, 2);
}

}  // namespace

std::string rough_duration(double s) {
  if (std::isinf(s)) return "never";
  if (!(s > 0)) return "0 s";
  struct Unit {
    double seconds;
    const char* name;
  };
  static constexpr Unit kUnits[] = {
      {365.25 * 86400, "years"}, {86400, "days"}, {3600, "h"}, {60, "min"}};
  for (const Unit& u : kUnits)
    if (s >= 2 * u.seconds) return two_digits(s / u.seconds) + " " + u.name;
  return two_digits(s) + " s";
}

std::string format_percent(double fraction) {
  return text::trimmed_text(fraction * 100, 1) + "%";
}

}  // namespace retrystorm
