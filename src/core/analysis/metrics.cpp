#include "analysis/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engines/engine.hpp"
#include "engines/incident_window.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {

// Amounts below this are floating-point dust from splitting, not requests.
constexpr double kDust = 1e-9;
constexpr double kLastWindowS = 60;

// Step instants minus a decimal incident end leave binary dust (3.2 + 5.4 at
// 0.1 s steps): round to a nanosecond and never report below zero.
double tidy_seconds(double s) {
  return std::max(0.0, std::round(s * 1e9) / 1e9);
}

size_t first_step_at_or_after(const Scenario& s, double t_s) {
  return static_cast<size_t>(std::max(0.0, std::ceil(t_s / s.step_s - 1e-9)));
}

double sum(std::span<const double> v, size_t from, size_t to) {
  double total = 0;
  for (size_t i = from; i < to && i < v.size(); ++i) total += v[i];
  return total;
}

// User requests a second before the incident: the demand's rate, or what
// closed-loop clients sent before it began (they send less when answers
// are slow, so the rate is theirs, not a key's).
double demand_per_s(const RunResult& run) {
  const Scenario& s = run.scenario;
  if (s.demand.clients <= 0) return s.demand.rate_per_s;
  size_t before = std::min(first_step_at_or_after(s, s.incident.start_s), run.series.size());
  if (before == 0) before = run.series.size();
  return before > 0 ? sum(run.series.first_attempts, 0, before) / (before * s.step_s) : 0;
}

// The step whose span holds instant t_s (the step starting there, on a boundary).
size_t step_holding(const Scenario& s, double t_s) {
  return static_cast<size_t>(std::max(0.0, std::floor(t_s / s.step_s + 1e-9)));
}

// Smallest s >= incident end from which goodput per second stays at or above
// the fraction of demand in every step to the end. Counted from the end
// instant itself: when the step holding it already meets the fraction, 0
// (from the next step's start, an incident ending inside a step read as a
// recovery of the rest of that step, even with goodput that never fell).
std::optional<double> goodput_recovery(const RunResult& run) {
  const Scenario& s = run.scenario;
  const auto& goodput = run.series.goodput;
  size_t n = goodput.size();
  size_t earliest = step_holding(s, s.incident_end_s());
  if (earliest >= n) return std::nullopt;
  const double needed = s.recovery.goodput_fraction * demand_per_s(run) * s.step_s;
  // With a demand profile, the fraction of the demand of each step.
  const StepProfiles profiles(s);
  auto needed_at = [&](size_t i) {
    if (profiles.demand.empty()) return needed;
    return needed * profiles.demand_at(step_span(s, static_cast<int>(i), static_cast<int>(n)));
  };
  size_t from = n;
  while (from > earliest && goodput[from - 1] >= needed_at(from - 1) - kDust) --from;
  if (from == n) return std::nullopt;
  return tidy_seconds(from * s.step_s - s.incident_end_s());
}

bool backlog_growing(const RunResult& run) {
  const auto& backlog = run.series.backlog;
  size_t k = static_cast<size_t>(run.scenario.timeout_steps());
  if (backlog.size() <= k) return false;
  double now = backlog.back(), before = backlog[backlog.size() - 1 - k];
  // The agent engine counts whole requests arriving at random: a drained
  // queue can hold one more than a timeout ago. Growth there must exceed one
  // step of capacity; the fluid model keeps the strict comparison.
  double margin = engine_facts(run.scenario).random
                      ? run.scenario.server.capacity_per_s * run.scenario.step_s
                      : kDust * std::max(1.0, before);
  return now > before + margin;
}

std::optional<double> failure_recovery(const RunResult& run, bool growing) {
  const Scenario& s = run.scenario;
  const auto& failed = run.series.failed;
  long last = -1;
  for (long i = static_cast<long>(failed.size()) - 1; i >= 0; --i)
    if (failed[i] > kDust) {
      last = i;
      break;
    }
  // A growing backlog is not recovered, even before its first failure.
  if (growing) return std::nullopt;
  if (last < 0) return 0.0;
  if (last == static_cast<long>(failed.size()) - 1) return std::nullopt;
  return tidy_seconds((last + 1) * s.step_s - s.incident_end_s());
}

}  // namespace

