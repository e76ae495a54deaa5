// How the incident reports print durations and ranges of hours; hours and
// clock times are the project's one clock format (text/clock.hpp).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <string_view>

#include "analysis/incident/report.hpp"

namespace retrystorm::incident {

std::string span_label(double s) {
  if (!known(s)) return "unknown";
  std::chrono::hh_mm_ss t{std::chrono::seconds(std::llround(std::abs(s)))};
  std::string_view sign = s < 0 ? "-" : "";
  if (t.hours().count() > 0)
    return fmt::format("{}{}:{:02}:{:02}", sign, t.hours().count(), t.minutes().count(),
                       t.seconds().count());
  return fmt::format("{}{}:{:02}", sign, t.minutes().count(), t.seconds().count());
}

std::string hour_ranges(const std::vector<int64_t>& hours) {
  std::string out;
  for (size_t i = 0; i < hours.size();) {
    size_t j = i;
    while (j + 1 < hours.size() && hours[j + 1] == hours[j] + 1) ++j;
    std::string first = hour_label(hours[i]), last = hour_label(hours[j]);
    bool same_day = first.substr(0, first.size() - 6) == last.substr(0, last.size() - 6);
    // The range runs to the end of its last hour.
    std::string end =
        (same_day ? last.substr(last.size() - 5) : last).substr(0, same_day ? 2 : last.size() - 3) +
        ":59";
    out += (out.empty() ? "" : ", ") + first + "-" + end;
    i = j + 1;
  }
  return out;
}

}  // namespace retrystorm::incident
