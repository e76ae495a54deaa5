#include "analysis/incident/accumulator.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <tuple>
#include <type_traits>

namespace retrystorm::incident {

namespace {

using text::kHour;
// Error lines per session above this share one histogram bar.
constexpr int kHistogramTop = 40;
// A session counts as opening with a full batch from this many items (the
// post-mortem's anchor rule starts at 16 of a cap of 20).
constexpr double kFullBatch = 16;

int64_t hour_of(double t) {
  return static_cast<int64_t>(std::floor(t / kHour));
}

// Where a session's error line of `status` is counted.
double& error_line(SessionRecord& s, int status) {
  return status == 429 ? s.lines_429 : status == 401 ? s.lines_401 : s.other_errors;
}

bool repeats_last_error(std::string_view outcome) {
  auto o = outcome_from_name(outcome);
  return o == Outcome::killed_asleep || o == Outcome::failed_fast || o == Outcome::ladder_exhausted;
}

}  // namespace

Accumulator::Accumulator(AnalysisOptions options)
    : options_(std::move(options)),
      error_histogram_(kHistogramTop + 1, 0.0),
      outcome_counts_(session_log::kOutcomeCount, 0.0) {}

void Accumulator::add_unknown(const std::string& figure, const std::string& reason) {
  for (const auto& u : unknowns_)
    if (u.figure == figure) return;
  unknowns_.push_back({figure, reason});
}

void Accumulator::settle() {
  std::vector<double> times;
  for (const auto& h : held_)
    times.push_back(std::visit(
        [](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, SessionRecord>)
            return x.start_s;
          else if constexpr (std::is_same_v<T, HeldEvent>)
            return x.e.t;
          else
            return x.t_s;
        },
        h));
  anchor_ = 0;
  if (!times.empty()) {
    auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::nth_element(times.begin(), mid, times.end());
    anchor_ = *mid;
  }
  auto held = std::move(held_);
  held_.clear();
  held_.shrink_to_fit();
  for (auto& h : held) {
    if (auto* e = std::get_if<HeldEvent>(&h)) {
      e->e.sid = e->sid;
      e->e.outcome = e->outcome;
      e->e.item_kind = e->item_kind;
      add(e->e);
    } else if (auto* s = std::get_if<SessionRecord>(&h)) {
      add(*s);
    } else {
      add(std::get<CountBucket>(h));
    }
  }
}

bool Accumulator::drop(double t) {
  if (std::abs(t - *anchor_) <= kOutlierSpan) return false;
  if (dropped_ == 0) first_dropped_ = t;
  dropped_ += 1;
  return true;
}

void Accumulator::add(const SessionRecord& s) {
  if (!anchor_) {
    held_.emplace_back(s);
    if (held_.size() >= kAnchorSample) settle();
  } else if (!drop(s.start_s) && !(s.end_s != s.start_s && drop(s.end_s))) {
    add_record(s);
  }
}

void Accumulator::add(const EventRecord& e) {
  if (!anchor_) {
    held_.emplace_back(
        HeldEvent{e, std::string(e.sid), std::string(e.outcome), std::string(e.item_kind)});
    if (held_.size() >= kAnchorSample) settle();
  } else if (!drop(e.t)) {
    add_event(e);
  }
}

void Accumulator::add(const CountBucket& b) {
  if (!anchor_) {
    held_.emplace_back(b);
    if (held_.size() >= kAnchorSample) settle();
  } else if (!drop(b.t_s)) {
    add_bucket(b);
  }
}

bool Accumulator::outside(double start, double end) const {
  (void)end;
  return (options_.from_s && start < *options_.from_s) ||
         (options_.to_s && start >= *options_.to_s);
}

double Accumulator::clip_from(double t) const {
  return options_.from_s ? std::max(t, *options_.from_s) : t;
}

double Accumulator::clip_to(double t) const {
  return options_.to_s ? std::min(t, *options_.to_s) : t;
}

Accumulator::Hour& Accumulator::hour(double t) {
  return hours_[hour_of(t)];
}