namespace {

// (first attempts + retries sent) / first attempts over steps [from, to).
double attempts_per_request_over(const Series& x, size_t from, size_t to) {
  double first = sum(x.first_attempts, from, to);
  double sent = first + sum(x.retries, from, to) - sum(x.refused_locally, from, to);
  return first > 0 ? sent / first : 0;
}

// The last window: the last whole steps nearest kLastWindowS (at least one;
// the whole run if shorter). Its length is theirs, so that every figure over
// it is per second of the steps summed: 60 s of 7 s steps is 9 steps, 63 s.
struct StepWindow {
  size_t from;
  double seconds;
};
StepWindow last_window_steps(const Scenario& s, size_t n) {
  double steps = std::max(1.0, std::round(std::min(kLastWindowS, s.horizon_s) / s.step_s));
  size_t from = n - std::min(n, static_cast<size_t>(steps));
  // The last step ends at the horizon (step_span), whatever its length.
  double start = from < n ? step_span(s, static_cast<int>(from), static_cast<int>(n)).start : 0;
  return {from, tidy_seconds(s.horizon_s - start)};
}

}  // namespace

double attempts_per_request(const RunResult& run, double from_s, double to_s) {
  return attempts_per_request_over(run.series, first_step_at_or_after(run.scenario, from_s),
                                   first_step_at_or_after(run.scenario, to_s));
}

std::optional<double> recovery_time(const Metrics& m, const Scenario& s) {
  return s.recovery.criterion == RecoveryCriterion::goodput ? m.goodput_recovery_s
                                                            : m.failure_recovery_s;
}

namespace {

// The bound at the incident's service (docs/graph.md): each user request
// sends it `calls` first attempts and up to `worst` attempts in all.
Bound graph_bound(const Scenario& s) {
  auto hit = static_cast<size_t>(incident_service(s));
  double worst = worst_case_attempts(s)[hit], calls = calls_per_request(s)[hit];
  double capacity = dependency_view(s).server.capacity_per_s;
  return {worst / calls, calls / worst, s.demand.rate_per_s * calls / capacity};
}

}  // namespace

namespace {

// The incident service's series of a graph's run; nullptr without a graph.
const ServiceSeries* incident_series(const RunResult& run) {
  if (run.graph.empty()) return nullptr;
  return &run.graph.services[static_cast<size_t>(incident_service(run.scenario))];
}

}  // namespace

void require_scripted_incident(const Scenario& s, std::string_view what) {
  if (s.incident.random_per_h > 0)
    throw InputError(fmt::format(
        "incident.random_per_h: {}: {} measures recovery from one incident's end; incidents at "
        "random are read by `retrystorm risk` (set incident.random_per_h 0 here)",
        number_text(s.incident.random_per_h), what));
}

Metrics compute_metrics(const RunResult& run) {
  const Scenario& s = run.scenario;
  require_scripted_incident(s, "a run's report");
  const Series& x = run.series;
  size_t n = x.size();
  Metrics m;
  m.user_requests = run.user_requests;
  m.latency_p50_s = run.success_latency.quantile(0.50);
  m.latency_p90_s = run.success_latency.quantile(0.90);
  m.latency_p99_s = run.success_latency.quantile(0.99);
  m.failed = run.failed;
  m.failed_fraction = run.user_requests > 0 ? run.failed / run.user_requests : 0;
  m.succeeded = run.succeeded;
  m.in_flight = run.in_flight;
  m.served_on_time = sum(x.goodput, 0, n);
  m.served_late = sum(x.served_late, 0, n);
  m.served = m.served_on_time + m.served_late;
  m.shed = sum(x.shed, 0, n);
  m.rejected = sum(x.rejected, 0, n);
  m.budget_denied = sum(x.budget_denied, 0, n);
  m.retries = sum(x.retries, 0, n);
  m.wasted_fraction = m.served > 0 ? m.served_late / m.served : 0;

  // A graph's amplification is the incident service's attempts per user
  // request's share of them when none fails (docs/graph.md, "Results").
  const ServiceSeries* hit = incident_series(run);
  double share = hit ? calls_per_request(s)[static_cast<size_t>(incident_service(s))] : 1;
  for (size_t i = 0; i < n; ++i) {
    if (x.first_attempts[i] <= 0) continue;
    double attempts = hit ? hit->first_attempts[i] + hit->retries[i] : attempts_sent(x, i);
    double amplification = attempts / (x.first_attempts[i] * share);
    if (amplification > m.peak_amplification + 1e-12) {
      m.peak_amplification = amplification;
      m.peak_t_s = x.t_s[i];
    }
  }

  m.goodput_recovery_s = goodput_recovery(run);
  m.backlog_growing = backlog_growing(run);
  m.failure_recovery_s = failure_recovery(run, m.backlog_growing);
  m.recovered = recovery_time(m, s).has_value();

  const auto [from, window_s] = last_window_steps(s, n);
  double capacity = sum(x.capacity, from, n);
  m.last_window.seconds = window_s;
  m.last_window.goodput_per_s = window_s > 0 ? sum(x.goodput, from, n) / window_s : 0;
  m.last_window.utilization =
      capacity > 0 ? (sum(x.goodput, from, n) + sum(x.served_late, from, n)) / capacity : 0;
  m.last_window.attempts_per_request = attempts_per_request_over(x, from, n);
  if (hit) {  // at the incident's service, per user request's share; its completions
    double users = sum(x.first_attempts, from, n) * share;
    m.last_window.attempts_per_request =
        users > 0 ? (sum(hit->first_attempts, from, n) + sum(hit->retries, from, n)) / users : 0;
    m.served = sum(hit->served, 0, n) + sum(hit->late, 0, n);
    m.served_on_time = m.served - m.served_late;
    m.wasted_fraction = m.served > 0 ? m.served_late / m.served : 0;
    m.last_window.utilization =
        capacity > 0 ? (sum(hit->served, from, n) + sum(hit->late, from, n)) / capacity : 0;
  }

  m.bound = s.graph.empty() ? Bound{static_cast<double>(s.attempts()), 1.0 / s.attempts(),
                                    demand_per_s(run) / s.server.capacity_per_s}
                            : graph_bound(s);
  return m;
}

