#include "analysis/incident/replay.hpp"

#include <algorithm>
#include <cmath>

#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm::incident {

namespace {

constexpr double kDeadShare = 0.9;      // error share of calls from which the API is dead
constexpr double kHealthyShare = 0.05;  // ... below which it is healthy

// Scenario values: three decimals unless a key says otherwise.
std::string number(double v, int digits = 3) {
  return text::decimal_text(v, digits);
}

std::string hour_state(const HourRow& h) {
  if (h.errors <= 0) return "healthy";
  double share = known(h.error_share) ? h.error_share : 1.0;
  if (share < kHealthyShare) return "healthy";
  if (h.lines_401 > h.lines_429) return "401";
  if (share >= kDeadShare) return "dead";
  return "429:" + number(std::round(share * 20) / 20, 2);
}

// Arrivals a day against day 0, per hour observed; empty without arrival events.
std::vector<double> day_factors(const Report& r) {
  std::vector<double> sum, hours;
  for (const auto& h : r.hours) {
    if (h.hour < 0 || !known(h.arrivals)) continue;
    size_t day = static_cast<size_t>(h.hour / 24);
    if (sum.size() <= day) sum.resize(day + 1, 0.0), hours.resize(day + 1, 0.0);
    sum[day] += h.arrivals;
    hours[day] += 1;
  }
  std::vector<double> f;
  if (sum.empty() || sum[0] <= 0) return f;
  double base = sum[0] / hours[0];
  for (size_t d = 0; d < sum.size(); ++d)
    f.push_back(hours[d] > 0 ? std::round(sum[d] / hours[d] / base * 100) / 100 : 1.0);
  return f;
}

// Items an hour, hour of day 00..23, at day factor 1: arrivals when the
// events give them, else what healthy hours completed, else launches.
std::vector<double> hourly_rates(const Report& r, const std::vector<double>& factors,
                                 std::string& source) {
  std::vector<double> sum(24, 0.0), n(24, 0.0);
  bool arrivals = !factors.empty();
  source = arrivals ? "ping arrivals in the events" : "items done in hours without errors";
  for (const auto& h : r.hours) {
    if (h.hour < 0) continue;
    size_t hod = static_cast<size_t>(h.hour % 24);
    size_t day = static_cast<size_t>(h.hour / 24);
    if (arrivals && day < factors.size() && factors[day] > 0) {
      sum[hod] += h.arrivals / factors[day];
      n[hod] += 1;
    } else if (!arrivals && h.errors == 0) {
      sum[hod] += h.goodput > 0 ? h.goodput : h.launches;
      n[hod] += 1;
    }
  }
  double total = 0, hours = 0;
  for (size_t k = 0; k < 24; ++k)
    if (n[k] > 0) total += sum[k] / n[k], hours += 1;
  double fill = hours > 0 ? total / hours : 1;
  std::vector<double> rate(24);
  for (size_t k = 0; k < 24; ++k) rate[k] = n[k] > 0 ? sum[k] / n[k] : fill;
  return rate;
}

// A numeric key's value inside the key table's range (model/keys.hpp), so
// that `run` takes what analyze writes; the note says when the log's value
// was clamped. `step`: the value is rounded down to a multiple of it.
ReplayKey ranged(const std::string& path, double v, int digits, std::string note, double step = 0) {
  const KeySpec& k = key_or_throw(path);
  double top = step > 0 ? std::floor(k.max / step) * step : k.max;
  double kept = std::clamp(v, k.min, top);
  if (k.type == KeyType::integer) kept = std::round(kept);
  if (kept != v) {
    std::string was = "the log gives " + number(v, digits) + ", clamped to the key's range " +
                      number(k.min) + " to " + number(top);
    note = note.empty() ? was : note + "; " + was;
  }
  return {path, number(kept, digits), false, note};
}

// The session engine's ranges of its list keys (docs/limits.md): a ping a
// second at most, a day at most a hundred times the rates.

// A list key's text, each value clamped to [0, max]; the note says so.
ReplayKey ranged_list(const std::string& path, std::vector<double> v, double max,
                      std::string note) {
  double top = 0;
  for (double& x : v) top = std::max(top, x), x = std::clamp(x, 0.0, max);
  if (top > max)
    note += "; the log gives up to " + number(top, 2) + ", clamped to the key's range 0 to " +
            number(max);
  std::string s;
  for (double x : v) s += (s.empty() ? "" : ", ") + number(x, 2);
  return {path, s, true, note};
}

}  // namespace

