// `analyze --prometheus --emit-scenario`: a per-step scenario fitted from the
// observed series (docs/prometheus.md, "Replay").
#include <algorithm>
#include <cmath>

#include "analysis/incident/observed.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm::incident {

namespace {

std::string number(double v, int decimals = 2) {
  return text::decimal_text(v, decimals);
}

// Retries over first attempts in the steps where the budget refused some:
// the budget's ratio, to the nearest 0.05.
double budget_ratio(const Series& x) {
  double first = 0, retries = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (x.budget_denied[i] > 0) {
      first += x.first_attempts[i];
      retries += x.retries[i];
    }
  double r = first > 0 ? retries / first : 0.1;
  return std::isfinite(r) ? std::clamp(std::round(r * 20) / 20, 0.05, 1.0) : 1.0;
}

}  // namespace

std::vector<ReplayKey> observed_replay_keys(const ObservedReport& r, const ObservedOptions& o) {
  const Series& x = r.run.series;
  const Scenario& sc = r.run.scenario;
  std::vector<ReplayKey> keys;
  auto add = [&](std::string path, std::string value, std::string note, bool text = false) {
    keys.push_back({std::move(path), std::move(value), text, std::move(note)});
  };
  // Each value within its key's range (model/keys.cpp); a clamped value
  // keeps the observed one in its note.
  auto fit = [&](const std::string& path, double v, double lo, double hi, std::string note,
                 int decimals = 2) {
    double c = std::clamp(std::isfinite(v) ? v : hi, lo, hi);
    if (c != v) note += " (clamped from " + number(v) + ")";
    add(path, number(c, decimals), std::move(note));
    return c;
  };
  double timeout = o.timeout_s.value_or(1);
  add("engine", "fluid", "deterministic, one step per 1/20 of the timeout", true);
  double horizon = fit("horizon_s", sc.horizon_s, 1, 1e7, "the queried range");
  // At most a million steps: `run` prices longer runs out.
  fit("step_s", std::max(std::min(0.1, timeout / 20), horizon / 1e6), 0.001, text::kHour,
      "a twentieth of the timeout", 3);
  fit("demand.rate_per_s", r.demand_per_s, 0.01, 1e9, "user requests a second before the trigger");
  double capacity = fit("server.capacity_per_s", r.capacity_per_s, 0.01, 1e9, r.capacity_source);
  double during = 0;
  size_t from = static_cast<size_t>(r.trigger_start_s / sc.step_s);
  size_t to = std::min(x.size(), static_cast<size_t>(std::ceil(r.trigger_end_s / sc.step_s)));
  for (size_t i = from; i < to; ++i) during += x.goodput[i];
  double secs = std::max(sc.step_s, r.trigger_end_s - r.trigger_start_s);
  fit("incident.start_s", r.trigger_start_s, 0, 1e7, r.trigger_source);
  fit("incident.duration_s", secs, 0, 1e7, "trigger end minus start");
  fit("incident.capacity_factor", during / secs / capacity, 0, 1,
      "successes a second during the trigger against the capacity");
  add("client.timeout_s", number(timeout, 3),
      o.timeout_s ? "--timeout" : "not in the metrics: 1 s (give --timeout)");
  double peak = unconstrained_peak(x);
  add("client.retries", std::to_string(fitted_retries(peak)),
      "the peak attempts per request (" + number(peak) + ", refused retries included), less one");
  bool budget = known(r.overflow) && r.overflow > 0;
  add("client.budget.kind", budget ? "window" : "none",
      budget ? "the metrics show refused retries" : "no refused retries in the metrics", true);
  if (budget)
    add("client.budget.ratio", number(budget_ratio(x)),
        "retries over first attempts while retries were refused");
  add("recovery.criterion", "failures", "the last user failure, as `analyze` measures it", true);
  return keys;
}

}  // namespace retrystorm::incident
