#include "formats/analyze_report.hpp"

#include <cmath>
#include <sstream>

#include "analysis/summary.hpp"
#include "formats/report_assets.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {

using namespace incident;

namespace {

std::string num(double v) {
  return known(v) ? format_amount(v) : "unknown";
}
std::string pct(double f) {
  return known(f) ? format_percent(f) : "unknown";
}
std::string fixed(double v, int digits) {
  return known(v) ? text::fixed_text(v, digits) : "-";
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

// A bar of `cells` characters out of `width` for `v` of `top`.
std::string bar(double v, double top, size_t width) {
  size_t n = top > 0 ? static_cast<size_t>(std::lround(v / top * static_cast<double>(width))) : 0;
  if (v > 0 && n == 0) n = 1;
  return std::string(n, '#');
}

void text_findings(std::ostringstream& o, const Report& r) {
  o << "Diagnosis\n";
  if (r.findings.empty()) o << "  No finding stands out; see the figures below.\n";
  int i = 1;
  for (const auto& f : r.findings) {
    o << "  " << i++ << ". " << printable(f.title) << "\n";
    for (const auto& e : f.evidence) o << "     - " << printable(e) << "\n";
    o << "     Fix: " << printable(f.fix) << "\n";
  }
}

void text_hours(std::ostringstream& o, const Report& r) {
  o << "\nPer hour (" << r.unit << "; utilization against a ceiling of " << num(r.ceiling)
    << (r.ceiling_source.empty() ? "" : ", " + r.ceiling_source) << ")\n";
  o << "  hour       launch  W(min)      L     λ·W    ρ  peak  done  fail  fail%  goodput  "
       "work block asleep  errors\n";
  for (const auto& h : r.hours) {
    o << "  " << hour_label(h.hour) << pad_left(fixed(h.launches, 0), 8)
      << pad_left(fixed(h.mean_duration_s / text::kMinute, 1), 8)
      << pad_left(fixed(h.in_flight, 2), 8) << pad_left(fixed(h.little, 2), 8)
      << pad_left(fixed(h.utilization, 2), 5) << pad_left(fixed(h.peak, 0), 6)
      << pad_left(fixed(h.completions, 0), 6) << pad_left(fixed(h.failures, 0), 6)
      << pad_left(known(h.failure_share) ? fixed(100 * h.failure_share, 0) : "-", 7)
      << pad_left(fixed(h.goodput, 0), 9) << pad_left(fixed(h.working, 2), 6)
      << pad_left(fixed(h.blocked, 2), 6) << pad_left(fixed(h.asleep, 2), 7)
      << pad_left(fixed(h.errors, 0), 8) << "\n";
  }
  o << "  L = time-average in flight; λ·W = launches x mean time in system (Little's law: L "
       "= λ·W); work/block/asleep split L.\n";
  // A log without a session has no window (the fuzzer's header-only logs).
  auto clock = [](double t) { return known(t) ? format_clock(t) : std::string("unknown"); };
  o << "  Whole log, " << clock(r.l_from_s) << " to " << clock(r.l_to_s) << ": L "
    << fixed(r.mean_in_flight, 2) << ", λ·W " << fixed(r.little, 2) << ", mean time in system "
    << span_label(r.mean_duration_s) << ", peak " << num(r.peak) << " in flight.\n";
}

// The queue at session open: what the batch counter showed (capped at the
// batch) beside the true unread queue, which the post-mortem could not measure.
void text_queue(std::ostringstream& o, const Report& r) {
  bool any = false;
  for (const auto& h : r.hours) any = any || known(h.queue_mean) || known(h.counter_mean);
  if (!any) return;
  o << "\nQueue at session open, by hour (counter: items claimed, capped at the batch; "
       "true: queue_unread_at_open)\n";
  o << "  hour       opens  counter mean  max   true mean  max\n";
  for (const auto& h : r.hours) {
    if (!known(h.queue_mean) && !known(h.counter_mean)) continue;
    o << "  " << hour_label(h.hour) << pad_left(fixed(h.launches, 0), 7)
      << pad_left(fixed(h.counter_mean, 1), 14) << pad_left(fixed(h.counter_max, 0), 5)
      << pad_left(fixed(h.queue_mean, 1), 12) << pad_left(fixed(h.queue_max, 0), 5) << "\n";
  }
}

void text_occupancy(std::ostringstream& o, const Report& r) {
  o << "\nOccupancy and fake saturation\n";
  if (r.occupancy.source.empty())
    o << "  In flight by state: unknown (see Unknown below).\n";
  else
    o << "  In flight by state (" << r.occupancy.source << "): working " << pct(r.occupancy.working)
      << ", blocked on error answers " << pct(r.occupancy.blocked) << ", asleep in backoff "
      << pct(r.occupancy.asleep) << ".\n";
  o << "  " << fake_saturation_threshold_text(r.fake.threshold) << "\n";
  if (r.fake.hours.empty()) {
    o << "  No hour sat near the ceiling without completing work.\n";
    return;
  }
  o << "  Near the ceiling with almost no completions: " << hour_ranges(r.fake.hours) << "\n"
    << "    mean in flight " << fixed(r.fake.in_flight, 2) << " of " << num(r.ceiling) << ", "
    << fixed(r.fake.completions_per_hour, 2) << " completions an hour, asleep "
    << pct(r.fake.asleep_share) << " of that occupancy.\n";
}

void text_errors(std::ostringstream& o, const Report& r) {
  const ErrorSignal& e = r.errors;
  o << "\nErrors as a retry signal\n";
  if (e.lines <= 0) {
    o << "  No error lines.\n";
    return;
  }
  o << "  " << num(e.lines) << " error lines (429: " << num(e.lines_429)
    << ", 401: " << num(e.lines_401) << ") over " << num(e.sessions) << " " << r.unit << ": "
    << fixed(e.per_session, 2) << " a " << r.unit.substr(0, r.unit.size() - 1) << ", "
    << fixed(e.per_erring_session, 2) << " per " << r.unit.substr(0, r.unit.size() - 1)
    << " with errors (spread " << pct(e.cv) << ").\n";
  o << "  Hourly correlation of launches and error lines: " << fixed(e.correlation, 2) << ".\n";
  for (const auto& d : r.days)
    if (d.launches > 0)
      o << "  day " << d.day << ": " << num(d.launches) << " launched, " << num(d.errors)
        << " error lines, " << fixed(d.errors / d.launches, 2)
        << " a launch (429: " << fixed(d.lines_429 / d.launches, 2) << ")\n";
  if (e.nearly_constant)
    o << "  Each failing " << r.unit.substr(0, r.unit.size() - 1) << " logs nearly the same "
      << "number of errors, so the error curve measures " << r.unit << ", not demand.\n";
  double top = 0;
  for (const auto& [k, n] : e.histogram) top = std::max(top, n);
  o << "  lines per " << r.unit.substr(0, r.unit.size() - 1) << ":\n";
  for (const auto& [k, n] : e.histogram)
    o << "    " << pad_left(std::to_string(k), 3) << pad_left(num(n), 9) << " " << bar(n, top, 40)
      << "\n";
}

void text_durations(std::ostringstream& o, const Report& r) {
  const Durations& d = r.durations;
  o << "\nDurations\n";
  o << "  Median completed " << span_label(d.median_ok_s) << ", median failed "
    << span_label(d.median_failed_s) << "; deadline " << span_label(d.deadline_s)
    << (d.deadline_source.empty() ? "" : " (" + d.deadline_source + ")") << ".\n";
  if (known(d.pinned_share))
    o << "  " << num(d.pinned) << " of " << num(d.failures) << " failures (" << pct(d.pinned_share)
      << ") ended within a minute of the deadline.\n";
  double top = 0;
  for (size_t m = 0; m < d.minute_ok.size(); ++m)
    top = std::max(top, d.minute_ok[m] + d.minute_failed[m]);
  o << "  minutes  completed   failed  (# completed, x failed)\n";
  for (size_t m = 0; m < d.minute_ok.size(); ++m) {
    if (d.minute_ok[m] + d.minute_failed[m] == 0) continue;
    o << "  " << pad_left(std::to_string(m) + (m + 1 == d.minute_ok.size() ? "+" : ""), 7)
      << pad_left(num(d.minute_ok[m]), 11) << pad_left(num(d.minute_failed[m]), 9) << " "
      << bar(d.minute_ok[m], top, 30) << std::string(bar(d.minute_failed[m], top, 30).size(), 'x')
      << "\n";
  }
}

void text_ladder(std::ostringstream& o, const Report& r) {
  const incident::LoggedLadder& l = r.ladder;
  o << "\nLadder against deadline\n";
  if (l.steps_s.empty()) {
    o << "  Ladder unknown (give --ladder 30,60,... or events.jsonl).\n";
    return;
  }
  std::string steps;
  for (double s : l.steps_s) steps += (steps.empty() ? "" : " + ") + span_label(s);
  o << "  " << steps << " = " << span_label(l.sum_s) << " (" << l.source << ") against "
    << span_label(l.deadline_s) << ": ";
  if (!known(l.over_s))
    o << "deadline unknown.\n";
  else if (l.over_s > 0)
    o << span_label(l.over_s) << " longer than the deadline.\n";
  else
    o << "fits, with " << span_label(-l.over_s) << " to spare.\n";
  bool pinned = known(r.durations.pinned_share) && r.durations.pinned_share >= 0.5;
  if (known(l.over_s) && l.over_s > 0 && !pinned)
    o << "  Failures are not pinned to the deadline: the sessions fail fast instead of "
         "sleeping into it.\n";
}

void text_failure_load(std::ostringstream& o, const Report& r) {
  const FailureLoad& f = r.failure_load;
  o << "\nFailures against load\n";
  o << "  Hourly correlation of failure share and L: " << fixed(f.correlation, 2) << ".\n";
  if (!f.low_load_failing.empty())
    o << "  Low-load hours where nearly all failed: " << hour_ranges(f.low_load_failing) << " ("
      << num(f.low_load_failed) << " of " << num(f.low_load_sessions) << " failed, at most "
      << num(f.low_load_peak) << " in flight).\n";
}

}  // namespace

std::string analyze_text(const Report& r) {
  std::ostringstream o;
  o << "retrystorm analyze\n";
  for (const auto& s : r.sources) o << "  " << printable(s) << "\n";
  for (const auto& w : r.warnings) o << "Warning: " << printable(w) << "\n";
  if (known(r.first_s))
    o << "Span " << hour_label(static_cast<int64_t>(r.first_s / text::kHour)) << " to "
      << hour_label(static_cast<int64_t>(r.last_s / text::kHour)) << ": " << num(r.sessions) << " "
      << r.unit << ", " << num(r.completed) << " completed, " << num(r.failed) << " failed";
  o << (r.items_done > 0 ? ", " + num(r.items_done) + " items done" : "") << ".\n";
  std::string outcomes;
  for (const auto& [name, n] : r.outcomes)
    outcomes += (outcomes.empty() ? "" : ", ") + name + " " + num(n);
  if (!outcomes.empty()) o << "Outcomes: " << outcomes << ".\n";
  o << "\n";
  text_findings(o, r);
  text_hours(o, r);
  text_queue(o, r);
  text_occupancy(o, r);
  text_errors(o, r);
  text_durations(o, r);
  text_ladder(o, r);
  text_failure_load(o, r);
  if (!r.unknowns.empty()) {
    o << "\nUnknown\n";
    for (const auto& u : r.unknowns)
      o << "  " << printable(u.figure) << ": " << printable(u.reason) << ".\n";
  }
  return o.str();
}

nlohmann::json known_or_null(double v) {
  return known(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json unknowns_json(const std::vector<Unknown>& unknowns) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& u : unknowns) out.push_back({{"figure", u.figure}, {"reason", u.reason}});
  return out;
}

nlohmann::json finding_json(const incident::Diagnosis& f) {
  return {{"id", f.id},
          {"title", f.title},
          {"score", f.score},
          {"evidence", f.evidence},
          {"fix", f.fix}};
}

namespace {

// One hour row of the report.
nlohmann::json hour_json(const incident::HourRow& h) {
  return {{"hour", h.hour},
          {"label", hour_label(h.hour)},
          {"launches", h.launches},
          {"retries", h.retries},
          {"mean_duration_s", known_or_null(h.mean_duration_s)},
          {"in_flight", h.in_flight},
          {"little", known_or_null(h.little)},
          {"utilization", known_or_null(h.utilization)},
          {"peak", h.peak},
          {"completions", h.completions},
          {"failures", h.failures},
          {"failure_share", known_or_null(h.failure_share)},
          {"goodput", h.goodput},
          {"working", known_or_null(h.working)},
          {"blocked", known_or_null(h.blocked)},
          {"asleep", known_or_null(h.asleep)},
          {"lines_429", h.lines_429},
          {"lines_401", h.lines_401},
          {"errors", h.errors},
          {"arrivals", known_or_null(h.arrivals)},
          {"error_share", known_or_null(h.error_share)},
          {"opens_with_queue", h.opens_with_queue},
          {"queue_at_open_mean", known_or_null(h.queue_mean)},
          {"queue_at_open_max", known_or_null(h.queue_max)},
          {"counter_at_open_mean", known_or_null(h.counter_mean)},
          {"counter_at_open_max", known_or_null(h.counter_max)}};
}

nlohmann::json day_json(const incident::DayRow& d) {
  using nlohmann::json;
  return {
      {"day", d.day},
      {"launches", d.launches},
      {"completions", d.completions},
      {"lines_429", d.lines_429},
      {"errors", d.errors},
      {"lines_429_per_launch", d.launches > 0 ? json(d.lines_429 / d.launches) : json(nullptr)}};
}

// Errors as a retry signal.
nlohmann::json errors_json(const incident::ErrorSignal& e, const nlohmann::json& histogram) {
  return {{"lines", e.lines},
          {"lines_429", e.lines_429},
          {"lines_401", e.lines_401},
          {"sessions_with_errors", e.with_errors},
          {"failed_with_errors", e.failed_with_errors},
          {"per_session", e.per_session},
          {"per_erring_session", e.per_erring_session},
          {"spread", known_or_null(e.cv)},
          {"histogram", histogram},
          {"hourly_correlation_with_launches", known_or_null(e.correlation)},
          {"nearly_constant", e.nearly_constant}};
}

// Durations and the deadline they are pinned to.
nlohmann::json durations_json(const incident::Durations& d) {
  return {{"minute_completed", d.minute_ok},
          {"minute_failed", d.minute_failed},
          {"median_completed_s", known_or_null(d.median_ok_s)},
          {"median_failed_s", known_or_null(d.median_failed_s)},
          {"deadline_s", known_or_null(d.deadline_s)},
          {"deadline_source", d.deadline_source},
          {"failures", d.failures},
          {"pinned", d.pinned},
          {"pinned_share", known_or_null(d.pinned_share)}};
}

}  // namespace

nlohmann::json analyze_json(const Report& r) {
  using nlohmann::json;
  json hours = json::array();
  for (const auto& h : r.hours) hours.push_back(hour_json(h));
  json days = json::array();
  for (const auto& d : r.days) days.push_back(day_json(d));
  json findings = json::array();
  for (const auto& f : r.findings) findings.push_back(finding_json(f));
  json outcomes = json::object();
  for (const auto& [name, n] : r.outcomes) outcomes[name] = n;
  json histogram = json::array();
  for (const auto& [k, n] : r.errors.histogram) histogram.push_back({k, n});
  const auto& l = r.ladder;
  return {
      {"sources", r.sources},
      {"unit", r.unit},
      {"first_s", known_or_null(r.first_s)},
      {"last_s", known_or_null(r.last_s)},
      {"sessions", r.sessions},
      {"completed", r.completed},
      {"failed", r.failed},
      {"outcomes", outcomes},
      {"items_done", known_or_null(r.items_done)},
      {"ceiling", known_or_null(r.ceiling)},
      {"ceiling_source", r.ceiling_source},
      {"mean_in_flight", known_or_null(r.mean_in_flight)},
      {"l_window", {{"from_s", known_or_null(r.l_from_s)}, {"to_s", known_or_null(r.l_to_s)}}},
      {"mean_duration_s", known_or_null(r.mean_duration_s)},
      {"little", known_or_null(r.little)},
      {"peak", r.peak},
      {"diagnosis", r.findings.empty() ? json(nullptr) : json(r.findings.front().id)},
      {"findings", findings},
      {"hours", hours},
      {"days", days},
      {"occupancy",
       {{"source", r.occupancy.source.empty() ? json(nullptr) : json(r.occupancy.source)},
        {"working", known_or_null(r.occupancy.working)},
        {"blocked", known_or_null(r.occupancy.blocked)},
        {"asleep", known_or_null(r.occupancy.asleep)}}},
      {"fake_saturation",
       {{"hours", r.fake.hours},
        {"in_flight", r.fake.in_flight},
        {"completions_per_hour", r.fake.completions_per_hour},
        {"threshold", r.fake.threshold},
        {"asleep_share", known_or_null(r.fake.asleep_share)}}},
      {"errors", errors_json(r.errors, histogram)},
      {"durations", durations_json(r.durations)},
      {"ladder",
       {{"steps_s", l.steps_s},
        {"source", l.source},
        {"sum_s", known_or_null(l.sum_s)},
        {"deadline_s", known_or_null(l.deadline_s)},
        {"over_s", known_or_null(l.over_s)}}},
      {"failure_load",
       {{"correlation", known_or_null(r.failure_load.correlation)},
        {"low_load_failing_hours", r.failure_load.low_load_failing},
        {"low_load_sessions", r.failure_load.low_load_sessions},
        {"low_load_failed", r.failure_load.low_load_failed}}},
      {"batch",
       {{"killed_working", r.batch.killed_working},
        {"killed_working_full", r.batch.killed_working_full},
        {"anchor_cut", r.batch.anchor_cut}}},
      {"unknowns", unknowns_json(r.unknowns)},
      {"outliers_dropped", r.outliers},
      {"warnings", r.warnings},
  };
}

}  // namespace retrystorm