template <class F>
void Accumulator::spread(double a, double b, F f) {
  a = clip_from(a);
  b = clip_to(b);
  if (b < a) return;
  if (b == a) {
    f(hour(a), 0.0);
    return;
  }
  int64_t h = hour_of(a);
  const int64_t last = hour_of(b);
  if (last - h - 1 >= kWholeHoursInBulk) {
    // Its whole hours all get the same: noted once, added at finish (a
    // session of 10^7 s spans 2,778 hours; walking them cost rows x hours).
    const double lo = std::max(a, h * kHour), hi = (h + 1) * kHour;
    if (hi > lo) f(hours_[h], hi - lo);
    Hour each;
    f(each, kHour);
    add_whole_hours(h + 1, last, each);
    if (b > last * kHour) f(hours_[last], b - last * kHour);
    return;
  }
  for (; h * kHour < b; ++h) {
    double lo = std::max(a, h * kHour), hi = std::min(b, (h + 1) * kHour);
    if (hi > lo) f(hours_[h], hi - lo);
  }
}

// An Hour is doubles only: added as an array, so that its fields are listed once.
void Accumulator::add_hour(Hour& into, const Hour& amount) {
  static_assert(std::is_trivially_copyable_v<Hour> && sizeof(Hour) % sizeof(double) == 0);
  auto sum = std::bit_cast<std::array<double, kHourFields>>(into);
  const auto add = std::bit_cast<std::array<double, kHourFields>>(amount);
  for (size_t i = 0; i < kHourFields; ++i) sum[i] += add[i];
  into = std::bit_cast<Hour>(sum);
}

// Whole hours [from, to) each get `each`.
void Accumulator::add_whole_hours(int64_t from, int64_t to, const Hour& each) {
  const auto add = std::bit_cast<std::array<double, kHourFields>>(each);
  WholeHours& start = whole_hours_[from];
  WholeHours& end = whole_hours_[to];
  for (size_t i = 0; i < kHourFields; ++i) {
    if (add[i] == 0) continue;
    start.each[i] += add[i];
    start.open[i] += 1;
    end.each[i] -= add[i];
    end.open[i] -= 1;
  }
}

// The long spans' whole hours into the hours, each hour once: a running sum
// of what the open spans give, field by field; a field no open span gives is
// reset to exactly 0 (the spans that closed leave a rounding residue, and an
// hour without errors read 1e-17 of them: an error share of 100%).
void Accumulator::settle_whole_hours() {
  std::array<double, kHourFields> running{};
  std::array<int64_t, kHourFields> open{};
  for (auto it = whole_hours_.begin(); it != whole_hours_.end(); ++it) {
    bool any = false;
    for (size_t i = 0; i < kHourFields; ++i) {
      running[i] += it->second.each[i];
      open[i] += it->second.open[i];
      if (open[i] == 0) running[i] = 0;
      any = any || open[i] != 0;
    }
    const auto next = std::next(it);
    if (!any || next == whole_hours_.end()) continue;
    const Hour each = std::bit_cast<Hour>(running);
    for (int64_t h = it->first; h < next->first; ++h) add_hour(hours_[h], each);
  }
  whole_hours_.clear();
}

void Accumulator::add_record(const SessionRecord& s) {
  if (outside(s.start_s, s.end_s)) return;
  add_counts(s);
  add_errors_and_split(s);
  add_shape(s);
}

// Launches, outcomes and goodput, by the hour a session starts or ends.
void Accumulator::add_counts(const SessionRecord& s) {
  bool ok = s.outcome == Outcome::completed;
  bool running = s.outcome == Outcome::in_flight;  // neither success nor failure yet
  double d = s.duration_s();
  Hour& start = hour(s.start_s);
  start.launches += 1;
  start.retries += s.is_retry ? 1 : 0;
  start.duration_sum += d;
  start.started_failed += ok || running ? 0 : 1;
  bool erring = s.error_lines() > 0 && s.outcome != Outcome::crashed;
  start.started_failed_erring += ok || running || !erring ? 0 : 1;
  add_queue(start, s);
  outcome_counts_[static_cast<size_t>(s.outcome)] += 1;
  totals_.sessions += 1;
  DayRow& day = days_[static_cast<int64_t>(std::floor(s.start_s / text::kDay))];
  day.launches += 1;
  day.completions += ok ? 1 : 0;
  day.lines_429 += s.lines_429;
  day.errors += s.error_lines();
  Goodput g{std::nullopt, ok, s.items_done};
  if (!options_.to_s || s.end_s < *options_.to_s) {
    // A running session's items are committed already (each the moment its
    // work ends); its end is the log's, so they go to the hour before it.
    const double end_s = running ? std::nextafter(s.end_s, s.start_s) : s.end_s;
    g.hour = hour_of(end_s);
    if (!running) (ok ? hour(end_s).completions : hour(end_s).failures) += 1;
  }
  // From events, whether the log counts items is known at its end only.
  if (sessions_from_events_)
    pending_goodput_.push_back(g);
  else
    add_goodput(g);
  if (running) return;
  (ok ? totals_.completed : totals_.failed) += 1;
  totals_.crashed += s.outcome == Outcome::crashed ? 1 : 0;
}