std::string replay_timeline(const Report& r) {
  std::string text, last = "healthy";
  for (const auto& h : r.hours) {
    if (h.hour < 0) continue;
    // An hour with nothing in flight says nothing about the dependency.
    if (h.in_flight <= 0 && h.errors <= 0) continue;
    std::string state = hour_state(h);
    if (state == last) continue;
    text += (text.empty() ? "" : ", ") + hour_label(h.hour) + " " + state;
    last = state;
  }
  return text;
}

std::vector<ReplayKey> replay_keys(const Report& r, const ReplayFallback& fallback) {
  std::vector<ReplayKey> k;
  double horizon = known(r.last_s)
                       ? std::max(text::kHour, std::ceil(r.last_s / text::kHour) * text::kHour)
                       : text::kDay;
  k.push_back({"engine", "sessions", false, ""});
  k.push_back(ranged("horizon_s", horizon, 0, "to the end of the log's last hour", text::kHour));
  k.push_back({"step_s", "60", false, ""});
  k.push_back({"seed", "1", false, ""});
  k.push_back({"runs", "1", false, ""});

  const LoggedLadder& l = r.ladder;
  bool ladder = l.steps_s.size() >= 1 && l.steps_s.front() > 0;
  const auto& c = fallback.scenario.client;
  std::string fallback_note = "not in the log: " + fallback.name;
  std::string from = ladder ? "ladder from " + l.source : fallback_note;
  double base = ladder ? l.steps_s.front() : c.backoff.base_s;
  double mult =
      ladder && l.steps_s.size() >= 2 ? l.steps_s[1] / l.steps_s[0] : c.backoff.multiplier;
  k.push_back(ranged("client.retries", ladder ? double(l.steps_s.size()) : c.retries, 0, from));
  k.push_back(ranged("client.backoff.base_s", base, 3, from));
  k.push_back(ranged("client.backoff.multiplier", mult, 3, from));
  k.push_back({"client.backoff.cap_s", "0", false, ""});
  k.push_back({"client.backoff.jitter", "none", false, ""});
  const Durations& d = r.durations;
  k.push_back(ranged("client.deadline_s", known(d.deadline_s) ? d.deadline_s : c.deadline_s, 3,
                     known(d.deadline_s) ? "deadline from " + d.deadline_source : fallback_note));

  // Sessions that fail fast ran deadline-aware backoff (fix one).
  double fast = 0;
  for (const auto& [name, n] : r.outcomes) fast += name == "failed_fast" ? n : 0;
  k.push_back({"sessions.deadline_aware", fast > 0 ? "true" : "false", false,
               fast > 0 ? "sessions failed fast in the log" : "no session failed fast in the log"});

  std::string timeline = replay_timeline(r);
  if (!timeline.empty())
    k.push_back({"api.timeline", timeline, true,
                 "hours with errors: dead, or 429 with the error share of calls"});

  std::string source;
  std::vector<double> factors = day_factors(r);
  std::vector<double> rates = hourly_rates(r, factors, source);
  k.push_back(ranged_list("items.ping_rates_per_h", rates, kMaxPingsPerHour, source));
  if (!factors.empty())
    k.push_back(ranged_list("items.ping_day_factors", factors, kMaxDayFactor,
                            "arrivals a day against day 0"));
  return k;
}

}  // namespace retrystorm::incident
