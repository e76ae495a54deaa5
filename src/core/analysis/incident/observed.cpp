#include "analysis/incident/observed.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace retrystorm::incident {

namespace {

// A second is "bad" when fewer than this share of its requests succeeded, or
// more than kFailedShare of them failed: the trigger starts at the first one.
constexpr double kGoodShare = 0.8;
constexpr double kFailedShare = 0.05;
// After the trigger: attempts per request at or above this, or goodput below
// kGoodputKept of demand in the last window, is load that did not come down.
constexpr double kStormAmplification = 1.5;
constexpr double kGoodputKept = 0.9;
constexpr double kLastWindowS = 60;

double sum(const std::vector<double>& v, size_t from, size_t to) {
  double t = 0;
  for (size_t i = from; i < std::min(to, v.size()); ++i) t += v[i];
  return t;
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

bool bad_step(const ObservedSeries& s, size_t i) {
  double r = s.requests[i];
  return r > 0 && (s.successes[i] < kGoodShare * r || s.failed[i] > kFailedShare * r);
}

void check_sizes(const ObservedSeries& s) {
  size_t n = s.size();
  if (n == 0) throw std::invalid_argument("no points");
  for (const auto* v : {&s.retries, &s.successes, &s.failed})
    if (v->size() != n) throw std::invalid_argument("series of unequal length");
  for (const auto* v : {&s.timeouts, &s.overflow, &s.in_flight, &s.slow, &s.measured})
    if (!v->empty() && v->size() != n) throw std::invalid_argument("series of unequal length");
}

// The trigger from the options, else from the first stretch of bad seconds.
void place_trigger(const ObservedSeries& s, const ObservedOptions& o, ObservedReport& r) {
  size_t n = s.size(), first = n;
  for (size_t i = 0; i < n && first == n; ++i)
    if (bad_step(s, i)) first = i;
  size_t end = first;
  while (end < n && bad_step(s, end)) ++end;
  r.trigger_start_s = o.trigger_start_s.value_or(first == n ? 0.0 : first * s.step_s);
  r.trigger_end_s = o.trigger_end_s.value_or(first == n ? 0.0 : end * s.step_s);
  r.trigger_end_s = std::max(r.trigger_end_s, r.trigger_start_s);
  if (o.trigger_start_s && o.trigger_end_s)
    r.trigger_source = "--trigger-start and --trigger-end";
  else
    r.trigger_source = first == n ? "no second went bad: no trigger"
                                  : "inferred: the first stretch of seconds where fewer than 80% "
                                    "of requests succeeded (give --trigger-end to measure "
                                    "recovery from the real end)";
}

void place_rates(const ObservedSeries& s, const ObservedOptions& o, ObservedReport& r) {
  size_t n = s.size();
  size_t before = std::min(n, static_cast<size_t>(r.trigger_start_s / s.step_s));
  r.demand_per_s = before > 0 ? sum(s.requests, 0, before) / (before * s.step_s)
                              : sum(s.requests, 0, n) / (n * s.step_s);
  double peak = 0;
  for (double v : s.successes) peak = std::max(peak, v / s.step_s);
  if (o.capacity_per_s) {
    r.capacity_per_s = *o.capacity_per_s;
    r.capacity_source = "--capacity";
  } else {
    r.capacity_per_s = std::max(peak, r.demand_per_s);
    r.capacity_source = "the most successes in one step (a lower bound)";
  }
}

}  // namespace

double unconstrained_peak(const Series& x) {
  double peak = 1, most = 0;
  for (double v : x.first_attempts) most = std::max(most, v);
  for (size_t i = 0; i < x.size(); ++i)
    if (x.first_attempts[i] >= 0.2 * most && x.first_attempts[i] > 0)
      peak = std::max(
          peak, (x.first_attempts[i] + x.retries[i] + x.budget_denied[i]) / x.first_attempts[i]);
  return peak;
}

int fitted_retries(double peak) {
  return static_cast<int>(std::isfinite(peak)
                              ? std::clamp(std::round(peak) - 1, 0.0, kMaxFittedRetries)
                              : kMaxFittedRetries);
}

namespace {

// The observed amounts as a run of the per-step engines, for metrics.cpp.
RunResult as_run(const ObservedSeries& s, const ObservedOptions& o, const ObservedReport& r) {
  RunResult run;
  Scenario& sc = run.scenario;
  size_t n = s.size();
  sc.horizon_s = n * s.step_s;
  sc.step_s = s.step_s;
  sc.demand.rate_per_s = std::max(r.demand_per_s, 1e-9);
  sc.server.capacity_per_s = std::max(r.capacity_per_s, 1e-9);
  sc.incident.start_s = r.trigger_start_s;
  sc.incident.duration_s = r.trigger_end_s - r.trigger_start_s;
  sc.client.timeout_s = o.timeout_s.value_or(s.step_s);
  sc.recovery.criterion = RecoveryCriterion::failures;
  run.series.resize(n);
  for (size_t i = 0; i < n; ++i) {
    run.series.t_s[i] = i * s.step_s;
    run.series.capacity[i] = r.capacity_per_s * s.step_s;
    run.series.first_attempts[i] = s.requests[i];
    run.series.retries[i] = s.retries[i];
    run.series.goodput[i] = s.successes[i];
    run.series.failed[i] = s.failed[i];
    run.series.gave_up[i] = s.timeouts.empty() ? 0 : s.timeouts[i];
    run.series.budget_denied[i] = s.overflow.empty() ? 0 : s.overflow[i];
    run.series.backlog[i] = s.in_flight.empty() ? 0 : s.in_flight[i];
  }
  // The clients' retries are not in the metrics: the verdict's model bound
  // reads those the series show, as the replay does, not the default 3.
  const double peak = unconstrained_peak(run.series);
  sc.client.retries = fitted_retries(peak);
  run.user_requests = sum(s.requests, 0, n);
  run.succeeded = sum(s.successes, 0, n);
  run.failed = sum(s.failed, 0, n);
  return run;
}

std::vector<ObservedWindow> windows(const ObservedSeries& s, double window_s) {
  std::vector<ObservedWindow> out;
  size_t n = s.size(), k = std::max<size_t>(1, std::lround(window_s / s.step_s));
  for (size_t from = 0; from < n; from += k) {
    size_t to = std::min(n, from + k);
    double secs = (to - from) * s.step_s, req = sum(s.requests, from, to);
    double retries = sum(s.retries, from, to);
    ObservedWindow w;
    w.t_s = from * s.step_s;
    w.requests_per_s = req / secs;
    w.attempts_per_s = (req + retries) / secs;
    w.goodput_per_s = sum(s.successes, from, to) / secs;
    w.amplification = ratio(req + retries, req);
    w.retry_share = ratio(retries, req + retries);
    w.failed_share = ratio(sum(s.failed, from, to), req);
    if (!s.measured.empty()) w.slow_share = ratio(sum(s.slow, from, to), sum(s.measured, from, to));
    if (!s.overflow.empty()) w.overflow_per_s = sum(s.overflow, from, to) / secs;
    out.push_back(w);
  }
  return out;
}

void add_finding(ObservedReport& r, std::string id, std::string title, double score,
                 std::vector<std::string> evidence, std::string fix) {
  r.findings.push_back(
      {std::move(id), std::move(title), score, std::move(evidence), std::move(fix)});
}

std::string pct(double share) {
  return format_percent(share);
}

void diagnose(ObservedReport& r, bool had_trigger) {
  std::string amp = format_amount(r.amplification_after);
  if (!had_trigger) {
    add_finding(r, "healthy", "No second went bad", 1, {"every second kept 80% of requests"},
                "none");
  } else if (r.ongoing) {
    add_finding(r, "still_in_trigger", "The trigger had not ended when the range did", 1,
                {"the bad seconds run to the end of the range",
                 "last minute: goodput " + format_amount(r.goodput_after) + "/s against " +
                     format_amount(r.demand_per_s) + "/s of demand, throughput " +
                     format_amount(r.throughput_after) + " attempts/s"},
                "widen --to past the incident's end (or give --trigger-end): whether the load "
                "stays up after a trigger can only be read once the trigger is over");
  } else if (r.metastable) {
    add_finding(r, "metastable_retry_storm", "The load stayed up after the trigger ended", 1,
                {"after the trigger: " + amp + " attempts per request",
                 "last minute: goodput " + format_amount(r.goodput_after) + "/s against " +
                     format_amount(r.demand_per_s) + "/s of demand, throughput " +
                     format_amount(r.throughput_after) + " attempts/s",
                 r.verdict.headline},
                "cap retries with a budget, shed work whose caller has gone, or fewer attempts");
  } else if (!r.recovery_s) {
    // The load came down, yet the verdict has no recovery (a failure in the
    // last step, or a growing in-flight gauge): the report must not say both.
    const Series& x = r.run.series;
    const double failed = x.failed.back(), requests = x.first_attempts.back();
    const bool failing = failed > 0;
    add_finding(r, "still_failing_at_end",
                failing ? "The load came back down, but users were still failing when the "
                          "range ended"
                        : "The load came back down, but the in-flight gauge was still growing "
                          "when the range ended",
                0.8,
                {r.verdict.headline,
                 failing ? "last step (from " + format_seconds(x.t_s.back()) +
                               "): " + format_amount(failed) + " of " + format_amount(requests) +
                               " requests failed (" + pct(ratio(failed, requests)) + ")"
                         : "no failure in the last step",
                 "last minute: goodput " + format_amount(r.goodput_after) + "/s against " +
                     format_amount(r.demand_per_s) + "/s of demand, " + amp +
                     " attempts per request after the trigger"},
                "widen --to: failures that go on at this share with the load down are a "
                "background rate, not the incident; recovery needs a last step without one "
                "and an in-flight gauge that is not growing");
  } else {
    add_finding(r, "recovered", "The load came back down after the trigger", 0.8,
                {r.verdict.headline, "after the trigger: " + amp + " attempts per request"},
                "none needed for recovery; see the amplification during the trigger");
  }
  if (known(r.overflow) && r.overflow > 0)
    add_finding(r, "budget_overflow", "A budget or circuit breaker refused retries", 0.6,
                {format_amount(r.overflow) + " retries refused"},
                "keep it: it bounds the amplification; size it from the table over time");
  if (known(r.slow_share) && r.slow_share >= 0.5)
    add_finding(r, "latency_at_timeout", "Most attempts took the whole timeout", 0.5,
                {pct(r.slow_share) + " of measured attempts at or above the timeout"},
                "every late answer already produced a retry: shed abandoned work");
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Diagnosis& a, const Diagnosis& b) { return a.score > b.score; });
}

