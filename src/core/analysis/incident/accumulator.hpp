// Streams incident-log records into the figures of report.hpp. Memory grows
// with the hours the log spans and by about 24 bytes a session (start, end and
// duration, for peaks and quantiles), never with the size of a file. The span
// is bounded: records more than kOutlierSpan from the bulk of the log are
// dropped and counted (docs/analyze.md, Limits).
#pragma once

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "analysis/incident/records.hpp"
#include "analysis/incident/report.hpp"
#include "text/clock.hpp"

namespace retrystorm::incident {

class Accumulator {
 public:
  explicit Accumulator(AnalysisOptions options);

  void add(const SessionRecord& s);
  void add(const EventRecord& e);
  void add(const CountBucket& b);

  // With no sessions file, sessions are rebuilt from launch and end events.
  void set_sessions_from_events(bool on) { sessions_from_events_ = on; }
  void set_unit(std::string unit) { unit_ = std::move(unit); }
  // A figure the log cannot give, and why (said once per figure).
  void add_unknown(const std::string& figure, const std::string& reason);

  // The figures and the ranked diagnosis.
  Report finish();

  // The bulk of the log is the median time of its first kAnchorSample
  // records; a record with a time further than kOutlierSpan from it is an
  // outlier (a broken clock, a stray row), dropped so that one row cannot
  // stretch the report over thousands of empty hours.
  static constexpr double kOutlierSpan = 366 * text::kDay;
  static constexpr size_t kAnchorSample = 1001;

 private:
  // The deadline: --deadline, else the one the killed sessions' durations
  // are pinned to (unknown when they are not).
  double killed_deadline();

  // finish(), one report section each (finish.cpp).
  struct HourTotals;
  HourTotals add_hours(Report& r, bool rows_split);
  void set_ceiling(Report& r);
  void set_little(Report& r, const HourTotals& t);
  void set_occupancy(Report& r, const HourTotals& t, bool rows_split);
  void set_error_signal(Report& r);
  void set_durations(Report& r);
  void set_ladder(Report& r);

  // Everything one hour collects before finish() turns it into a HourRow.
  struct Hour {
    double launches = 0, retries = 0, duration_sum = 0, started_failed = 0;
    double started_failed_erring = 0;  // ... of those, after error answers, not crashed
    double busy_s = 0, completions = 0, failures = 0, goodput = 0, items = 0;
    double row_split_s = 0, row_working_s = 0, row_blocked_s = 0, row_asleep_s = 0;
    double ev_working_s = 0, ev_blocked_s = 0, ev_asleep_s = 0;
    double row_429 = 0, row_401 = 0, row_other = 0;
    double ev_429 = 0, ev_401 = 0, ev_other = 0;
    double row_calls = 0, ev_calls = 0;
    double row_answers = 0, ev_answers = 0;  // error answers, without repeated lines
    double arrivals = 0;
    double gauged_s = 0;  // per-second CSV: the seconds whose concurrency the log gives
    double peak = 0;
    double queue_n = 0, queue_sum = 0, queue_max = 0;        // true queue at each open
    double counter_n = 0, counter_sum = 0, counter_max = 0;  // items claimed at each open
  };
  enum class Phase { working, calling, asleep };
  // A session whose events are still coming.
  struct Live {
    double since = 0;
    Phase phase = Phase::working;
    int run = 0;  // consecutive error answers
    int last_status = 0;
    double last_error_t = kUnknown;
    bool slept_with_dur = false;
    double items_done = 0;  // item_done events
    SessionRecord rebuilt;  // when sessions come from events
  };

  // An event kept until the anchor is known: its text copied.
  struct HeldEvent {
    EventRecord e;
    std::string sid, outcome, item_kind;
  };
  // Fixes the anchor from the records held so far and adds them.
  void settle();
  // True (and counted) when `t` is an outlier.
  bool drop(double t);
  void add_record(const SessionRecord& s);
  void add_event(const EventRecord& e);
  SessionRecord rebuilt(const Live& live) const;
  // A session's goodput: the hour it ended in (none past --to), whether it
  // completed, its items (unknown: the log does not count them).
  struct Goodput {
    std::optional<int64_t> hour;
    bool ok;
    double items;
  };
  void add_goodput(const Goodput& g);
  void settle_goodput();
  void add_bucket(const CountBucket& b);

