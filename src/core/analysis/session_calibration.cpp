#include "analysis/session_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/session_metrics.hpp"
#include "engines/montecarlo.hpp"
#include "engines/sessions/clock.hpp"
#include "engines/sessions/session_engine.hpp"
#include "parallel/thread_pool.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm {

using sessions::Outcome;
using sessions::SessionRow;
using sessions::SessionRun;
using text::fixed_text;
using text::kDay;
using text::kHour;
using text::kMinute;

const char* calibration_verdict_name(CalibrationVerdict v) {
  switch (v) {
    case CalibrationVerdict::holds:
      return "holds";
    case CalibrationVerdict::off:
      return "off";
    case CalibrationVerdict::conflict:
      return "conflict";
  }
  return "?";
}

namespace {

// Per seed, every figure's value; a claim that holds or not is 1 or 0.
using Figures = std::map<std::string, double>;

// Which of the 06:30 notifications of day two the first session launched
// after the recovery committed: the events say which session did each item.
class NotificationTrace : public sessions::SessionSink {
 public:
  explicit NotificationTrace(double arrival_s) : arrival_s_(arrival_s) {}
  void event(const sessions::SessionEvent& e) override {
    if (e.item_kind != sessions::ItemKind::notification) return;
    if (e.kind == sessions::SessionEvent::arrival && std::abs(e.t_s - arrival_s_) < 1)
      watched_[e.item] = -1;
    if (e.kind == sessions::SessionEvent::item_start && watched_.count(e.item))
      starters_.insert(e.session);
    if (e.kind == sessions::SessionEvent::item_done && watched_.count(e.item))
      watched_[e.item] = e.session;
  }
  bool started_by(int session) const { return starters_.count(session) > 0; }
  int arrived() const { return static_cast<int>(watched_.size()); }
  int done_by(int session) const {
    return static_cast<int>(std::count_if(watched_.begin(), watched_.end(),
                                          [&](const auto& w) { return w.second == session; }));
  }
  int done() const {
    return static_cast<int>(std::count_if(watched_.begin(), watched_.end(),
                                          [](const auto& w) { return w.second >= 0; }));
  }
  bool any_done_by_session_before(const SessionRun& run, double t) const {
    return std::any_of(watched_.begin(), watched_.end(), [&](const auto& w) {
      return w.second >= 0 && run.sessions[static_cast<size_t>(w.second)].start_s < t;
    });
  }

