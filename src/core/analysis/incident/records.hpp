// What `retrystorm analyze` reads from incident logs, whatever file it came
// from: sessions, their events, and per-interval counts. The file formats are
// docs/log-formats.md; the readers live in src/logs.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "session_log/session_log.hpp"

namespace retrystorm::incident {

// A figure a log does not carry.
inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
inline bool known(double v) {
  return !std::isnan(v);
}

// How a session ended and the events of its log: the session log's one
// vocabulary (session_log/session_log.hpp).
using session_log::event_kind_from_name;
using session_log::EventKind;
using session_log::Outcome;
using session_log::outcome_from_name;
using session_log::outcome_name;
using session_log::outcome_names;

// One unit of work in the system: a session of sessions.csv, an attempt of
// requests.csv, a request of a client log.
struct SessionRecord {
  double start_s = 0;
  double end_s = 0;
  Outcome outcome = Outcome::completed;
  bool is_retry = false;            // an attempt that repeats an earlier one
  double lines_429 = 0;             // 429 log lines (answers plus a repeated last line)
  double lines_401 = 0;             // 401 log lines
  double other_errors = 0;          // errors of logs that do not name a status
  double repeated_lines = 0;        // of those lines, the last one repeating the last error
  double api_calls = kUnknown;      // calls made
  double items_in = kUnknown;       // items claimed at launch
  double items_done = kUnknown;     // items committed
  double queue_at_open = kUnknown;  // the true queue length at launch
  double working_s = kUnknown;      // occupancy split; sums to the duration
  double blocked_s = kUnknown;
  double asleep_s = kUnknown;
  int anchor_in_batch = -1;  // 0 or 1; -1: not in the log
  int anchor_done = -1;

  double duration_s() const { return end_s - start_s; }
  double error_lines() const { return lines_429 + lines_401 + other_errors; }
  double error_answers() const { return error_lines() - repeated_lines; }
  bool has_split() const { return known(working_s) && known(blocked_s) && known(asleep_s); }
};

// One line of events.jsonl. `sid` points into the reader's buffer: copy it
// to keep it.
struct EventRecord {
  double t = 0;
  std::string_view sid;
  EventKind kind = EventKind::other;
  int status = 0;              // resp: the HTTP status; 0 when absent
  int step = -1;               // resp: the ladder step; -1 when absent
  double dur = kUnknown;       // sleep: its length
  std::string_view outcome;    // end: how the session ended
  std::string_view item_kind;  // arrival: ping, notification or anchor; empty when absent
};

// Counts over one interval of a per-second log.
struct CountBucket {
  double t_s = 0;
  double width_s = 1;
  double starts = 0;
  double successes = 0;
  double retries = 0;
  double timeouts = 0;
  double concurrency = kUnknown;  // sessions or requests in flight
};

}  // namespace retrystorm::incident