  bool outside(double start, double end) const;
  bool counts_in_hours(const Live& live, double t) const;
  double clip_from(double t) const;
  double clip_to(double t) const;
  Hour& hour(double t);
  // Calls f(hour, seconds) for each hour [a, b) overlaps, within the window.
  template <class F>
  void spread(double a, double b, F f);
  void add_counts(const SessionRecord& s);
  void add_queue(Hour& h, const SessionRecord& s);
  void add_errors_and_split(const SessionRecord& s);
  void add_shape(const SessionRecord& s);
  void attribute(Live& live, double t, Phase phase);
  void event_error(Live& live, const EventRecord& e);
  void event_end(Live& live, const EventRecord& e);
  HourRow hour_row(const Hour& h, int64_t hour, double ceiling, bool rows_split) const;
  // The seconds of an hour its means are taken over (docs/analyze.md).
  double hour_span(const Hour& h, int64_t hour) const;

  AnalysisOptions options_;
  std::optional<double> anchor_;
  std::vector<std::variant<SessionRecord, HeldEvent, CountBucket>> held_;
  double dropped_ = 0, first_dropped_ = 0;
  std::string unit_ = "sessions";
  bool sessions_from_events_ = false;
  bool saw_events_ = false;
  bool saw_item_done_ = false;            // the events write item_done lines
  std::vector<Goodput> pending_goodput_;  // sessions from events, until the log ends
  bool saw_buckets_ = false;
  std::map<int64_t, Hour> hours_;
  // Long spans' whole hours, added at finish (add_whole_hours): by the hour
  // each span starts and ends, what each of its whole hours gets (+ and -),
  // and the spans starting (+1) and ending (-1) there.
  static constexpr size_t kHourFields = sizeof(Hour) / sizeof(double);
  // Per field of an Hour: what each whole hour gets, and the spans that give
  // it something (a field none of the open spans gives is exactly 0 there,
  // not what rounding left of the spans that closed).
  struct WholeHours {
    std::array<double, kHourFields> each{};
    std::array<int64_t, kHourFields> open{};
  };
  std::map<int64_t, WholeHours> whole_hours_;
  void add_whole_hours(int64_t from, int64_t to, const Hour& each);
  void settle_whole_hours();
  static void add_hour(Hour& into, const Hour& amount);
  // A span with more whole hours than this has them added in bulk.
  static constexpr int64_t kWholeHoursInBulk = 8;
  std::map<int64_t, DayRow> days_;
  std::unordered_map<std::string, Live> live_;
  double last_event_t_ = 0;  // the latest instant an event names
  // Sessions rebuilt from events that have no end event: still running when
  // the log ends, added as in flight (docs/analyze.md).
  void end_live_sessions();
  // Chunked, so a long log never needs a vector's doubling room at once.
  std::deque<double> starts_, ends_;
  std::deque<float> ok_durations_, failed_durations_, killed_durations_;
  std::vector<std::vector<double>> sleep_samples_, gap_samples_;
  std::vector<double> error_histogram_;
  std::vector<Unknown> unknowns_;
  Report totals_;  // sessions, outcomes, errors, batch: filled as records come
  std::vector<double> outcome_counts_;
  double split_sessions_ = 0, items_sessions_ = 0;
  double erring_sum_ = 0, erring_sumsq_ = 0;
  double bucket_peak_ = 0;
  double bucket_from_ = 0, bucket_to_ = 0;  // the per-second CSV's first and last instant
};

// The ranked findings for a finished report (diagnosis.cpp).
std::vector<Diagnosis> diagnose(const Report& r);

}  // namespace retrystorm::incident