// A session's goodput at the hour it ended: its items, or 1 for a
// completion when the log does not count items.
void Accumulator::add_goodput(const Goodput& g) {
  if (g.hour) hours_[*g.hour].goodput += known(g.items) ? g.items : (g.ok ? 1 : 0);
  if (!known(g.items)) return;
  items_sessions_ += 1;
  totals_.items_done = (known(totals_.items_done) ? totals_.items_done : 0) + g.items;
}

// Sessions rebuilt from events: their items count once the whole log has
// shown whether it writes item_done lines (a session that ended before the
// first one had no items, not unknown ones).
void Accumulator::settle_goodput() {
  for (Goodput& g : pending_goodput_) {
    g.items = saw_item_done_ ? g.items : kUnknown;
    add_goodput(g);
  }
  pending_goodput_.clear();
}

// The queue as a session saw it at open, by the hour it opened in.
void Accumulator::add_queue(Hour& h, const SessionRecord& s) {
  if (known(s.queue_at_open)) {
    h.queue_n += 1;
    h.queue_sum += s.queue_at_open;
    h.queue_max = std::max(h.queue_max, s.queue_at_open);
  }
  if (known(s.items_in)) {
    h.counter_n += 1;
    h.counter_sum += s.items_in;
    h.counter_max = std::max(h.counter_max, s.items_in);
  }
}

// Occupancy and error lines, spread over the hours a session spans in
// proportion to the time it spent in each.
void Accumulator::add_errors_and_split(const SessionRecord& s) {
  double d = s.duration_s();
  bool split = s.has_split() && d > 0;
  if (split) split_sessions_ += 1;
  spread(s.start_s, s.end_s, [&](Hour& h, double seconds) {
    double share = d > 0 ? seconds / d : 1.0;
    h.busy_s += seconds;
    h.row_429 += s.lines_429 * share;
    h.row_401 += s.lines_401 * share;
    h.row_other += s.other_errors * share;
    h.row_answers += s.error_answers() * share;
    if (known(s.api_calls)) h.row_calls += s.api_calls * share;
    if (split) {
      h.row_split_s += seconds;
      h.row_working_s += s.working_s * share;
      h.row_blocked_s += s.blocked_s * share;
      h.row_asleep_s += s.asleep_s * share;
    }
  });
  starts_.push_back(clip_from(s.start_s));
  ends_.push_back(clip_to(s.end_s));
}

// The distributions: durations, error lines per session, batches cut.
void Accumulator::add_shape(const SessionRecord& s) {
  bool ok = s.outcome == Outcome::completed;
  if (s.outcome != Outcome::in_flight)
    (ok ? ok_durations_ : failed_durations_).push_back(static_cast<float>(s.duration_s()));
  if (s.outcome == Outcome::killed_asleep || s.outcome == Outcome::killed_working)
    killed_durations_.push_back(static_cast<float>(s.duration_s()));
  double lines = s.error_lines();
  int bar = static_cast<int>(std::min<double>(kHistogramTop, std::floor(lines + 0.5)));
  error_histogram_[static_cast<size_t>(std::max(0, bar))] += 1;
  ErrorSignal& e = totals_.errors;
  e.lines += lines;
  e.lines_429 += s.lines_429;
  e.lines_401 += s.lines_401;
  if (lines > 0) {
    e.with_errors += 1;
    bool unrelated = s.outcome == Outcome::crashed || s.outcome == Outcome::in_flight;
    e.failed_with_errors += ok || unrelated ? 0 : 1;
    erring_sum_ += lines;
    erring_sumsq_ += lines * lines;
  }
  BatchCut& b = totals_.batch;
  if (known(s.items_in)) b.known_items += 1;
  if (s.outcome != Outcome::killed_working) return;
  b.killed_working += 1;
  bool full = known(s.items_in) && s.items_in >= kFullBatch;
  bool anchor_cut = s.anchor_in_batch == 1 && s.anchor_done == 0;
  b.killed_working_full += full ? 1 : 0;
  b.anchor_cut += anchor_cut ? 1 : 0;
  if ((full || anchor_cut) && b.examples_start_s.size() < 5)
    b.examples_start_s.push_back(s.start_s);
}

