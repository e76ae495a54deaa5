#include "model/profile.hpp"

#include <algorithm>
#include <cmath>

#include "model/keys.hpp"
#include "text/list.hpp"
#include "text/number.hpp"

namespace retrystorm {

double Profile::at(double t_s) const {
  if (points.empty()) return 1.0;
  if (period_s > 0) t_s = std::fmod(t_s, period_s);
  if (t_s < points.front().first) return points.front().second;
  // The last point at or before t: a step's later factor holds from its time.
  auto after = std::upper_bound(points.begin(), points.end(), t_s,
                                [](double t, const auto& p) { return t < p.first; });
  if (after == points.end()) return points.back().second;
  const auto& [t0, f0] = *(after - 1);
  const auto& [t1, f1] = *after;
  return f0 + (f1 - f0) * (t_s - t0) / (t1 - t0);
}

double Profile::highest() const {
  double top = points.empty() ? 1.0 : 0.0;
  for (const auto& p : points) top = std::max(top, p.second);
  return top;
}

Profile parse_profile(const std::string& text, double period_s, const std::string& key) {
  Profile p;
  p.period_s = period_s;
  if (text.empty()) return p;
  auto refuse = [&](std::string_view item, const std::string& why) {
    throw InputError(key + ": '" + std::string(item) + "' " + why);
  };
  for (std::string_view item : text::list_items(text)) {
    const size_t colon = item.find(':');
    double t = 0, f = 0;
    if (colon == std::string_view::npos ||
        parse_decimal(item.substr(0, colon), t) != NumberText::ok ||
        parse_decimal(item.substr(colon + 1), f) != NumberText::ok)
      refuse(item, "is not a point T:F (seconds:factor), as in \"0:1,600:2,900:1\"");
    if (!(t >= 0 && t <= 1e7)) refuse(item, "starts outside 0 to 10000000 s");
    if (!(f >= 0 && f <= 1000)) refuse(item, "has a factor outside 0 to 1000");
    if (!p.points.empty() && t < p.points.back().first)
      refuse(item, "comes before the point ahead of it: points go forward in time");
    if (p.points.size() == kProfilePoints)
      throw InputError(key + ": more than " + std::to_string(kProfilePoints) + " points");
    p.points.emplace_back(t, f);
  }
  if (period_s > 0 && p.points.back().first > period_s)
    throw InputError(key + ": a point at " + number_text(p.points.back().first) +
                     " s lies beyond the period of " + number_text(period_s) + " s");
  return p;
}

}  // namespace retrystorm
