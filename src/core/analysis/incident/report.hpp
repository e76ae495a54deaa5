// What `retrystorm analyze` finds in an incident log: the per-hour queue
// figures, fake saturation, errors as a retry signal, durations, the ladder
// against the deadline, failures against load, and the ranked diagnosis.
// One result type; the text, JSON and HTML reports are views of it
// (src/formats/analyze_report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/incident/records.hpp"
#include "text/clock.hpp"

namespace retrystorm::incident {

struct AnalysisOptions {
  std::optional<double> from_s;      // only what happens from this time on
  std::optional<double> to_s;        // ... and before this time
  std::optional<double> slots;       // the concurrency ceiling, for utilization
  std::optional<double> deadline_s;  // the session deadline
  std::vector<double> ladder_s;      // the backoff ladder, seconds per step
};

// One hour of the log. Figures a log cannot give are kUnknown.
struct HourRow {
  int64_t hour = 0;            // hours since day 0 00:00
  double launches = 0;         // λ: started this hour
  double retries = 0;          // of those, repeats of earlier attempts
  double mean_duration_s = 0;  // W of those started this hour
  double in_flight = 0;        // L: time-average in flight
  double little = 0;           // λ·W, to set against L
  double utilization = 0;      // ρ = L / ceiling
  double peak = 0;             // most in flight at one instant
  double completions = 0;      // ended this hour, completed
  double failures = 0;         // ended this hour, not completed
  double failure_share = 0;    // of those started this hour, the share that failed
  // ... the share that failed after error answers (crashes and clean deadline
  // kills aside): what "quiet hours failed too" counts.
  double erring_failure_share = 0;
  double goodput = 0;         // items committed (or completions) this hour
  double working = kUnknown;  // L split by state
  double blocked = kUnknown;
  double asleep = kUnknown;
  double lines_429 = 0;  // error log lines placed in this hour
  double lines_401 = 0;
  double errors = 0;              // every error line
  double arrivals = kUnknown;     // items that arrived (events)
  double error_share = kUnknown;  // error answers over calls, for the replay timeline
  // The queue at each session open this hour: the batch counter a session sees
  // (items claimed, capped at the batch) against the true unread queue
  // (queue_unread_at_open); the post-mortem's author could only see the first.
  double opens_with_queue = 0;  // sessions whose log gives the true queue
  double queue_mean = kUnknown;
  double queue_max = kUnknown;
  double counter_mean = kUnknown;  // items claimed at open
  double counter_max = kUnknown;
};

struct DayRow {
  int64_t day = 0;
  double launches = 0;
  double completions = 0;
  double lines_429 = 0;  // of sessions launched this day
  double errors = 0;
};

struct Unknown {
  std::string figure;
  std::string reason;
};

struct OccupancyShares {
  std::string source;         // "events", "session columns" or "" (unknown)
  double working = kUnknown;  // shares of all time in flight
  double blocked = kUnknown;
  double asleep = kUnknown;
};

struct FakeSaturation {
  std::vector<int64_t> hours;       // near the ceiling with almost no completions
  double in_flight = 0;             // their mean L
  double completions_per_hour = 0;  // their mean completions
  double asleep_share = kUnknown;   // of their occupancy
  double threshold = 0;             // "near": L at least this share of the ceiling
};

struct ErrorSignal {
  double sessions = 0;            // every session
  double with_errors = 0;         // sessions that logged an error
  double failed_with_errors = 0;  // ... and failed
  double lines = 0;               // every error line
  double lines_429 = 0;
  double lines_401 = 0;
  double per_session = 0;                         // lines / sessions
  double per_erring_session = 0;                  // lines / sessions with errors
  double cv = kUnknown;                           // spread of lines among sessions with errors
  std::vector<std::pair<int, double>> histogram;  // lines per session -> sessions
  double correlation = kUnknown;                  // hourly, launches against error lines
  bool nearly_constant = false;                   // the error curve counts sessions, not demand
};

struct Durations {
  std::vector<double> minute_ok;      // sessions completed, by whole minutes of duration
  std::vector<double> minute_failed;  // sessions that failed
  double median_ok_s = kUnknown;
  double median_failed_s = kUnknown;
  double deadline_s = kUnknown;
  std::string deadline_source;  // "--deadline", "killed sessions", "failed durations" or ""
  double failures = 0;
  double pinned = 0;  // failures within a minute of the deadline
  double pinned_share = kUnknown;
};

struct LoggedLadder {
  std::vector<double> steps_s;
  std::string source;  // "--ladder", "sleep events", "gaps between errors", ""
  double sum_s = kUnknown;
  double deadline_s = kUnknown;
  double over_s = kUnknown;  // sum minus deadline; > 0: longer than the deadline
};

struct FailureLoad {
  double correlation = kUnknown;          // hourly failure share against L
  std::vector<int64_t> low_load_failing;  // hours at low load where nearly all failed
  double low_load_sessions = 0;
  double low_load_failed = 0;
  double low_load_peak = 0;
};

struct BatchCut {
  double killed_working = 0;
  double killed_working_full = 0;  // ... opened with a full batch (16 or more items)
  double anchor_cut = 0;           // ... with the anchor in the batch, not done
  double known_items = 0;          // sessions whose log gives items_in
  std::vector<double> examples_start_s;
};

struct Diagnosis {
  std::string id;  // dead_dependency, ladder_longer_than_deadline, fake_saturation,
                   // batch_deadline_cuts_newest, genuine_overload, healthy
  std::string title;
  double score = 0;  // ranks the findings; 0..1
  std::vector<std::string> evidence;
  std::string fix;
};

struct Report {
  std::string unit = "sessions";     // what one record is
  std::vector<std::string> sources;  // "path: format" per file read
  double first_s = kUnknown;
  double last_s = kUnknown;
  double sessions = 0;
  double completed = 0;
  double failed = 0;
  double crashed = 0;                                    // failures unrelated to the dependency
  std::vector<std::pair<std::string, double>> outcomes;  // outcome name -> sessions
  double items_done = kUnknown;
  double ceiling = kUnknown;
  std::string ceiling_source;  // "--slots", "deadline / launch interval" or "peak in flight"
  double mean_in_flight = 0;   // L over the whole log: [l_from_s, l_to_s); unknown without a gauge
  double mean_duration_s = kUnknown;
  double little = kUnknown;  // λ·W over the same window
  // The window L covers: the log's state window, from its first launch to
  // its last end, so that L does not shift with where in an hour the log
  // starts; the hours of a window given (--from, --to) or of a per-second log.
  double l_from_s = kUnknown, l_to_s = kUnknown;
  double peak = 0;
  std::vector<HourRow> hours;
  std::vector<DayRow> days;
  OccupancyShares occupancy;
  FakeSaturation fake;
  ErrorSignal errors;
  Durations durations;
  LoggedLadder ladder;
  FailureLoad failure_load;
  BatchCut batch;
  std::vector<Diagnosis> findings;  // ranked, first is the diagnosis
  std::vector<Unknown> unknowns;
  double outliers = 0;                // records dropped as outliers (accumulator.hpp)
  std::vector<std::string> warnings;  // what the reader should know, e.g. the outliers
};

// Why fake saturation starts at FakeSaturation::threshold (for the reports).
std::string fake_saturation_threshold_text(double threshold);
// The hour whose session opens saw the longest true queue, with the batch
// counter beside it; "" when the log has no queue_unread_at_open.
std::string queue_at_open_text(const Report& r);

// "1d13:00" and "1d13:05:09": hours and times of the log, in the clock format
// of the session model.
using text::format_clock;
using text::hour_label;
// "30:30" or "1:05:00": a duration.
std::string span_label(double s);
// "d0 01:00-05:59, d1 13:00-15:59": hours as ranges of consecutive hours.
std::string hour_ranges(const std::vector<int64_t>& hours);

}  // namespace retrystorm::incident