 private:
  double arrival_s_;
  std::map<int, int> watched_;  // item -> the session that committed it; -1 = not done
  std::set<int> starters_;      // sessions that started work on one of them
};

// The run's metrics over [from, to) of session starts.
SessionMetrics metrics_over(SessionRun& run, double from, double to) {
  run.scenario.sessions.focus_from_s = from;
  run.scenario.sessions.focus_to_s = to;
  return session_metrics(run);
}

// 429 lines of the error log written in [from, to): every answer, and the
// final line of a session that died on a 429.
double lines_429_between(const SessionRun& run, double from, double to) {
  double lines = 0;
  const auto& h = run.hourly;
  for (size_t i = 0; i < h.size(); ++i)
    if (h.t_s[i] >= from && h.t_s[i] < to) lines += h.errors_429[i];
  for (const SessionRow& r : run.sessions)
    if (r.terminal_error == 429 && r.end_s >= from && r.end_s < to) ++lines;
  return lines;
}

const SessionRow* first_launched_at_or_after(const SessionRun& run, double t) {
  for (const SessionRow& r : run.sessions)
    if (r.start_s >= t) return &r;
  return nullptr;
}

// Day one's and day two's figures of the two-day 429 outage.
void outage_days(SessionRun& run, Figures& f) {
  SessionMetrics two = metrics_over(run, kDay, 3 * kDay);
  f["outage.launched"] = two.launched;
  f["outage.completed"] = two.completed;
  for (int day : {1, 2}) {
    std::string d = "outage.day" + std::to_string(day);
    SessionMetrics m = metrics_over(run, day * kDay, (day + 1) * kDay);
    f[d + ".lines_429"] = lines_429_between(run, day * kDay, (day + 1) * kDay);
    f[d + ".lines_per_session"] = m.lines_429_per_session;
    f[d + ".failed"] = m.failed;
    f[d + ".pinned"] = std::round(m.pinned_share * m.failed);
    f[d + ".pinned_share"] = m.pinned_share;
    f[d + ".correlation"] = m.launches_429_correlation;
  }
}

// 01:00-05:00 of both days: a few launches an hour, few in flight, all failed.
void outage_quiet_hours(const SessionRun& run, Figures& f) {
  double hours = 0, one_to_four = 0, peak = 0;
  int launched = 0, failed = 0;
  for (const SessionHourRow& h : session_hours(run)) {
    double hour = std::fmod(h.t_s, kDay) / kHour;
    if (h.t_s < kDay || hour < 1 || hour >= 5) continue;
    ++hours;
    one_to_four += h.launches >= 1 && h.launches <= 4;
    peak = std::max(peak, h.peak_in_flight);
  }
  for (const SessionRow& r : run.sessions) {
    double hour = std::fmod(r.start_s, kDay) / kHour;
    if (r.start_s < kDay || hour < 1 || hour >= 5) continue;
    ++launched;
    failed += sessions::failed(r.outcome);
  }
  f["outage.quiet.hours_1_to_4"] = hours > 0 ? one_to_four / hours : 0;
  f["outage.quiet.peak"] = peak;
  f["outage.quiet.all_failed"] = launched > 0 && failed == launched;
}

// 13:00-16:00 of day one: the fake saturation.
void outage_busy_afternoon(const SessionRun& run, Figures& f) {
  double peak = 0, occupied = 0, launches = 0, most_done = 0;
  for (const SessionHourRow& h : session_hours(run)) {
    if (h.t_s < kDay + 13 * kHour || h.t_s >= kDay + 16 * kHour) continue;
    peak = std::max(peak, h.peak_in_flight);
    occupied += (h.working + h.blocked + h.asleep) / 3;
    launches += h.launches / 3;
    most_done = std::max(most_done, h.completions);
  }
  f["outage.busy.peak"] = peak;
  f["outage.busy.rho"] = occupied / 6;
  f["outage.busy.launches_per_hour"] = launches;
  f["outage.busy.most_completions"] = most_done;
}

// The post's "first session after the recovery" is the one that opened the
// backlog (the 22:15 session, 20 items): the first launched at or after
// `at` that started one of the fourteen or opened a batch that size. A
// session launched while a sleeper still held them opens only a new ping.
const SessionRow* backlog_opener(const SessionRun& run, const NotificationTrace& trace, double at) {
  for (const SessionRow& r : run.sessions)
    if (r.start_s >= at && (trace.started_by(r.id) || r.items_in >= 14)) return &r;
  return nullptr;
}

// Why the session that opened the backlog after the recovery did not
// commit all fourteen 06:30 notifications (or "holds"); counted on the
// calibration page.
std::string why_not_first(const SessionRun& run, const NotificationTrace& trace,
                          const SessionRow* opener) {
  double at = 2 * kDay + 22 * kHour;
  if (opener && trace.arrived() == 14 && trace.done_by(opener->id) == 14) return "holds";
  if (trace.any_done_by_session_before(run, at)) return "holder_woke";
  if (!opener) return "no_wake_up";
  if (opener->outcome == Outcome::crashed) return "crashed";
  return "cut";
}

// 22:00 of day two: the recovery hour.
void outage_recovery(const SessionRun& run, const NotificationTrace& trace, Figures& f) {
  double at = 2 * kDay + 22 * kHour;
  for (const SessionHourRow& h : session_hours(run)) {
    if (h.t_s == at) f["recovery.429_in_22"] = h.errors_429;
    if (h.t_s == at + kHour) f["recovery.429_in_23"] = h.errors_429;
    if (h.t_s == at) f["recovery.items_per_hour"] = h.items_done;
  }
  double done = 0;
  for (size_t i = 0; i < run.series.size(); ++i)
    if (run.series.t_s[i] >= at && run.series.t_s[i] < at + 1800) done += run.series.items_done[i];
  f["recovery.rows_in_30_min"] = done;
  int cap = run.scenario.sessions.batch_cap;
  const SessionRow* first = first_launched_at_or_after(run, at);
  const SessionRow* later = first_launched_at_or_after(run, at + 1800);
  // A seed with no such session has no value (not a zero).
  if (first) f["recovery.counter_first"] = std::min(cap, first->queue_unread_at_open);
  if (later) f["recovery.counter_30_min"] = std::min(cap, later->queue_unread_at_open);
  const SessionRow* opener = backlog_opener(run, trace, at);
  f["recovery.notifications_first_session"] =
      opener && trace.arrived() == 14 && trace.done_by(opener->id) == 14;
  f["recovery.notifications_by_end"] = trace.arrived() == 14 && trace.done() == 14;
  f["recovery.why_not." + why_not_first(run, trace, opener)] = 1;
}

Figures outage_figures(const Scenario& s) {
  NotificationTrace trace(2 * kDay + s.items.notification_at_s);
  SessionRun run = sessions::run_sessions(s, {&trace});
  Figures f;
  outage_days(run, f);
  outage_quiet_hours(run, f);
  outage_busy_afternoon(run, f);
  outage_recovery(run, trace, f);
  return f;
}

// The 22:15 notifications without the model's limits, to state the
// conflict in numbers: no unrelated crash, or no cap on a chain's
// deliveries (the backlog picked up at every next tick), or neither.
// Only the figures the note cites.
Figures outage_variant(Scenario s, const std::string& name, bool crashes, bool capped) {
  if (!crashes) s.sessions.crash_probability = 0;
  if (!capped) s.sessions.max_deliveries = 100;  // the key's maximum: a chain outlives the run
  Figures all = outage_figures(s), f;
  for (const char* figure :
       {"outage.launched", "outage.day2.lines_429", "recovery.notifications_first_session"})
    f["variant." + name + "." + figure] = all[figure];
  return f;
}

Figures crash_free_figures(const Scenario& s) {
  return outage_variant(s, "crash_free", false, true);
}
Figures uncapped_figures(const Scenario& s) {
  return outage_variant(s, "uncapped", true, false);
}
Figures neither_figures(const Scenario& s) {
  return outage_variant(s, "neither", false, false);
}

Figures normal_day_figures(const Scenario& s) {
  SessionRun run = sessions::run_sessions(s);
  SessionMetrics m = session_metrics(run);
  Figures f;
  f["normal.launched"] = m.launched;
  f["normal.completed"] = m.completed;
  f["normal.median_success_min"] = m.median_success_s / kMinute;
  f["normal.peak"] = m.peak_in_flight;
  f["normal.mean_in_flight"] = m.mean_in_flight;
  f["normal.mean_duration_min"] = m.launched ? m.little_lambda_w * kDay / m.launched / kMinute : 0;
  f["normal.rho_day"] = m.mean_in_flight / 6;
  double busiest = 0;
  for (const SessionHourRow& h : session_hours(run)) {
    double in_flight = h.working + h.blocked + h.asleep;
    busiest = std::max(busiest, in_flight);
    f["normal.hour." + std::to_string(static_cast<int>(h.t_s / kHour))] = in_flight / 6;
  }
  f["normal.rho_busiest_hour"] = busiest / 6;
  return f;
}

Figures credential_figures(const Scenario& s) {
  SessionRun run = sessions::run_sessions(s);
  // The preset's focus: the morning, 00:00 to the end of the 08:00 hour.
  SessionMetrics m = session_metrics(run);
  Figures f;
  f["credential.mean_failed_min"] = m.mean_failed_s / kMinute;
  f["credential.mean_in_flight"] = m.mean_in_flight;
  f["credential.peak"] = m.peak_in_flight;
  // The outage alone, and the outage with the hour the credentials came back in.
  SessionMetrics outage = metrics_over(run, kDay + 6 * kHour, kDay + 8 * kHour);
  f["credential.mean_in_flight_outage"] = outage.mean_in_flight;
  f["credential.peak_outage"] = outage.peak_in_flight;
  f["credential.mean_in_flight_0600_0900"] =
      metrics_over(run, kDay + 6 * kHour, kDay + 9 * kHour).mean_in_flight;
  int launched = 0, completed = 0, crashed = 0;
  for (const SessionRow& r : run.sessions)
    if (r.start_s >= kDay + 8 * kHour && r.start_s < kDay + 9 * kHour) {
      ++launched;
      completed += r.outcome == Outcome::completed;
      crashed += r.outcome == Outcome::crashed;
    }
  f["credential.0800_launched"] = launched;
  f["credential.0800_all_done"] = launched > 0 && completed == launched;
  // The recovery itself: nothing but an unrelated crash kept a session from completing.
  f["credential.0800_none_cut"] = launched > 0 && completed + crashed == launched;
  return f;
}

Figures burst_figures(const Scenario& s) {
  SessionRun run = sessions::run_sessions(s);
  const SessionRow& r = run.sessions.at(0);
  Figures f;
  f["burst.opened_20"] = r.items_in == 20;
  f["burst.triage_min"] = (r.anchor_started_after_s - kMinute) / kMinute;
  f["burst.left_min"] = (s.client.deadline_s - r.anchor_started_after_s) / kMinute;
  f["burst.killed_at_30"] = r.outcome == Outcome::killed_working && r.duration_s() == 1800;
  return f;
}

// How a claim is checked against the per-seed values.
enum class Check {
  within_share,    // |mean - target| <= tolerance x target
  within,          // |mean - target| <= tolerance
  at_most,         // mean <= target
  at_least,        // mean >= target
  seeds_share,     // a yes/no claim: it holds in at least `tolerance` of the seeds
  conflict,        // cannot hold beside the claims the model keeps; shown, not judged
  seeds_conflict,  // a yes/no claim that conflicts: the seeds it holds in, not judged
};

struct Claim {
  const char* figure;
  const char* preset;
  const char* claim;
  double target;
  Check check;
  double tolerance;
  int digits;  // of the simulated value
  const char* note;
};

std::string tolerance_text(const Claim& c) {
  switch (c.check) {
    case Check::within_share:
      return "within " + fixed_text(c.tolerance * 100, 0) + " %";
    case Check::within:
      return "within " + fixed_text(c.tolerance, c.digits);
    case Check::at_most:
      return "at most " + fixed_text(c.target, c.digits);
    case Check::at_least:
      return "at least " + fixed_text(c.target, c.digits);
    case Check::seeds_share:
      return "in at least " + fixed_text(c.tolerance * 100, 0) + " % of seeds";
    case Check::conflict:
    case Check::seeds_conflict:
      return "none: conflicts";
  }
  return "";
}

bool within(const Claim& c, double mean) {
  constexpr double kSlack = 1e-9;  // a value printed at the bound holds
  switch (c.check) {
    case Check::within_share:
      return std::abs(mean - c.target) <= c.tolerance * c.target + kSlack;
    case Check::within:
      return std::abs(mean - c.target) <= c.tolerance + kSlack;
    case Check::at_most:
      return mean <= c.target + kSlack;
    case Check::at_least:
      return mean >= c.target - kSlack;
    default:
      return false;
  }
}

CalibrationRow judge(const Claim& c, const std::vector<double>& values, int seeds) {
  CalibrationRow row{c.figure, c.preset, c.claim, "", tolerance_text(c), CalibrationVerdict::off,
                     c.note};
  if (values.empty()) {
    row.simulated = "no seed has it";
    return row;
  }
  double n = static_cast<double>(values.size());
  if (c.check == Check::seeds_share || c.check == Check::seeds_conflict) {
    int holds = static_cast<int>(std::count(values.begin(), values.end(), 1.0));
    row.simulated = std::to_string(holds) + "/" + std::to_string(values.size()) + " seeds";
    if (c.check == Check::seeds_conflict)
      row.verdict = CalibrationVerdict::conflict;
    else if (holds >= c.tolerance * n - 1e-9)
      row.verdict = CalibrationVerdict::holds;
    return row;
  }
  MetricSummary m = summarize(values);
  row.simulated = fixed_text(m.mean, c.digits) + " (" + fixed_text(m.min, c.digits) + " / " +
                  fixed_text(m.median, c.digits) + " / " + fixed_text(m.max, c.digits) + ")";
  if (static_cast<int>(values.size()) < seeds)
    row.simulated += " in the " + std::to_string(values.size()) + " of " + std::to_string(seeds) +
                     " seeds that have it";
  if (c.check == Check::conflict)
    row.verdict = CalibrationVerdict::conflict;
  else if (within(c, m.mean))
    row.verdict = CalibrationVerdict::holds;
  return row;
}

}  // namespace

