#include "analysis/session_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "engines/sessions/session_engine.hpp"

namespace retrystorm {

using sessions::Outcome;
using sessions::SessionRow;
using sessions::SessionRun;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nearest-rank percentile (q in (0, 1]); NaN when empty.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = x.size();
  if (n < 2) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : kNaN;
}

// The focus window, or the simulated part of the run.
std::pair<double, double> window(const SessionRun& run) {
  const auto& x = run.scenario.sessions;
  if (x.focus_from_s == 0 && x.focus_to_s == 0) return {x.start_s, run.scenario.horizon_s};
  return {x.focus_from_s, x.focus_to_s};
}

bool inside(double t, std::pair<double, double> w) {
  return t >= w.first && t < w.second;
}

int lines_429(const SessionRow& r) {
  return r.n_429 + (r.terminal_error == 429 ? 1 : 0);
}

// The part of [t, t + width) inside [lo, hi). A bucket wholly inside counts
// its whole width, so that a window on the buckets' grid sums what it did
// before (no rounding of t + width - t).
double overlap_s(double t, double width, double lo, double hi) {
  if (t >= lo && t + width <= hi) return width;
  return std::max(0.0, std::min(t + width, hi) - std::max(t, lo));
}

// Time averages of sessions working, blocked and asleep over the window,
// weighted by each bucket's overlap with the window within the simulated
// run: the grid starts at sessions.start_s, not on a multiple of step_s, and
// its last bucket may run past the horizon, so a bucket that starts in the
// window is not all in it. The engine's occupancy of a bucket is the time
// spent in the state inside it over the whole bucket_s
// (SessionBuckets::occupy), and no time is spent past the horizon: value x
// bucket_s is the state's time in the bucket's simulated part, and the
// window's share of it is taken pro rata (exact for a bucket wholly inside).
void add_window_averages(SessionMetrics& m, const SessionRun& run, std::pair<double, double> w) {
  const auto& b = run.series;
  const double run_from = run.scenario.sessions.start_s, run_to = run.scenario.horizon_s;
  const double from = std::max(w.first, run_from), to = std::min(w.second, run_to);
  for (size_t i = 0; i < b.size(); ++i) {
    const double simulated = overlap_s(b.t_s[i], b.bucket_s, run_from, run_to);
    const double inside = overlap_s(b.t_s[i], b.bucket_s, from, to);
    if (inside <= 0 || simulated <= 0) continue;
    const double weight = b.bucket_s * (inside / simulated);
    m.mean_working += b.occupancy[0][i] * weight;
    m.mean_blocked += b.occupancy[1][i] * weight;
    m.mean_asleep += b.occupancy[2][i] * weight;
    m.span_s += inside;
  }
  if (m.span_s > 0) {
    m.mean_working /= m.span_s;
    m.mean_blocked /= m.span_s;
    m.mean_asleep /= m.span_s;
  }
  m.mean_in_flight = m.mean_working + m.mean_blocked + m.mean_asleep;
  m.asleep_share = m.mean_in_flight > 0 ? m.mean_asleep / m.mean_in_flight : 0;
}

// Counts and peaks of the buckets that start in the window.
void add_window_counts(SessionMetrics& m, const SessionRun& run, std::pair<double, double> w) {
  const auto& b = run.series;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!inside(b.t_s[i], w)) continue;
    m.peak_in_flight = std::max(m.peak_in_flight, static_cast<int>(b.peak_in_flight[i]));
    m.errors_429 += static_cast<int>(b.errors_429[i]);
    m.errors_401 += static_cast<int>(b.errors_401[i]);
    m.items_arrived += static_cast<int>(b.arrivals[i]);
    m.items_done += static_cast<int>(b.items_done[i]);
  }
}

}  // namespace

SessionMetrics session_metrics(const SessionRun& run) {
  SessionMetrics m;
  auto w = window(run);
  m.from_s = w.first;
  m.to_s = w.second;
  for (Outcome o : session_log::kModelOutcomes) m.outcomes[sessions::outcome_name(o)] = 0;
  std::vector<double> successes;
  double failed_sum = 0, duration_sum = 0;
  int pinned = 0, lines = 0;
  double deadline = run.scenario.client.deadline_s;
  for (const SessionRow& r : run.sessions) {
    if (!inside(r.start_s, w)) continue;
    ++m.launched;
    ++m.outcomes[sessions::outcome_name(r.outcome)];
    duration_sum += r.duration_s();
    lines += lines_429(r);
    if (r.outcome == Outcome::completed) {
      ++m.completed;
      successes.push_back(r.duration_s());
    } else if (r.outcome == Outcome::in_flight) {
      ++m.in_flight;
    } else {
      ++m.failed;
      failed_sum += r.duration_s();
      double d = r.duration_s();
      if (deadline > 0 && d >= deadline - 1 && d <= deadline + run.scenario.sessions.watchdog_s)
        ++pinned;
    }
  }
  m.median_success_s = median(successes);
  m.success_p90_s = percentile(successes, 0.90);
  m.success_p99_s = percentile(successes, 0.99);
  m.mean_failed_s = m.failed ? failed_sum / m.failed : kNaN;
  m.pinned_share = m.failed ? static_cast<double>(pinned) / m.failed : 0;
  m.lines_429_per_session = m.launched ? static_cast<double>(lines) / m.launched : 0;

  add_window_averages(m, run, w);
  add_window_counts(m, run, w);
  std::vector<double> hour_launches, hour_429;
  for (const SessionHourRow& h : session_hours(run)) {
    if (!inside(h.t_s, w)) continue;
    hour_launches.push_back(h.launches);
    hour_429.push_back(h.errors_429);
  }
  m.launches_429_correlation = pearson(hour_launches, hour_429);
  m.little_l = m.mean_in_flight;
  // (launches / span) x mean duration
  m.little_lambda_w = m.span_s > 0 ? duration_sum / m.span_s : 0;
  return m;
}

