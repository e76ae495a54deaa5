// What a session-model run measured, over its focus window
// (sessions.focus_from_s to focus_to_s; the whole run when both are 0):
// the figures docs/sessions.md names and the post-mortem lacked.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engines/montecarlo.hpp"
#include "engines/sessions/session_run.hpp"

namespace retrystorm {

struct SessionMetrics {
  double from_s = 0, to_s = 0;  // the window; sessions count by their start
  int launched = 0;
  int completed = 0;
  int failed = 0;                               // every failed outcome
  int in_flight = 0;                            // still running at the end of the run
  std::map<std::string, int> outcomes;          // by outcome name, every one listed
  double median_success_s = 0;                  // NaN when none completed
  double success_p90_s = 0, success_p99_s = 0;  // durations of completed sessions
  double mean_failed_s = 0;                     // NaN when none failed
  // Failed sessions that lasted from one second before the deadline to one
  // watchdog period after it: pinned to the deadline.
  double pinned_share = 0;
  int errors_429 = 0;  // 429 answers
  int errors_401 = 0;
  double lines_429_per_session = 0;  // 429 log lines (answers + repeated last line) / launched
  double mean_in_flight = 0;         // time average over the window
  // The time the averages cover: the window within the simulated run
  // (sessions.start_s to horizon_s), in seconds.
  double span_s = 0;
  double mean_working = 0, mean_blocked = 0, mean_asleep = 0;
  double asleep_share = 0;  // asleep / in flight, time averages; 0 when idle
  int peak_in_flight = 0;
  double launches_429_correlation = 0;  // hourly, Pearson; NaN when undefined
  int items_arrived = 0;
  int items_done = 0;
  // Little's law: time-average in flight against launch rate x mean duration.
  double little_l = 0;
  double little_lambda_w = 0;
};

SessionMetrics session_metrics(const sessions::SessionRun& run);

struct SessionHourRow {
  double t_s;  // the hour's start
  double launches, completions, failures;
  double working, blocked, asleep;  // time-average sessions in each state
  double peak_in_flight;
  double errors_429, errors_401;
  double items_done, arrivals, queue_unread;
  double lambda_w;  // launches x mean duration of the sessions launched in this hour, per hour
};

std::vector<SessionHourRow> session_hours(const sessions::SessionRun& run);

// The figures of an hour, named as the JSON `hours` and the page's SessionHour
// name them (the JSON adds the hour's clock).
struct HourField {
  std::string_view name;
  double SessionHourRow::*member;
};
inline constexpr HourField kHourFields[] = {
    {"t_s", &SessionHourRow::t_s},
    {"launches", &SessionHourRow::launches},
    {"completions", &SessionHourRow::completions},
    {"failures", &SessionHourRow::failures},
    {"working", &SessionHourRow::working},
    {"blocked", &SessionHourRow::blocked},
    {"asleep", &SessionHourRow::asleep},
    {"peak_in_flight", &SessionHourRow::peak_in_flight},
    {"errors_429", &SessionHourRow::errors_429},
    {"errors_401", &SessionHourRow::errors_401},
    {"items_done", &SessionHourRow::items_done},
    {"arrivals", &SessionHourRow::arrivals},
    {"queue_unread", &SessionHourRow::queue_unread},
    {"little_lambda_w", &SessionHourRow::lambda_w},
};

// Named figures of SessionMetrics in a fixed order (JSON, Monte Carlo).
std::vector<std::pair<std::string, double>> session_metric_values(const SessionMetrics& m);

// Replications of a session scenario (seed, seed + 1, ...) on every core:
// each figure's mean and 95% interval, and a band of sessions in flight
// per bucket.
struct SessionMonteCarlo {
  int runs = 0;
  double seed = 0;
  // The headline's claim in each replication (session_verdict's short name),
  // when a classifier was given: the share of seeds in which the reported
  // run's claim holds.
  std::vector<std::string> claims;
  Summaries metrics;
  std::vector<SessionMetrics> replications;
  Band in_flight;              // sessions in flight, per series bucket
  sessions::SessionRun first;  // replication 0
};

// `log`, when given, receives the events of replication 0 (the reported run);
// `claim`, when given, names each replication's headline claim.
using SessionClaim = std::function<std::string(const sessions::SessionRun&, const SessionMetrics&)>;
SessionMonteCarlo run_session_montecarlo(const Scenario& s, int runs = 0, unsigned threads = 0,
                                         sessions::SessionSink* log = nullptr,
                                         const SessionClaim& claim = {});

// Seeds whose claim is the reported run's (replication 0's); 0 without claims.
int seeds_holding_claim(const SessionMonteCarlo& r);

}  // namespace retrystorm