namespace {

constexpr const char* kNormal = "scheduler-normal-day";
constexpr const char* kOutage = "scheduler-429-outage";
constexpr const char* kCredential = "scheduler-credential-outage";
constexpr const char* kBurst = "scheduler-recovery-burst";

// Every quantitative claim of the post-mortem a preset reproduces, in the
// post's order. Tolerances: the presets' table's where it gives one
// (docs/sessions.md, "What the presets show"), issue 16's for the figures it adds,
// else stated here.
const Claim kClaims[] = {
    {"outage.launched", kOutage, "over the next two days it launched 210 sessions", 210,
     Check::within_share, 0.10, 0, "sessions launched on day one and day two (1d00:00-2d24:00)"},
    {"outage.completed", kOutage, "... and completed 13 of them", 13, Check::within, 5, 1,
     "same window; a count this small gets +-5 (10 % would be one session)"},
    {"outage.day1.lines_429", kOutage, "429s in the error log: 907 on the first day", 907,
     Check::within_share, 0.10, 0,
     "429 log lines written on day one: every 429 answer, and the last line of a session "
     "that died on a 429"},
    {"outage.day2.lines_429", kOutage, "... and 590 on the second", 590, Check::within_share, 0.10,
     0, "the same, day two"},
    {"normal.launched", kNormal, "normal day: 90 sessions launched", 90, Check::within, 15, 1,
     "the presets' tolerance (docs/sessions.md)"},
    {"normal.completed", kNormal, "normal day: 83 completed", 83, Check::within, 15, 1,
     "the presets' tolerance (docs/sessions.md)"},
    {"normal.median_success_min", kNormal, "median successful session 11.4 min", 11.4,
     Check::within, 1.5, 1, "the presets' tolerance (docs/sessions.md)"},
    {"normal.peak", kNormal, "peak concurrent sessions: 4", 4, Check::within, 1, 1,
     "presets' table: 3-5"},
    {"normal.mean_duration_min", kNormal, "L = 90/day x 12.7 min: mean session 12.7 min", 12.7,
     Check::within_share, 0.20, 1, "mean duration of every session launched"},
    {"normal.mean_in_flight", kNormal, "L ~ 0.79 sessions in flight on average", 0.79,
     Check::within, 0.2, 2, "time average over the day; presets' table 0.8 +- 0.2"},
    {"normal.rho_day", kNormal, "rho at c = 6 about 0.13 daily", 0.13, Check::within_share, 0.20, 3,
     "time-average in flight / 6"},
    {"normal.rho_busiest_hour", kNormal, "... 0.26 in the busiest hour", 0.26, Check::within_share,
     0.20, 3,
     "per seed, the busiest hour's time-average in flight / 6 (L / c, and L = lambda S as the "
     "post computes it). This is the claim's reading: the post measured one healthy day, and "
     "one day's busiest hour is the maximum of that day's noisy hours, above the busiest hour "
     "of a mean day (next row). Issue 16 asks within 20 %. Calibrated by the cost of items: "
     "the post puts a session's time in its own work ('a session opens sub-tasks, reads "
     "mail, writes an execution log') and items are cheap, so a ping's work is LN(55 s, 0.9) "
     "and housekeeping LN(420 s, 0.4) (were LN(132 s, 0.9) and LN(318 s, 0.6)); the median "
     "successful session stays at 11.0 min, and the busy hour's larger batches no longer "
     "stretch its sessions (this was 0.340)"},
    {"normal.rho_busiest_mean_hour", kNormal, "... 0.26 in the busiest hour (of the mean day)",
     0.26, Check::within_share, 0.20, 3,
     "the same, read as the busiest hour of the hour-by-hour mean over the seeds (14:00): one "
     "value, not a per-seed spread; shown beside the claim's reading (previous row)"},
    {"outage.quiet.hours_1_to_4", kOutage,
     "01:00-05:00 on both days: one to four sessions launched per hour", 0.9, Check::at_least, 0, 2,
     "per seed, the share of those eight hours with one to four launches; night pings are "
     "rare (0.84 an hour, half on day two) and a chain launches at most twice, so an hour "
     "with none is common. The post's nights read as one retry chain alive all night (one or "
     "two launches an hour, at most two in flight, rho 0.1-0.3); the model's cap of two "
     "deliveries ends it, and lifting the cap moves the two days off the post (3 deliveries: "
     "240 launched, 698 429 lines on day two; no cap: 323 and 1047), so the model keeps the "
     "cap and misses the nights"},
    {"outage.quiet.peak", kOutage, "... at most two in flight", 2, Check::at_most, 0, 2,
     "per seed, the highest peak of those hours: 2 in the median seed, 3 or 4 where a retry "
     "chain's second launch meets a new arrival's first (random arrivals, not one chain: "
     "previous row)"},
    {"outage.quiet.all_failed", kOutage, "... every one of them died", 1, Check::seeds_share, 0.9,
     0, "every session launched in those hours failed"},
    {"outage.day1.lines_per_session", kOutage, "7.2 429s per session on day one", 7.2,
     Check::within, 0.5, 2, "429 log lines per session launched; presets' table 6.5-7.5"},
    {"outage.day2.lines_per_session", kOutage, "7.0 on day two", 7.0, Check::within, 0.5, 2,
     "the same, day two"},
    {"outage.day1.correlation", kOutage,
     "hourly correlation 0.93 between session launches and 429s", 0.9, Check::at_least, 0, 3,
     "day one; presets' table: at least 0.9"},
    {"outage.day1.failed", kOutage, "120 failed sessions on day one", 120, Check::within_share,
     0.10, 1, "failed sessions launched on day one"},
    {"outage.day1.pinned", kOutage, "... 109 of them lasted 29m59s-30m30s", 109,
     Check::within_share, 0.10, 1, "the presets' table asks at least 90 % of the failed"},
    {"outage.day2.failed", kOutage, "day two: 73 failed", 73, Check::conflict, 0, 1,
     "failed sessions launched on day two. Conflicts with the post's own day two: 590 429 "
     "lines at 7.0 a session are 84 sessions (and 210 launched less day one's 907 / 7.2 = 126 "
     "leaves 84); a session on a dead day writes at most 7 (six answers and the final line), so "
     "73 failed sessions write at most 511, and the 11 others would have to complete, while the "
     "API was dead until 22:00 and the two days completed 13 in all. The model keeps the 590 "
     "lines and the 7.0 a session, so nearly every day-two session fails"},
    {"outage.day2.pinned", kOutage, "... 65 of them pinned to the deadline", 65, Check::conflict, 0,
     1, "follows the failed count (previous row); the share pinned holds (next row)"},
    {"outage.day2.pinned_share", kOutage, "... 65 of 73 pinned: 89 % of the failed", 0.89,
     Check::within, 0.05, 2, "pinned / failed on day two, per seed"},
    {"recovery.429_in_22", kOutage, "at 22:00 on day two the 429s stopped: two in that hour", 2,
     Check::within, 2, 1, "429 answers 2d22:00-2d23:00 (the ramp 22:00-22:04 at p 0.5)"},
    {"recovery.429_in_23", kOutage, "... zero the next", 0, Check::at_most, 0, 1,
     "429 answers 2d23:00-2d24:00"},
    {"recovery.counter_first", kOutage, "the opening queue (a counter capped at 20) was 20", 20,
     Check::within, 1, 1,
     "the capped counter of the first session launched at or after 22:00; a seed with no "
     "launch then (items held by a chain that has used its two deliveries wait for an "
     "arrival) has no value"},
    {"recovery.counter_30_min", kOutage, "... and dropped to 8 within thirty minutes", 8,
     Check::within, 2, 1,
     "the capped counter of the first session launched at or after 22:30. It counts the items "
     "a running session still holds, so it depends on where the first session after 22:00 is "
     "in its 24 min of stale triage at 22:30: per seed it reads 3 to 7 once the backlog is "
     "done or given back, 12 to 20 while it is being triaged; the mean moves by two or three "
     "with any change to the random draws (7.9 before the item costs above)"},
    {"recovery.items_per_hour", kOutage, "recovery throughput something like 13 items/hour", 13,
     Check::within_share, 0.30, 1, "items committed 2d22:00-2d23:00; 'something like': +-30 %"},
    {"recovery.rows_in_30_min", kOutage, "the execution log gained 49 rows within thirty minutes",
     49, Check::conflict, 0, 1,
     "items committed 2d22:00-2d22:30. Conflicts with the post's own replay: the first session "
     "after recovery spends 24 min triaging 14 stale notifications (the presets' tests pin it: "
     "anchor "
     "reached at 24m57s, killed at 30:00), and throughput was about 13 items/hour; 49 items in "
     "30 min would be 98 an hour. The model keeps the replay and the 13/hour; the 49 rows cannot "
     "all be items"},
    {"recovery.notifications_first_session", kOutage,
     "fourteen notifications that arrived at 06:30 were processed at 22:15", 1,
     Check::seeds_conflict, 0.9, 0,
     "all 14 of day two's 06:30 notifications committed by the session that opens the backlog "
     "after the recovery: the first launched at or after 22:00 that starts one of them or "
     "opens 14 items or more (the post's 22:15 session opened 20). Before, the first session "
     "launched at or after 22:00 counted, also one that opened a single new ping while a "
     "sleeper still held the 14 and the next session did them: 20/40 seeds then. "
     "What fixes 22:15 is the "
     "backlog's own cycle: from 06:30 the 14 sit at the head of the queue, and if every "
     "session that dies holding them is followed by one at the next tick, each holder "
     "launches at a tick, is killed asleep at 30:30 and the next launches 35 min later: "
     "06:30 + 26 x 35 min = 21:40, whose last call (15.75 min in: boot, then 30 s, 1, 2, 4 and "
     "8 min of sleep) comes before 22:00; it is killed at 22:10:30 and the 22:15 tick opens "
     "the backlog. The model breaks that cycle twice. A chain that has had its two launches "
     "posts no retry, so the backlog waits for a ping's chain, about one an hour in the "
     "evening of day two, or none before midnight ('no wake-up'). An unrelated crash "
     "(probability 0.08, the normal day's 7 failures in 90) ends a holder early and shifts "
     "the cycle; shifted, a holder launched in the 16 min before 22:00 makes its last call "
     "after 22:00, is answered, and triages the 14 with at most 14 min left while they take "
     "24 (the post's replay), so its deadline cuts them ('holder woke'). Issue 16 asks 90 % "
     "of seeds; keeping the cycle needs uncapped chains and no crash (below), and uncapped "
     "chains move the 210 launches and the 590 day-two 429 lines off, while a crash of the "
     "opener alone caps the row near 92 %. The model keeps the launches, the 429 lines and "
     "the normal day's failures. 'Crashed': the opener crashes; 'cut': the ramp's 429s slow "
     "an opener launched 22:00-22:04 and its deadline cuts the triage"},
    {"outage.busy.peak", kOutage, "13:00-16:00 on day one: 6-7 sessions in flight", 6.5,
     Check::within, 1.5, 2, "the highest peak of those hours; presets' table 5-7"},
    {"outage.busy.rho", kOutage, "... rho at 0.83-0.92 against the ceiling of 6", 0.875,
     Check::within, 0.095, 3,
     "time-average in flight over 13:00-16:00 / 6; within 0.83 - 0.05 and 0.92 + 0.05. A ping a "
     "session gives back is replaced by a newer one on its channel (the queue the 22:15 "
     "session opened: each channel's newest ping), so fewer items are unclaimed at a tick "
     "and fewer launches join the sleepers; before that rule this was 0.80 and the queue at "
     "recovery about 60 items. The post's 'launched a fresh session every five minutes to "
     "pick up the same unread items and join the sleepers' reads as a tick launching while "
     "any item is unread, claimed or not; tried, it brings this row to 0.80 and the next to "
     "10.1 (both hold) and day one's 429 lines to 883, but the recovery's counters move off "
     "(20 -> 18.0, 8 -> 11.8) and the 22:15 notifications fall to 15/40 seeds; the model "
     "keeps the documented rule (a launch needs an unclaimed item)"},
    {"outage.busy.launches_per_hour", kOutage, "11 launches/hour x 30 minutes ~ 5.5 in flight", 11,
     Check::within_share, 0.10, 1,
     "launches per hour, 13:00-16:00; the same rule lowers it (10.2 before it; see the "
     "previous row)"},
    {"outage.busy.most_completions", kOutage, "throughput was 0-1 per hour", 1, Check::at_most, 0,
     2, "the most completions in one of those hours"},
    {"credential.mean_failed_min", kCredential, "failed sessions now lasted 3.2 minutes", 3.2,
     Check::within, 1, 2,
     "with fix one, over the preset's focus window, the morning of day one from 00:00 to the "
     "end of the 08:00 hour; presets' table 3 +- 1 (an unrelated crash in a healthy hour "
     "lengthens a few seeds' mean)"},
    {"credential.mean_in_flight", kCredential, "average in flight was 0.28", 0.28, Check::within,
     0.1, 2,
     "same window; presets' table 0.3 +- 0.1. The post gives 0.28 and peak 3 in one sentence, "
     "and a peak of 3 needs the 08:00 hour (the outage alone cannot reach it, below), so the "
     "model reads both over one window that ends with the recovery hour and starts with the "
     "day: the morning the post calls a natural experiment"},
    {"credential.peak", kCredential, "... peak 3", 3, Check::within, 1, 2,
     "same window; issue 16 asks within one"},
    {"credential.mean_in_flight_outage", kCredential,
     "average in flight was 0.28 (read as the outage alone, 06:00-08:00)", 0.28, Check::within, 0.1,
     2, "the other reading of the 0.28: it holds too"},
    {"credential.peak_outage", kCredential, "... peak 3 (read as the outage alone, 06:00-08:00)", 3,
     Check::conflict, 0, 2,
     "conflicts with the post's own figures: one launch per 5-minute tick and failures of 3.2 "
     "minutes leave at most one failing session in flight, so a peak of 3 needs the hour the "
     "credentials came back in (the focus window's row above)"},
    {"credential.mean_in_flight_0600_0900", kCredential,
     "average in flight was 0.28 (read as the outage and the 08:00 hour, 06:00-09:00)", 0.28,
     Check::conflict, 0, 2,
     "conflicts with the 4 for 4 of the 08:00 hour: its first session works through the "
     "backlog (the 14 notifications and each channel's newest ping) and four sessions of "
     "about 12 min fill that hour with about 0.8 sessions on average, a third of this window, "
     "so the window's average cannot come down to 0.28 beside the outage's 0.27. The focus "
     "window (above) reads the morning instead"},
    {"credential.0800_all_done", kCredential, "the 08:00 hour went 4 for 4", 1,
     Check::seeds_conflict, 0.9, 0,
     "every session launched 1d08:00-1d09:00 completed. Issue 16 asks 90 % of seeds; that "
     "conflicts with the normal day's 83 of 90: a healthy session fails 7 times in 90, so "
     "four go 4 for 4 on (83/90)^4 = 72 % of days, and 90 % would need at most 2 failures in "
     "90. The model keeps the 83 (a crash with probability 0.08, U(0, 900) s after the "
     "start: 0.92^4 = 72 %, near the simulated share); the recovery itself holds (next row)"},
    {"credential.0800_none_cut", kCredential,
     "... the moment credentials came back (none cut, crashes aside)", 1, Check::seeds_share, 0.9,
     0,
     "every session launched 1d08:00-1d09:00 completed or crashed: the first one opens the "
     "backlog (the 14 notifications, fresh, and each channel's newest ping) and finishes it. "
     "With the earlier item costs (pings LN(132 s, 0.9), housekeeping LN(318 s, 0.6)) the "
     "deadline cut that batch in 11 of 40 seeds; the post's 08:00 hour finished it"},
    {"credential.0800_launched", kCredential, "... 4 sessions in that hour", 4, Check::within, 1, 2,
     "sessions launched 1d08:00-1d09:00"},
    {"burst.opened_20", kBurst, "the 22:15 session opened with 20 items (the batch cap)", 1,
     Check::seeds_share, 1, 0, "presets' table: in every seed"},
    {"burst.triage_min", kBurst, "rounds 2 through 13, twenty-four minutes, of stale triage", 24,
     Check::within, 1.5, 1, "from the end of boot and scan (about a minute) to the anchor's start"},
    {"burst.left_min", kBurst, "it had five minutes left", 5, Check::within, 1.5, 1,
     "deadline minus the anchor's start"},
    {"burst.killed_at_30", kBurst, "the deadline cancelled it at exactly thirty minutes", 1,
     Check::seeds_share, 1, 0, "killed working at 1800.0 s, in every seed"},
};

// ": holder woke 6, no wake-up 7, ..." in the seeds the claim misses, then
// the variants that lift the model's limits (uncapped_variant).
std::string misses_text(const std::map<std::string, std::vector<double>>& values) {
  const std::pair<const char*, const char*> causes[] = {{"holder_woke", "holder woke"},
                                                        {"no_wake_up", "no wake-up"},
                                                        {"crashed", "crashed"},
                                                        {"cut", "cut"}};
  std::string out;
  for (const auto& [key, words] : causes) {
    auto it = values.find(std::string("recovery.why_not.") + key);
    if (it == values.end()) continue;
    out += (out.empty() ? ". Seeds missed: " : ", ") + std::string(words) + " " +
           std::to_string(it->second.size());
  }
  auto mean = [&](const std::string& name, const char* figure, int digits) {
    auto it = values.find("variant." + name + "." + figure);
    return it == values.end() ? std::string("?") : fixed_text(summarize(it->second).mean, digits);
  };
  auto holds = [&](const std::string& name) {
    auto it = values.find("variant." + name + ".recovery.notifications_first_session");
    if (it == values.end()) return std::string("?");
    return std::to_string(std::count(it->second.begin(), it->second.end(), 1.0)) + "/" +
           std::to_string(it->second.size());
  };
  out += ". Without crashes it holds in " + holds("crash_free") +
         " seeds; with uncapped chains in " + holds("uncapped") + "; with neither in " +
         holds("neither") + ", but with " + mean("neither", "outage.launched", 0) +
         " sessions launched in the two days (the post: 210) and " +
         mean("neither", "outage.day2.lines_429", 0) + " 429 lines on day two (590)";
  return out;
}

}  // namespace

