// What one run of the session model produces: one row per session (the
// columns of sessions.csv), per-bucket and per-hour measurements, and the end
// state of every item. Logs, metrics, the report and the page are views of it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/scenario.hpp"
#include "session_log/session_log.hpp"

namespace retrystorm::sessions {

// How a session ends, the events and item kinds of its log: the session
// log's vocabulary (session_log/session_log.hpp), which `analyze` reads back.
// The model never ends a session as plain `failed`.
using session_log::event_name;
using session_log::failed;
using session_log::item_kind_name;
using session_log::ItemKind;
using session_log::Outcome;
using session_log::outcome_name;

// Where a session's time goes, at every instant one of three.
enum class Occupancy { working, blocked, asleep };
constexpr int kOccupancyKinds = 3;

struct SessionRow {
  int id = 0;
  std::string session_id;  // "s-0042-1d13:05:08": number and start time
  double start_s = 0;
  double end_s = 0;
  Outcome outcome = Outcome::in_flight;
  int n_429 = 0;
  int n_401 = 0;
  int terminal_error = 0;  // 429 or 401 when the last line repeats the last error
  int n_api_calls = 0;
  int items_in = 0;
  int items_done = 0;
  int items_deferred = 0;                        // left unread by the anchor rule
  int queue_unread_at_open = 0;                  // the true queue length, not capped
  std::array<double, kOccupancyKinds> time_s{};  // working, blocked, asleep
  bool anchor_in_batch = false;
  bool anchor_done = false;
  double anchor_started_after_s = -1;  // time from start to the anchor's first work; -1 = never
  int delivery = 1;                    // which delivery of its wake-up chain
  double duration_s() const { return end_s - start_s; }
  // Items of the batch left undone: not the ones the anchor rule set aside.
  int items_cut() const { return items_in - items_deferred - items_done; }
};

// One line of events.jsonl (docs/log-formats.md).
struct SessionEvent {
  using Kind = session_log::EventKind;
  using enum session_log::EventKind;
  double t_s = 0;  // set by the engine when it emits the event
  Kind kind;
  int session = -1;             // -1: none (arrival, superseded)
  const char* session_id = "";  // the session's session_id
  int item = -1;
  ItemKind item_kind = ItemKind::ping;
  int status = 0;         // resp: 200, 429 or 401
  int step = 0;           // resp with an error: the ladder step it leads to (1 = first sleep)
  double duration_s = 0;  // sleep
  Outcome outcome = Outcome::completed;  // end
};

// Where logs go (io writes sessions.csv and events.jsonl from these).
class SessionSink {
 public:
  virtual ~SessionSink() = default;
  virtual void event(const SessionEvent& e) = 0;
};

// Measurements on a fixed grid of buckets (step_s for the series, an hour
// for the hourly table). Occupancy is a time average over the bucket.
struct SessionBuckets {
  double origin_s = 0;  // start of bucket 0
  double bucket_s = 60;
  std::vector<double> t_s;                                     // bucket starts
  std::array<std::vector<double>, kOccupancyKinds> occupancy;  // sessions in each state
  std::vector<double> launches;
  std::vector<double> completions;
  std::vector<double> failures;
  std::vector<double> errors_429;  // 429 answers received in the bucket
  std::vector<double> errors_401;
  std::vector<double> items_done;
  std::vector<double> arrivals;
  std::vector<double> queue_unread;  // unread items at the end of the bucket
  std::vector<double> peak_in_flight;

  void resize(double from_s, double to_s, double bucket);
  size_t size() const { return t_s.size(); }
  // The bucket holding instant t; -1 outside.
  long index(double t) const;
  // Adds one to `counts` at instant t (when inside).
  void count(std::vector<double>& counts, double t, double amount = 1) const;
  // Adds the time average of one session in `state` over [from, to).
  void occupy(Occupancy state, double from, double to);
};

struct ItemTally {
  int arrived = 0;     // every item that entered the queue (initial queue included)
  int done = 0;        // committed
  int superseded = 0;  // replaced by a newer ping on its channel, or a newer anchor
  int unread = 0;      // still queued at the end (claimed or not)
};

struct SessionRun {
  Scenario scenario;
  std::vector<SessionRow> sessions;  // in start order
  SessionBuckets series;             // bucket = step_s
  SessionBuckets hourly;             // bucket = 1 hour
  ItemTally items;
  int peak_in_flight = 0;
  uint64_t events = 0;
};

}  // namespace retrystorm::sessions
