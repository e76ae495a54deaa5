#include "analysis/step_down.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/cost.hpp"
#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// The loads up from `from` to `to` by `step`, then back down, rounded to
// 9 decimals so that 0.1 steps land on 0.7, not 0.7000000000000001.
std::vector<double> staircase(const StepDownOptions& o) {
  std::vector<double> up;
  const int n = static_cast<int>(std::floor((o.to - o.from) / o.step + 1e-9));
  for (int i = 0; i <= n; ++i) up.push_back(std::round((o.from + i * o.step) * 1e9) / 1e9);
  std::vector<double> loads = up;
  for (int i = n - 1; i >= 0; --i) loads.push_back(up[static_cast<size_t>(i)]);
  return loads;
}

double hold_of(const Scenario& s, const StepDownOptions& o) {
  // 40 of the timeouts the stuck rule counts in (client.layer_timeouts_s too).
  double hold = o.hold_s > 0 ? o.hold_s : std::max(60.0, 40 * stuck_timeout_s(s));
  // Whole steps, at least one (a hold of 1e-10 s came to no step at all).
  return std::max(1.0, std::ceil(hold / s.step_s - 1e-9)) * s.step_s;
}

// "T:F" points holding each load for hold_s: two points per hold, a step
// between holds.
std::string profile_text(const std::vector<double>& loads, double hold_s) {
  std::string text;
  for (size_t i = 0; i < loads.size(); ++i) {
    const std::string f = number_text(loads[i]);
    text += fmt::format("{}{}:{},{}:{}", i ? "," : "", number_text(i * hold_s), f,
                        number_text((i + 1) * hold_s), f);
  }
  return text;
}

// The load's step: finite and above 0 (an infinite one made a staircase of
// NaN loads, refused as a demand.profile nobody wrote), at most the span
// from `from` to `to` (a wider one held `from` alone and said it never
// tipped, even at `from`), and few enough loads.
void check_step(const StepDownOptions& o) {
  if (!(o.step > 0 && std::isfinite(o.step)))
    throw InputError(fmt::format(
        "step-down: --step {} must be above 0 and finite (a multiple of demand.rate_per_s)",
        number_text(o.step)));
  // The staircase's loads up: the floor of the span over the step, plus one.
  const double up = std::floor((o.to - o.from) / o.step + 1e-9) + 1;
  if (up < 2)
    throw InputError(fmt::format(
        "step-down: --step {} is wider than the span from {} to {}: the staircase would hold {}x "
        "alone and never climb; give a step of at most {}",
        number_text(o.step), number_text(o.from), number_text(o.to), number_text(o.from),
        number_text(std::round((o.to - o.from) * 1e9) / 1e9)));  // 9 decimals, as the loads
  // At most half the holds: up and back down is then fewer than kStepDownHolds.
  if (up > kStepDownHolds / 2)
    throw InputError(
        fmt::format("step-down: --step {} gives {} loads from {} to {}; at most {} (a larger step)",
                    number_text(o.step), number_text(up), number_text(o.from), number_text(o.to),
                    kStepDownHolds / 2));
}

void check(const StepDownOptions& o) {
  // Loads are rounded to 9 decimals (staircase): one below 1e-6 would come
  // out as 0, or a few digits.
  auto load = [](const char* what, double v) {
    if (!(v >= 1e-6 && v <= 100))
      throw InputError(
          fmt::format("step-down: {} {} must be from 0.000001 to 100 (a multiple "
                      "of demand.rate_per_s)",
                      what, number_text(v)));
  };
  load("from", o.from);
  load("to", o.to);
  if (!(o.to > o.from))
    throw InputError("step-down: to " + number_text(o.to) + " must be above from " +
                     number_text(o.from));
  check_step(o);
  if (!(o.hold_s >= 0 && o.hold_s <= 1e6))
    throw InputError("step-down: hold " + number_text(o.hold_s) + " must be 0 to 1000000 s");
  if (o.runs < 0 || o.runs > 10000)
    throw InputError("step-down: runs " + std::to_string(o.runs) + " must be 1 to 10000");
}

// The hold a time falls in (a step ending at a hold's end belongs to it).
size_t hold_at(double t_s, double hold_s, size_t holds) {
  const auto i = static_cast<size_t>(std::max(0.0, std::ceil(t_s / hold_s - 1e-9) - 1));
  return std::min(i, holds - 1);
}