std::vector<SessionHourRow> session_hours(const SessionRun& run) {
  const auto& b = run.hourly;
  std::vector<SessionHourRow> rows(b.size());
  std::vector<double> duration(b.size(), 0);
  for (const SessionRow& r : run.sessions)
    if (long i = b.index(r.start_s); i >= 0) duration[static_cast<size_t>(i)] += r.duration_s();
  for (size_t i = 0; i < b.size(); ++i) {
    rows[i] = {b.t_s[i],          b.launches[i],           b.completions[i],  b.failures[i],
               b.occupancy[0][i], b.occupancy[1][i],       b.occupancy[2][i], b.peak_in_flight[i],
               b.errors_429[i],   b.errors_401[i],         b.items_done[i],   b.arrivals[i],
               b.queue_unread[i], duration[i] / b.bucket_s};
  }
  return rows;
}

std::vector<std::pair<std::string, double>> session_metric_values(const SessionMetrics& m) {
  std::vector<std::pair<std::string, double>> v = {
      {"launched", m.launched},
      {"completed", m.completed},
      {"failed", m.failed},
      {"in_flight", m.in_flight},
      {"median_success_s", m.median_success_s},
      {"success_p90_s", m.success_p90_s},
      {"success_p99_s", m.success_p99_s},
      {"mean_failed_s", m.mean_failed_s},
      {"pinned_share", m.pinned_share},
      {"errors_429", m.errors_429},
      {"errors_401", m.errors_401},
      {"lines_429_per_session", m.lines_429_per_session},
      {"mean_in_flight", m.mean_in_flight},
      {"mean_working", m.mean_working},
      {"mean_blocked", m.mean_blocked},
      {"mean_asleep", m.mean_asleep},
      {"asleep_share", m.asleep_share},
      {"peak_in_flight", m.peak_in_flight},
      {"launches_429_correlation", m.launches_429_correlation},
      {"items_arrived", m.items_arrived},
      {"items_done", m.items_done},
      {"little_l", m.little_l},
      {"little_lambda_w", m.little_lambda_w},
  };
  for (const auto& [name, count] : m.outcomes) v.emplace_back("outcome_" + name, count);
  return v;
}

namespace {

// The figures Monte Carlo summarises: a NaN (no session to measure) is no
// value. A correlation can be negative; every other figure is a count, a
// duration or a share, whose interval stops at 0.
std::vector<Figure> session_figures(const SessionMetrics& m) {
  std::vector<Figure> out;
  for (auto& [name, v] : session_metric_values(m)) {
    bool correlation = name == "launches_429_correlation";
    out.push_back(
        {std::move(name), std::isfinite(v) ? std::optional(v) : std::nullopt, correlation});
  }
  return out;
}

}  // namespace

SessionMonteCarlo run_session_montecarlo(const Scenario& s, int runs, unsigned threads,
                                         sessions::SessionSink* log, const SessionClaim& claim) {
  SessionMonteCarlo r;
  r.runs = replication_count(s, runs);
  r.seed = s.seed;
  r.replications.resize(static_cast<size_t>(r.runs));
  if (claim) r.claims.resize(r.replications.size());
  Replicated all = replicate(s, r.runs, threads, [&](size_t i, const Scenario& replica) {
    SessionRun run = sessions::run_sessions(replica, {i == 0 ? log : nullptr});
    r.replications[i] = session_metrics(run);
    if (claim) r.claims[i] = claim(run, r.replications[i]);
    const auto& b = run.series;
    Replication out{session_figures(r.replications[i]), std::vector<double>(b.size())};
    for (size_t k = 0; k < b.size(); ++k)
      out.band[k] = b.occupancy[0][k] + b.occupancy[1][k] + b.occupancy[2][k];
    if (i == 0) r.first = std::move(run);
    return out;
  });
  r.metrics = std::move(all.metrics);
  r.in_flight = std::move(all.band);
  return r;
}

int seeds_holding_claim(const SessionMonteCarlo& r) {
  if (r.claims.empty()) return 0;
  return static_cast<int>(std::count(r.claims.begin(), r.claims.end(), r.claims.front()));
}

}  // namespace retrystorm