std::vector<CalibrationRow> scheduler_calibration(const PresetLookup& preset, int seeds) {
  using Measure = Figures (*)(const Scenario&);
  const std::pair<const char*, Measure> runs[] = {
      {kNormal, normal_day_figures}, {kOutage, outage_figures},  {kOutage, crash_free_figures},
      {kOutage, uncapped_figures},   {kOutage, neither_figures}, {kCredential, credential_figures},
      {kBurst, burst_figures}};
  std::map<std::string, std::vector<double>> values;
  for (const auto& [name, measure] : runs) {
    Scenario s = preset(name);
    std::vector<Figures> per_seed(static_cast<size_t>(seeds));
    // clang 14 cannot capture a structured binding implicitly: name it.
    for_each_index(per_seed.size(), [&, &measure = measure](size_t i) {
      Scenario r = s;
      r.seed = static_cast<double>(i + 1);
      per_seed[i] = measure(r);
    });
    for (const Figures& f : per_seed)  // in seed order: the same table on any core count
      for (const auto& [figure, v] : f) values[figure].push_back(v);
  }
  // The busiest hour of the mean day: one value from the hour-by-hour means.
  double busiest = 0;
  for (const auto& [figure, v] : values)
    if (figure.starts_with("normal.hour.")) busiest = std::max(busiest, summarize(v).mean);
  values["normal.rho_busiest_mean_hour"] = {busiest};
  std::vector<CalibrationRow> rows;
  for (const Claim& c : kClaims) rows.push_back(judge(c, values[c.figure], seeds));
  for (CalibrationRow& r : rows) {
    if (r.figure == "recovery.notifications_first_session") r.note += misses_text(values);
    // One value from all the seeds, not a per-seed spread.
    if (r.figure == "normal.rho_busiest_mean_hour")
      r.simulated =
          fixed_text(busiest, 3) + " (the mean day of " + std::to_string(seeds) + " seeds)";
  }
  return rows;
}

}  // namespace retrystorm