void add_unknowns(const ObservedSeries& s, const ObservedOptions& o, ObservedReport& r) {
  for (const std::string& q : s.no_series)
    r.unknowns.push_back({q,
                          "no series matched: read as none (none happened yet, or the "
                          "metric name or selector is wrong)"});
  if (s.overflow.empty())
    r.unknowns.push_back({"budget overflow", "the metrics have no refused-retry counter"});
  if (s.in_flight.empty())
    r.unknowns.push_back({"in flight", "the metrics have no in-flight gauge"});
  if (s.measured.empty() || !o.timeout_s)
    r.unknowns.push_back(
        {"latency against the timeout",
         s.measured.empty() ? "the metrics have no latency histogram" : "give --timeout"});
}

}  // namespace

ObservedReport analyze_observed(const ObservedSeries& s, const ObservedOptions& o) {
  check_sizes(s);
  ObservedReport r;
  place_trigger(s, o, r);
  place_rates(s, o, r);
  r.run = as_run(s, o, r);
  r.metrics = compute_metrics(r.run);
  r.verdict = verdict(r.run, r.metrics);
  // The run's horizon is the range's end: what moves it is --to, not horizon_s.
  if (!recovery_time(r.metrics, r.run.scenario) &&
      r.run.scenario.incident_end_s() >= r.run.scenario.horizon_s)
    r.verdict.headline = "Still in the trigger when the range ends, " +
                         format_seconds(r.run.scenario.horizon_s) +
                         " in: query a range that runs past its end to see what follows";
  size_t n = s.size();
  size_t after = std::min(n, static_cast<size_t>(std::ceil(r.trigger_end_s / s.step_s - 1e-9)));
  double req = sum(s.requests, 0, n), retries = sum(s.retries, 0, n);
  r.amplification = ratio(req + retries, req);
  r.retry_share = ratio(retries, req + retries);
  r.failed_share = r.metrics.failed_fraction;
  r.recovery_s = recovery_time(r.metrics, r.run.scenario);
  if (!s.overflow.empty()) r.overflow = sum(s.overflow, 0, n);
  if (!s.measured.empty() && o.timeout_s)
    r.slow_share = ratio(sum(s.slow, 0, n), sum(s.measured, 0, n));
  // The last minute: after the trigger, or the range's own last minute when
  // the trigger runs to its end (nothing came after it to judge).
  const bool to_end = after >= n;
  // At least one step: with steps over two minutes the rounding gives none,
  // and an empty window read as goodput 0 (a storm that was not there).
  const long minute_steps = std::max(1L, std::lround(kLastWindowS / s.step_s));
  size_t last = n - std::min(n, static_cast<size_t>(minute_steps));
  if (!to_end) last = std::max(last, after);
  const size_t from = to_end ? last : after;  // amplification: after the trigger, else last minute
  r.amplification_after =
      ratio(sum(s.requests, from, n) + sum(s.retries, from, n), sum(s.requests, from, n));
  double secs = std::max(1.0, (n - last) * s.step_s);
  r.goodput_after = sum(s.successes, last, n) / secs;
  r.throughput_after = (sum(s.requests, last, n) + sum(s.retries, last, n)) / secs;
  bool had_trigger = r.trigger_end_s > 0 || bad_step(s, 0);
  // Bad seconds to the end of the range: a trigger still under way, or a
  // storm that sustains itself (whose inferred trigger never ends). Retries
  // tell them apart, not goodput; a --trigger-end past the range is the
  // trigger's own word.
  const bool storm_signature = r.amplification_after >= kStormAmplification;
  r.ongoing = to_end && (o.trigger_end_s.has_value() || !storm_signature);
  r.metastable = had_trigger && !r.ongoing && !r.recovery_s &&
                 (storm_signature || (!to_end && r.goodput_after < kGoodputKept * r.demand_per_s));
  r.windows = windows(s, o.window_s);
  diagnose(r, had_trigger);
  add_unknowns(s, o, r);
  return r;
}

}  // namespace retrystorm::incident
