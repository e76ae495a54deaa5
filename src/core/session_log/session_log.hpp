// The session log's vocabulary: how a session ends, the events of
// events.jsonl, the kinds of work item and the columns of sessions.csv
// (docs/log-formats.md). The session model writes these logs, the readers of
// `analyze` read them and the incident analysis counts them, all by these
// names, so that a log the model writes reads back as the same thing.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace retrystorm::session_log {

// The longest duration a log holds (a sleep, a session, a latency): the
// readers take a longer one as broken rather than spread it over millions of
// hours, so the session model refuses a ladder whose sleeps would pass it.
inline constexpr double kMaxDurationS = 1e7;

// How a session ended. A log that only knows success or failure writes
// `completed` or `failed` (the session model never does); `in_flight`: still
// running when the log ends.
enum class Outcome {
  completed,
  killed_asleep,
  killed_working,
  failed_fast,
  crashed,
  ladder_exhausted,
  failed,
  in_flight
};
inline constexpr size_t kOutcomeCount = 8;
// The outcomes the session model gives a session, in report order.
inline constexpr std::array<Outcome, 7> kModelOutcomes{
    Outcome::completed, Outcome::killed_asleep,    Outcome::killed_working, Outcome::failed_fast,
    Outcome::crashed,   Outcome::ladder_exhausted, Outcome::in_flight};
inline bool failed(Outcome o) {
  return o != Outcome::completed && o != Outcome::in_flight;
}
const char* outcome_name(Outcome o);
std::optional<Outcome> outcome_from_name(std::string_view name);
// "completed, killed_asleep, ...": for messages naming what is allowed.
std::string outcome_names();

// The `ev` of one line of events.jsonl; `other` is a name the log format
// does not define (read and skipped).
enum class EventKind {
  arrival,
  superseded,
  launch,
  call,
  resp,
  sleep,
  wake,
  item_start,
  item_done,
  defer,
  end,
  other
};
const char* event_name(EventKind k);
std::optional<EventKind> event_kind_from_name(std::string_view name);

// The `kind` of an item in events.jsonl.
enum class ItemKind { ping, notification, anchor };
const char* item_kind_name(ItemKind k);

// The columns of sessions.csv, in the order the session model writes them.
// Other logs may leave any out but start_s, end_s and outcome, and may count
// errors without a status in `n_errors` (never written by the model).
enum class Column {
  session_id,
  start_s,
  end_s,
  outcome,
  n_429,
  n_401,
  terminal_error_line,
  n_api_calls,
  items_in,
  items_done,
  queue_unread_at_open,
  time_working_s,
  time_blocked_s,
  time_asleep_s,
  anchor_in_batch,
  anchor_done,
  items_deferred,
  delivery,
  n_errors
};
const char* column_name(Column c);
// "session_id,start_s,...,delivery\n": the header line the model writes.
std::string sessions_csv_header();

}  // namespace retrystorm::session_log