void Accumulator::add_bucket(const CountBucket& b) {
  // A row counts the interval since the row before, (t - width, t]: it
  // belongs to the hour (and day, and window) that interval starts in.
  const double from = std::max(0.0, b.t_s - b.width_s);
  if (outside(from, from)) return;
  Hour& h = hour(from);
  h.launches += b.starts;
  h.retries += b.retries;
  h.completions += b.successes;
  h.goodput += b.successes;
  h.failures += b.timeouts;
  h.started_failed += b.timeouts;
  h.started_failed_erring += b.timeouts;  // a timeout is the log's error
  h.row_other += b.timeouts;
  bucket_from_ = saw_buckets_ ? std::min(bucket_from_, from) : from;
  bucket_to_ = saw_buckets_ ? std::max(bucket_to_, b.t_s) : b.t_s;
  saw_buckets_ = true;
  if (known(b.concurrency)) {
    h.gauged_s += b.width_s;
    h.busy_s += b.concurrency * b.width_s;
    h.peak = std::max(h.peak, b.concurrency);
    bucket_peak_ = std::max(bucket_peak_, b.concurrency);
  }
  totals_.sessions += b.starts;
  totals_.completed += b.successes;
  totals_.failed += b.timeouts;
  totals_.errors.lines += b.timeouts;
  DayRow& day = days_[static_cast<int64_t>(std::floor(from / text::kDay))];
  day.launches += b.starts;
  day.completions += b.successes;
  day.errors += b.timeouts;
}

// An event of `live` at `t` counts in the hours: the session started inside
// the window (--from/--to take sessions by their start, as L does) and the
// event lies in it too.
bool Accumulator::counts_in_hours(const Live& live, double t) const {
  return !outside(live.rebuilt.start_s, live.rebuilt.start_s) && !outside(t, t);
}

// Time from the session's last event to `t` goes to the state it was in.
void Accumulator::attribute(Live& live, double t, Phase phase) {
  // The state's own total: asleep, blocked on a call, else working.
  auto of_phase = [phase](double& asleep, double& blocked, double& working) -> double& {
    return phase == Phase::asleep ? asleep : phase == Phase::calling ? blocked : working;
  };
  if (t > live.since) {
    SessionRecord& r = live.rebuilt;
    if (counts_in_hours(live, live.since))
      spread(live.since, t, [&](Hour& h, double seconds) {
        of_phase(h.ev_asleep_s, h.ev_blocked_s, h.ev_working_s) += seconds;
      });
    of_phase(r.asleep_s, r.blocked_s, r.working_s) += t - live.since;
  }
  live.since = std::max(live.since, t);
}

// An error answer: the session's ladder count always moves on; the hour
// counts it when it falls inside the window.
void Accumulator::event_error(Live& live, const EventRecord& e) {
  error_line(live.rebuilt, e.status) += 1;
  if (counts_in_hours(live, e.t)) {
    Hour& h = hour(e.t);
    h.ev_answers += 1;
    (e.status == 429 ? h.ev_429 : e.status == 401 ? h.ev_401 : h.ev_other) += 1;
  }
  // Without sleep lengths, the gap between two errors is the step plus a call.
  if (known(live.last_error_t) && !live.slept_with_dur && live.run >= 1) {
    size_t step = static_cast<size_t>(live.run - 1);
    if (gap_samples_.size() <= step) gap_samples_.resize(step + 1);
    gap_samples_[step].push_back(e.t - live.last_error_t);
  }
  live.run += 1;
  live.last_status = e.status;
  live.last_error_t = e.t;
}

// The session rebuilt from its events, its items counted from item_done
// events (a log without any says nothing about items, and goodput then
// counts completed sessions: settle_goodput).
SessionRecord Accumulator::rebuilt(const Live& live) const {
  SessionRecord r = live.rebuilt;
  r.items_done = live.items_done;  // unknown after all if no item_done line comes (settle_goodput)
  return r;
}