namespace {

using F = FigureKind;

template <auto member>
std::optional<double> figure(const Metrics& m) {
  return m.*member;
}
template <auto group, auto member>
std::optional<double> nested(const Metrics& m) {
  return m.*group.*member;
}

// Table: one row per figure of Metrics, in the Monte Carlo order.
const MetricField kMetricFields[] = {
    {"", "user_requests", "user_requests", F::number, &figure<&Metrics::user_requests>},
    {"", "failed", "failed", F::number, &figure<&Metrics::failed>},
    {"", "failed_fraction", "failed_fraction", F::number, &figure<&Metrics::failed_fraction>},
    {"", "succeeded", "succeeded", F::number, &figure<&Metrics::succeeded>},
    {"", "in_flight", "in_flight", F::number, &figure<&Metrics::in_flight>},
    {"", "served", "served", F::number, &figure<&Metrics::served>},
    {"", "served_on_time", "", F::number, &figure<&Metrics::served_on_time>},
    {"", "served_late", "served_late", F::number, &figure<&Metrics::served_late>},
    {"", "shed", "shed", F::number, &figure<&Metrics::shed>},
    {"", "rejected", "rejected", F::number, &figure<&Metrics::rejected>},
    {"", "budget_denied", "budget_denied", F::number, &figure<&Metrics::budget_denied>},
    {"", "wasted_fraction", "wasted_fraction", F::number, &figure<&Metrics::wasted_fraction>},
    {"", "peak_amplification", "peak_amplification", F::number,
     &figure<&Metrics::peak_amplification>},
    {"", "peak_step_t_s", "", F::number, &figure<&Metrics::peak_t_s>},
    {"", "recovered", "recovered", F::flag, &figure<&Metrics::recovered>},
    {"", "goodput_recovery_s", "goodput_recovery_s", F::optional,
     &figure<&Metrics::goodput_recovery_s>},
    {"", "failure_recovery_s", "failure_recovery_s", F::optional,
     &figure<&Metrics::failure_recovery_s>},
    {"", "backlog_growing", "", F::flag, &figure<&Metrics::backlog_growing>},
    {"last_window", "goodput_per_s", "last_window_goodput_per_s", F::number,
     &nested<&Metrics::last_window, &LastWindow::goodput_per_s>},
    {"latency_s", "p50", "latency_p50_s", F::optional, &figure<&Metrics::latency_p50_s>},
    {"latency_s", "p90", "latency_p90_s", F::optional, &figure<&Metrics::latency_p90_s>},
    {"latency_s", "p99", "latency_p99_s", F::optional, &figure<&Metrics::latency_p99_s>},
    {"last_window", "attempts_per_request", "last_window_attempts_per_request", F::number,
     &nested<&Metrics::last_window, &LastWindow::attempts_per_request>},
    {"last_window", "seconds", "", F::number, &nested<&Metrics::last_window, &LastWindow::seconds>},
    {"last_window", "utilization", "", F::number,
     &nested<&Metrics::last_window, &LastWindow::utilization>},
    {"bound", "max_amplification", "", F::number,
     &nested<&Metrics::bound, &Bound::max_amplification>},
    {"bound", "safe_load_below", "", F::number, &nested<&Metrics::bound, &Bound::safe_load_below>},
    {"bound", "load", "", F::number, &nested<&Metrics::bound, &Bound::load>},
};

}  // namespace

std::span<const MetricField> metric_fields() {
  return kMetricFields;
}

const MetricField& metric_field(std::string_view name) {
  for (const MetricField& f : kMetricFields)
    if (f.group.empty() && f.name == name) return f;
  throw std::logic_error("no metric named " + std::string(name));
}

}  // namespace retrystorm