// Going up, the first time it became stuck; coming down (from the top
// hold's end), the first time it was healthy again, when stuck there.
StepDownRun read_staircase(const RunResult& run, const StepDown& d, double seed) {
  const size_t holds = d.loads.size();
  const double top_end = d.hold_s * static_cast<double>(holds / 2 + 1);
  const Passage up = read_passage(run, d.rule);
  const Passage down = read_passage(run, d.rule, top_end);
  StepDownRun r;
  r.seed = seed;
  if (up.enter_s && *up.enter_s <= top_end) {
    r.tipped_s = up.enter_s;
    r.tipped_load = d.loads[hold_at(*up.enter_s, d.hold_s, holds)];
  }
  r.stuck_at_top = down.stuck_at_from;
  if (down.stuck_at_from && down.leave_s) {
    r.recovered_s = top_end + *down.leave_s;
    r.recovered_load = d.loads[hold_at(*r.recovered_s, d.hold_s, holds)];
  }
  return r;
}

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  // On the loads' own grid of 1e-9: the mean of 0.1 and 0.2 is 0.15, not
  // 0.15000000000000002.
  return v.size() % 2 ? v[m] : std::round((v[m - 1] + v[m]) / 2 * 1e9) / 1e9;
}

}  // namespace

int step_down_runs(const Scenario& s, const StepDownOptions& o) {
  if (s.engine != Engine::agent) return 1;
  if (o.runs > 0) return o.runs;
  return s.runs > 1 ? s.runs : 10;
}

Scenario step_down_scenario(const Scenario& s, const StepDownOptions& o) {
  require_scripted_incident(s, "the step-down");
  check(o);
  if (!s.graph.empty())
    throw InputError("step-down: one population of clients before one server (no services)");
  if (!s.demand.profile.empty())
    throw InputError("step-down: demand.profile is the staircase itself; leave it empty");
  // The staircase scales demand.rate_per_s, which closed-loop clients never
  // read: the loads reported would be loads nobody sent (risk refuses them too).
  if (s.demand.clients > 0)
    throw InputError(
        "step-down: demand.clients: open-loop arrivals only (demand.clients 0); the staircase "
        "scales demand.rate_per_s, which closed-loop clients do not send");
  if (s.engine == Engine::sessions)
    throw InputError("step-down: engine fluid or agent (the session model has no load to step)");
  Scenario r = s;
  const std::vector<double> loads = staircase(o);
  const double hold = hold_of(s, o);
  r.demand.profile = profile_text(loads, hold);
  r.demand.profile_period_s = 0;
  r.incident.duration_s = 0;
  r.horizon_s = hold * static_cast<double>(loads.size());
  r.runs = 1;
  // Named by what was asked: validate() would blame horizon_s, which nobody set.
  const double steps = std::round(r.horizon_s / r.step_s);
  if (steps > o.max_steps)
    throw InputError(fmt::format(
        "step-down: {} loads held {} s each (hold_s) make a run of {} s, {} steps; the limit is "
        "{} steps",
        loads.size(), number_text(hold), number_text(r.horizon_s), number_text(steps),
        o.max_steps));
  RunLimits limits;
  limits.max_steps = o.max_steps;
  validate(r, limits);
  return r;
}

StepDown run_step_down(const Scenario& s, const StepDownOptions& o) {
  StepDown out;
  out.scenario = step_down_scenario(s, o);
  out.rule = stuck_rule(out.scenario);
  out.loads = staircase(o);
  out.hold_s = hold_of(s, o);
  const int runs = step_down_runs(s, o);
  std::vector<RunResult> firsts(1);
  std::vector<StepDownRun> all(static_cast<size_t>(runs));
  // Side by side only as many as fit in one request's memory (risk.cpp, passages).
  const unsigned fit = runs_at_once(out.scenario);
  run_replications(out.scenario, 0, static_cast<size_t>(runs),
                   o.threads > 0 ? std::min(o.threads, fit) : fit,
                   [&](size_t i, const Scenario& one) {
                     throw_if_cancelled(o.cancelled);
                     RunResult run = run_engine(one);
                     all[i] = read_staircase(run, out, one.seed);
                     if (i == 0) firsts[0] = std::move(run);
                     return Replication{};
                   });
  out.first = std::move(firsts[0]);
  out.runs = std::move(all);
  std::vector<double> tipped, recovered;
  for (const StepDownRun& r : out.runs) {
    if (r.tipped_load) tipped.push_back(*r.tipped_load);
    if (r.recovered_load) recovered.push_back(*r.recovered_load);
  }
  out.tipping_load = median_of(tipped);
  out.recovery_load = median_of(recovered);
  return out;
}

}  // namespace retrystorm
