// Accumulator::finish: the streamed sums become the report's figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/incident/accumulator.hpp"
#include "analysis/incident/stats.hpp"

namespace retrystorm::incident {

namespace {

using text::kHour;
using text::kMinute;
constexpr double kPinnedWindow = 60;   // failures within a minute of the deadline are pinned
constexpr double kNearCeiling = 0.6;   // fake saturation: L at least this share of the ceiling
constexpr double kLowLoad = 0.35;      // a failing hour is low load below this utilization
constexpr double kAllFailed = 0.9;     // ... when at least this share of its sessions failed
constexpr double kConstantCv = 0.25;   // error lines per session this even are "constant"
constexpr double kLadderReach = 0.05;  // a ladder step needs this share of first-step samples
constexpr size_t kMaxMinuteBars = 240;

int64_t hour_of(double t) {
  return static_cast<int64_t>(std::floor(t / kHour));
}

// Most in flight per hour, from every session's start and end.
std::vector<double> peaks(std::deque<double>& starts, std::deque<double>& ends, int64_t h0,
                          size_t n) {
  std::vector<double> peak(n, 0.0);
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  size_t i = 0, j = 0;
  double cur = 0;
  int64_t at = h0;
  auto mark = [&](int64_t h) {
    if (h >= h0 && h < h0 + static_cast<int64_t>(n))
      peak[static_cast<size_t>(h - h0)] = std::max(peak[static_cast<size_t>(h - h0)], cur);
  };
  auto next_t = [&] {
    bool end_first = j < ends.size() && (i == starts.size() || ends[j] <= starts[i]);
    return end_first           ? ends[j]
           : i < starts.size() ? starts[i]
                               : std::numeric_limits<double>::infinity();
  };
  // A level counts in an hour only if it lasts there: not the level before an
  // event at the hour's first instant, nor one between events at one instant.
  while (i < starts.size() || j < ends.size()) {
    bool end_first = j < ends.size() && (i == starts.size() || ends[j] <= starts[i]);
    double t = end_first ? ends[j] : starts[i];
    const int64_t ht = hour_of(t);
    while (at < ht) {
      ++at;
      if (at < ht || t > static_cast<double>(ht) * kHour) mark(at);
    }
    cur += end_first ? -1 : 1;
    end_first ? ++j : ++i;
    if (next_t() > t) mark(ht);
  }
  return peak;
}

// The deadline durations are pinned to: the start of the densest minute of
// them, when it holds at least `share` of them (and `least` in all).
// Sorts `failed` in place.
double pinned_deadline(std::deque<float>& failed, size_t least, double share) {
  if (failed.size() < least) return kUnknown;
  std::sort(failed.begin(), failed.end());
  size_t best = 0, best_at = 0;
  for (size_t a = 0, b = 0; a < failed.size(); ++a) {
    while (b < failed.size() && failed[b] <= failed[a] + kPinnedWindow) ++b;
    if (b - a > best) best = b - a, best_at = a;
  }
  if (best < share * failed.size() || failed[best_at] < kPinnedWindow) return kUnknown;
  return std::round(failed[best_at] / kMinute) * kMinute;
}

// The scheduler's own concurrency ceiling, as the post-mortem computes it:
// the deadline over the launch interval (30 min / 5 min = 6). A scheduler
// that launches at most one session a tick shows its tick in the sorted
// starts: no two closer than about one tick (less its launch jitter).
// Unknown for fewer than kTickSamples launches or launches closer than
// kMinTick: then nothing in the log says there is a tick.
constexpr size_t kTickSamples = 20;
constexpr double kMinTick = 60;
double tick_ceiling(const std::deque<double>& sorted_starts, double deadline_s) {
  if (!known(deadline_s) || deadline_s <= 0 || sorted_starts.size() < kTickSamples) return kUnknown;
  double gap = INFINITY;
  for (size_t i = 1; i < sorted_starts.size(); ++i)
    gap = std::min(gap, sorted_starts[i] - sorted_starts[i - 1]);
  return gap >= kMinTick ? deadline_s / gap : kUnknown;
}

// The hour's queue at session open; unknown without the columns.
void fill_queue(HourRow& row, double qn, double qsum, double qmax, double cn, double csum,
                double cmax) {
  row.opens_with_queue = qn;
  if (qn > 0) row.queue_mean = qsum / qn, row.queue_max = qmax;
  if (cn > 0) row.counter_mean = csum / cn, row.counter_max = cmax;
}

std::vector<double> minute_bars(const std::deque<float>& d, size_t bars) {
  std::vector<double> out(bars, 0.0);
  for (float v : d) {
    size_t m = static_cast<size_t>(std::max(0.0, std::floor(v / kMinute)));
    out[std::min(m, bars - 1)] += 1;
  }
  return out;
}

// Ladder steps from samples per step: the median of each step most
// sessions reach.
std::vector<double> ladder_from(std::vector<std::vector<double>>& samples) {
  std::vector<double> steps;
  if (samples.empty()) return steps;
  double first = static_cast<double>(samples[0].size());
  for (auto& s : samples) {
    if (s.size() < 3 || static_cast<double>(s.size()) < kLadderReach * first) break;
    steps.push_back(std::round(median(s)));
  }
  return steps;
}

// The warning for records dropped as outliers.
std::string outlier_warning(double dropped, double anchor, double first) {
  return fmt::format(
      "{:.0f} {} dropped as outliers: their times lie more than {:.0f} days from the bulk "
      "of the log (around {}); the first at {:.0f} s. A broken clock or a stray row?",
      dropped, dropped == 1 ? "record" : "records", Accumulator::kOutlierSpan / text::kDay,
      format_clock(anchor), first);
}

// Fake saturation: near the ceiling, almost nothing completes.
void find_fake_saturation(Report& r) {
  auto& f = r.fake;
  f.threshold = kNearCeiling;
  double f_l = 0, f_done = 0, f_sleep = 0, f_split = 0;
  for (const auto& row : r.hours) {
    bool near = known(r.ceiling) && row.in_flight >= kNearCeiling * r.ceiling && row.in_flight > 0;
    bool idle = row.completions <= std::max(1.0, 0.1 * row.launches);
    if (!near || !idle) continue;
    f.hours.push_back(row.hour);
    f_l += row.in_flight;
    f_done += row.completions;
    if (known(row.asleep)) f_sleep += row.asleep, f_split += row.working + row.blocked + row.asleep;
  }
  if (!f.hours.empty()) {
    f.in_flight = f_l / static_cast<double>(f.hours.size());
    f.completions_per_hour = f_done / static_cast<double>(f.hours.size());
    if (f_split > 0) f.asleep_share = f_sleep / f_split;
  }
}

// Failures against load: how they follow it, and the hours that fail at low load.
void set_failure_load(Report& r) {
  auto& fl = r.failure_load;
  std::vector<double> loads, fail_shares;
  for (const auto& row : r.hours) {
    if (row.launches > 0 && known(row.failure_share)) {
      loads.push_back(row.in_flight);
      fail_shares.push_back(row.failure_share);
    }
  }
  fl.correlation = correlation(loads, fail_shares);
  for (const auto& row : r.hours) {
    // Only failures after error answers speak for a dead dependency: crashes on a
    // healthy day and a clean deadline kill in the hour after recovery do not.
    bool low = known(row.utilization) && row.utilization <= kLowLoad;
    if (!low || row.launches < 1 || row.erring_failure_share < kAllFailed) continue;
    fl.low_load_failing.push_back(row.hour);
    fl.low_load_sessions += row.launches;
    fl.low_load_failed += row.erring_failure_share * row.launches;
    fl.low_load_peak = std::max(fl.low_load_peak, row.peak);
  }
}

}  // namespace

double Accumulator::killed_deadline() {
  if (options_.deadline_s) return *options_.deadline_s;
  return pinned_deadline(killed_durations_, 1, 0.5);
}

// What the hour rows add up to, for the figures over the whole log.
struct Accumulator::HourTotals {
  double busy = 0, durations = 0;         // seconds in flight, of session durations
  double gauged = 0;                      // per-second CSV: the seconds with a concurrency
  double work = 0, block = 0, sleep = 0;  // mean sessions in each state, summed over hours
  bool calls_known = false;               // some hour counted its calls
};

Report Accumulator::finish() {
  if (!anchor_) settle();
  end_live_sessions();
  settle_goodput();
  settle_whole_hours();
  Report r = std::move(totals_);
  if (dropped_ > 0) {
    r.outliers = dropped_;
    r.warnings.push_back(outlier_warning(dropped_, *anchor_, first_dropped_));
  }
  r.unit = unit_;
  r.findings.clear();
  for (size_t o = 0; o < outcome_counts_.size(); ++o)
    if (outcome_counts_[o] > 0)
      r.outcomes.push_back({outcome_name(static_cast<Outcome>(o)), outcome_counts_[o]});
  if (hours_.empty()) {
    r.unknowns = unknowns_;
    r.findings = diagnose(r);
    return r;
  }
  // Sessions' rows split their time into working, blocked and asleep.
  bool rows_split = split_sessions_ > 0 && split_sessions_ >= r.sessions - 0.5;
  HourTotals totals = add_hours(r, rows_split);
  set_little(r, totals);
  for (auto& [day, row] : days_) {
    row.day = day;
    r.days.push_back(row);
  }
  set_occupancy(r, totals, rows_split);
  find_fake_saturation(r);
  set_error_signal(r);
  set_durations(r);
  set_ladder(r);
  set_failure_load(r);
  r.unknowns = unknowns_;
  r.findings = diagnose(r);
  return r;
}

// The hours the report covers, its ceiling and one row per hour.
Accumulator::HourTotals Accumulator::add_hours(Report& r, bool rows_split) {
  int64_t h0 = hours_.begin()->first, h1 = hours_.rbegin()->first;
  // A window given is the span, quiet hours at its edges included, as far as
  // records may lie (the outlier bound).
  double lo = *anchor_ - kOutlierSpan, hi = *anchor_ + kOutlierSpan;
  if (options_.from_s) h0 = std::min(h0, hour_of(std::max(*options_.from_s, lo)));
  if (options_.to_s)
    h1 = std::max(h1, hour_of(std::min(std::nextafter(*options_.to_s, -1e300), hi)));
  size_t n = static_cast<size_t>(h1 - h0 + 1);
  r.first_s = h0 * kHour;
  r.last_s = (h1 + 1) * kHour;
  std::vector<double> peak =
      saw_buckets_ ? std::vector<double>(n, 0.0) : peaks(starts_, ends_, h0, n);
  double top = *std::max_element(peak.begin(), peak.end());
  r.peak = std::max(top, bucket_peak_);
  set_ceiling(r);
  HourTotals t;
  for (size_t k = 0; k < n; ++k) {
    auto it = hours_.find(h0 + static_cast<int64_t>(k));
    Hour h = it == hours_.end() ? Hour{} : it->second;
    HourRow row = hour_row(h, h0 + static_cast<int64_t>(k), r.ceiling, rows_split);
    if (!saw_buckets_) row.peak = peak[k];
    if ((saw_events_ ? h.ev_calls : h.row_calls) > 0) t.calls_known = true;
    t.busy += h.busy_s;
    t.gauged += h.gauged_s;
    t.durations += h.duration_sum;
    if (known(row.working)) t.work += row.working, t.block += row.blocked, t.sleep += row.asleep;
    r.hours.push_back(row);
  }
  return t;
}

// The concurrency ceiling: --slots, else the scheduler's tick, else the peak.
void Accumulator::set_ceiling(Report& r) {
  if (options_.slots) {
    r.ceiling = *options_.slots;
    r.ceiling_source = "--slots";
  } else if (double tick = saw_buckets_ ? kUnknown : tick_ceiling(starts_, killed_deadline());
             known(tick)) {
    // The peak in flight overstates the ceiling: a session asleep at its
    // deadline lives until the watchdog looks, so one more fits at the edge.
    r.ceiling = tick;
    r.ceiling_source = "deadline / launch interval";
  } else if (r.peak > 0) {
    r.ceiling = r.peak;
    r.ceiling_source = "peak in flight";
  }
}

// The seconds an hour's means are taken over: a per-second CSV's, the
// seconds its rows cover; with --from/--to, the part of the hour inside the
// window (time in flight is clipped to it); else the whole hour.
double Accumulator::hour_span(const Hour& h, int64_t hour) const {
  if (saw_buckets_) return h.gauged_s > 0 ? h.gauged_s : kHour;
  const double from = clip_from(hour * kHour), to = clip_to((hour + 1) * kHour);
  return to > from ? to - from : kHour;
}

// One hour's row: what the hour collected, as rates and shares.
HourRow Accumulator::hour_row(const Hour& h, int64_t hour, double ceiling, bool rows_split) const {
  HourRow row;
  const double span = hour_span(h, hour);
  row.hour = hour;
  row.launches = h.launches;
  row.retries = h.retries;
  // A per-second CSV's hour without a concurrency has no L to give.
  row.in_flight = saw_buckets_ && h.gauged_s == 0 ? kUnknown : h.busy_s / span;
  row.mean_duration_s = h.launches > 0 && !saw_buckets_ ? h.duration_sum / h.launches : kUnknown;
  row.little = known(row.mean_duration_s) ? h.launches * row.mean_duration_s / span : kUnknown;
  row.utilization = known(ceiling) && ceiling > 0 ? row.in_flight / ceiling : kUnknown;
  row.peak = h.peak;
  row.completions = h.completions;
  row.failures = h.failures;
  row.failure_share = h.launches > 0 ? h.started_failed / h.launches : kUnknown;
  row.erring_failure_share = h.launches > 0 ? h.started_failed_erring / h.launches : 0;
  row.goodput = h.goodput;
  if (saw_events_) {
    row.working = h.ev_working_s / span;
    row.blocked = h.ev_blocked_s / span;
    row.asleep = h.ev_asleep_s / span;
  } else if (rows_split) {
    row.working = h.row_working_s / span;
    row.blocked = h.row_blocked_s / span;
    row.asleep = h.row_asleep_s / span;
  }
  bool ev = saw_events_;
  row.lines_429 = ev ? h.ev_429 : h.row_429;
  row.lines_401 = ev ? h.ev_401 : h.row_401;
  row.errors = row.lines_429 + row.lines_401 + (ev ? h.ev_other : h.row_other);
  if (ev) row.arrivals = h.arrivals;
  fill_queue(row, h.queue_n, h.queue_sum, h.queue_max, h.counter_n, h.counter_sum, h.counter_max);
  double calls = ev ? h.ev_calls : h.row_calls;
  if (calls > 0) {
    row.error_share = std::min(1.0, (ev ? h.ev_answers : h.row_answers) / calls);
  } else if (row.errors > 0 && h.completions == 0) {
    row.error_share = 1.0;
  }
  return row;
}

// Little's law over the log's span: L, and lambda W when durations are known.
void Accumulator::set_little(Report& r, const HourTotals& t) {
  // Over the window given, else the per-second CSV's rows, else the log's
  // state window (first launch to last end).
  r.l_from_s = std::max(r.first_s, clip_from(r.first_s));
  r.l_to_s = std::min(r.last_s, clip_to(r.last_s));
  if (saw_buckets_) {
    r.l_from_s = std::max(r.l_from_s, bucket_from_);
    r.l_to_s = std::max(std::min(r.l_to_s, bucket_to_), r.l_from_s + 1);
  } else if (!options_.from_s && !options_.to_s && !starts_.empty()) {
    r.l_from_s = starts_.front();  // sorted by peaks()
    r.l_to_s = std::max(ends_.empty() ? r.l_from_s : ends_.back(), r.l_from_s + 1);
  }
  double span = saw_buckets_ && t.gauged > 0 ? t.gauged : r.l_to_s - r.l_from_s;
  // A per-second CSV none of whose rows gives a concurrency has no L to give.
  r.mean_in_flight = saw_buckets_ && t.gauged == 0 ? kUnknown : t.busy / span;
  if (r.sessions > 0 && !saw_buckets_) {
    r.mean_duration_s = t.durations / r.sessions;
    r.little = r.sessions / span * r.mean_duration_s;
  }
}

// Occupancy split over the whole log, and the figures the log's columns miss.
void Accumulator::set_occupancy(Report& r, const HourTotals& t, bool rows_split) {
  double split_total = t.work + t.block + t.sleep;
  if ((saw_events_ || rows_split) && split_total > 0) {
    r.occupancy.source = saw_events_ ? "events" : "session columns";
    r.occupancy.working = t.work / split_total;
    r.occupancy.blocked = t.block / split_total;
    r.occupancy.asleep = t.sleep / split_total;
  } else {
    add_unknown("occupancy split (working, blocked, asleep)",
                saw_buckets_ ? "a per-second log counts requests in flight, not their state"
                             : "the sessions have no time_working_s, time_blocked_s and "
                               "time_asleep_s columns and no events.jsonl was given");
  }
  if (!known(r.items_done) && !saw_buckets_)
    add_unknown("goodput in items", "no items_done column: goodput counts completed " + unit_);
  if (saw_buckets_)
    add_unknown("time in system (W)",
                "a per-second log has no per-request durations; L is its concurrency column");
  if (!t.calls_known && !saw_buckets_)
    add_unknown("error share of calls", "no n_api_calls column and no call events");
}

// Errors as a retry signal: lines per session, how even, and how they follow launches.
void Accumulator::set_error_signal(Report& r) {
  auto& e = r.errors;
  e.sessions = r.sessions;
  if (e.sessions > 0) e.per_session = e.lines / e.sessions;
  if (e.with_errors > 0) {
    e.per_erring_session = erring_sum_ / e.with_errors;
    double var = erring_sumsq_ / e.with_errors - e.per_erring_session * e.per_erring_session;
    if (e.per_erring_session > 0) e.cv = std::sqrt(std::max(0.0, var)) / e.per_erring_session;
  }
  for (size_t k = 0; k < error_histogram_.size(); ++k)
    if (error_histogram_[k] > 0) e.histogram.push_back({static_cast<int>(k), error_histogram_[k]});
  std::vector<double> launches, lines;
  for (const auto& row : r.hours) {
    if (row.launches > 0 || row.errors > 0) {
      launches.push_back(row.launches);
      lines.push_back(row.errors);
    }
  }
  if (e.lines > 0) e.correlation = correlation(launches, lines);
  e.nearly_constant =
      e.with_errors >= 10 && known(e.cv) && e.cv <= kConstantCv && e.per_erring_session >= 2;
}

// Durations and the deadline they are pinned to.
void Accumulator::set_durations(Report& r) {
  auto& d = r.durations;
  d.failures = static_cast<double>(failed_durations_.size());
  if (options_.deadline_s) {
    d.deadline_s = *options_.deadline_s;
    d.deadline_source = "--deadline";
  } else if (known(d.deadline_s = killed_deadline())) {
    d.deadline_source = "killed sessions";
  } else {
    // A cluster of failures shorter than completed sessions (failing fast)
    // is not the deadline: no session outlives it.
    d.deadline_s = pinned_deadline(failed_durations_, 5, 0.25);
    float longest_ok = 0;
    for (float v : ok_durations_) longest_ok = std::max(longest_ok, v);
    if (known(d.deadline_s) && longest_ok > d.deadline_s + kPinnedWindow) d.deadline_s = kUnknown;
    if (known(d.deadline_s)) d.deadline_source = "failed durations";
  }
  for (float v : failed_durations_)
    if (known(d.deadline_s) && std::abs(v - d.deadline_s) <= kPinnedWindow) d.pinned += 1;
  if (d.failures > 0 && known(d.deadline_s)) d.pinned_share = d.pinned / d.failures;
  if (!known(d.deadline_s))
    add_unknown("deadline", "no --deadline and the failed durations are not pinned to one value");
  float longest = 0;
  for (float v : ok_durations_) longest = std::max(longest, v);
  for (float v : failed_durations_) longest = std::max(longest, v);
  double reach = std::max<double>(longest, known(d.deadline_s) ? d.deadline_s + kPinnedWindow : 0);
  size_t bars = std::min(kMaxMinuteBars, static_cast<size_t>(reach / kMinute) + 2);
  d.minute_ok = minute_bars(ok_durations_, bars);
  d.minute_failed = minute_bars(failed_durations_, bars);
  d.median_ok_s = median(ok_durations_);
  d.median_failed_s = median(failed_durations_);
}

// The ladder against the deadline (set_durations first: it finds the deadline).
void Accumulator::set_ladder(Report& r) {
  auto& l = r.ladder;
  if (!options_.ladder_s.empty()) {
    l.steps_s = options_.ladder_s;
    l.source = "--ladder";
  } else if (!(l.steps_s = ladder_from(sleep_samples_)).empty()) {
    l.source = "sleep events";
  } else if (!(l.steps_s = ladder_from(gap_samples_)).empty()) {
    l.source = "gaps between errors";
  } else {
    add_unknown("backoff ladder", saw_events_ ? "the events show fewer than three sleeps a step"
                                              : "no --ladder and no events.jsonl to infer it from");
  }
  if (l.steps_s.empty()) return;
  l.sum_s = 0;
  for (double s : l.steps_s) l.sum_s += s;
  l.deadline_s = r.durations.deadline_s;
  if (known(l.deadline_s)) l.over_s = l.sum_s - l.deadline_s;
  // Gaps show only the steps sessions lived to finish: a sum that fits may
  // still be the start of a ladder the deadline cut short.
  if (l.source == "gaps between errors" && known(l.over_s) && l.over_s <= 0) {
    l.over_s = kUnknown;
    add_unknown("ladder beyond the deadline",
                "the gaps between errors show only the steps sessions finished; give --ladder "
                "or sleep events with dur");
  }
}

}  // namespace retrystorm::incident