void Accumulator::event_end(Live& live, const EventRecord& e) {
  // The last line of a session that dies asleep or fails fast repeats its error.
  if (repeats_last_error(e.outcome) && live.last_status != 0) {
    live.rebuilt.repeated_lines += 1;
    error_line(live.rebuilt, live.last_status) += 1;
    if (counts_in_hours(live, e.t)) {
      Hour& h = hour(e.t);
      (live.last_status == 429 ? h.ev_429 : live.last_status == 401 ? h.ev_401 : h.ev_other) += 1;
    }
  }
  if (!sessions_from_events_) return;
  SessionRecord r = rebuilt(live);
  r.end_s = e.t;
  r.outcome = outcome_from_name(e.outcome).value_or(Outcome::failed);
  add_record(r);  // kept only when it started inside the window
}

void Accumulator::add_event(const EventRecord& e) {
  saw_events_ = true;
  if (e.kind == EventKind::arrival) {
    // The demand profile counts pings; notifications and anchors are scheduled.
    bool ping = e.item_kind.empty() ||
                e.item_kind == session_log::item_kind_name(session_log::ItemKind::ping);
    if (!outside(e.t, e.t) && ping) hour(e.t).arrivals += 1;
    return;
  }
  if (e.sid.empty() || e.kind == EventKind::superseded || e.kind == EventKind::defer) return;
  last_event_t_ = std::max(last_event_t_, e.t);
  auto [it, fresh] = live_.try_emplace(std::string(e.sid));
  Live& live = it->second;
  if (fresh) {
    live.since = e.t;
    live.rebuilt.start_s = e.t;
    live.rebuilt.working_s = live.rebuilt.blocked_s = live.rebuilt.asleep_s = 0;
    live.rebuilt.api_calls = 0;
  }
  switch (e.kind) {
    case EventKind::call:
      attribute(live, e.t, live.phase);
      live.phase = Phase::calling;
      live.rebuilt.api_calls += 1;
      if (counts_in_hours(live, e.t)) hour(e.t).ev_calls += 1;
      break;
    case EventKind::resp:
      // Waiting on an error answer is blocked; on a good one, working.
      attribute(live, e.t, e.status >= 400 ? Phase::calling : Phase::working);
      live.phase = Phase::working;
      if (e.status >= 400) {
        event_error(live, e);
      } else {
        live.run = 0;
        live.last_error_t = kUnknown;
      }
      break;
    case EventKind::sleep:
      attribute(live, e.t, live.phase == Phase::calling ? Phase::calling : Phase::working);
      live.phase = Phase::asleep;
      if (known(e.dur)) {
        live.slept_with_dur = true;
        // The sleep after the k-th error in a row is step k; logs number steps
        // from 0 or from 1, so the session's own count is the one to trust.
        size_t step = static_cast<size_t>(std::max(0, live.run - 1));
        if (sleep_samples_.size() <= step) sleep_samples_.resize(step + 1);
        sleep_samples_[step].push_back(e.dur);
      }
      break;
    case EventKind::wake:
      attribute(live, e.t, Phase::asleep);
      live.phase = Phase::working;
      break;
    case EventKind::end:
      attribute(live, e.t, live.phase);
      event_end(live, e);
      live_.erase(it);
      break;
    case EventKind::item_done:
      attribute(live, e.t, live.phase == Phase::asleep ? Phase::asleep : Phase::working);
      live.items_done += 1;
      saw_item_done_ = true;
      break;
    default:  // launch, item_start: working from here
      attribute(live, e.t, live.phase == Phase::asleep ? Phase::asleep : Phase::working);
      break;
  }
}

void Accumulator::end_live_sessions() {
  if (!sessions_from_events_ || live_.empty()) return;
  std::vector<std::pair<std::string, Live>> open(live_.begin(), live_.end());
  live_.clear();
  // In the order they started (then by name): the same sums whatever the map's order.
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.rebuilt.start_s, a.first) <
           std::tie(b.second.rebuilt.start_s, b.first);
  });
  for (auto& [sid, live] : open) {
    attribute(live, last_event_t_, live.phase);
    SessionRecord r = rebuilt(live);
    r.end_s = std::max(last_event_t_, r.start_s);
    r.outcome = Outcome::in_flight;
    add_record(r);
  }
}

}  // namespace retrystorm::incident
