#include "formats/session_report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "engines/sessions/bucket_fields.hpp"
#include "engines/sessions/clock.hpp"
#include "engines/sessions/session_engine.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "formats/text_report.hpp"
#include "text/printable.hpp"

namespace retrystorm {

using nlohmann::json;
using sessions::format_clock;
using sessions::format_minutes;
using sessions::SessionRun;

namespace {

json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json buckets_json(const sessions::SessionBuckets& b) {
  json out = json::object();
  for (const sessions::BucketField& field : sessions::kBucketFields)
    out[std::string(field.name)] = field.get(b);
  return out;
}

json session_row_json(const sessions::SessionRow& r) {
  return {{"session_id", r.session_id},
          {"start_s", r.start_s},
          {"end_s", r.end_s},
          {"outcome", sessions::outcome_name(r.outcome)},
          {"n_429", r.n_429},
          {"n_401", r.n_401},
          {"terminal_error_line", r.terminal_error},
          {"n_api_calls", r.n_api_calls},
          {"items_in", r.items_in},
          {"items_done", r.items_done},
          {"items_deferred", r.items_deferred},
          {"queue_unread_at_open", r.queue_unread_at_open},
          {"time_working_s", r.time_s[0]},
          {"time_blocked_s", r.time_s[1]},
          {"time_asleep_s", r.time_s[2]},
          {"anchor_in_batch", r.anchor_in_batch},
          {"anchor_done", r.anchor_done},
          {"anchor_started_after_s",
           number_or_null(r.anchor_started_after_s < 0 ? NAN : r.anchor_started_after_s)},
          {"delivery", r.delivery}};
}

json metrics_object(const SessionMetrics& m) {
  json out = json::object();
  for (const auto& [name, v] : session_metric_values(m))
    if (name.rfind("outcome_", 0) != 0) out[name] = number_or_null(v);
  out["outcomes"] = m.outcomes;
  out["window"] = {{"from_s", m.from_s}, {"to_s", m.to_s}};
  return out;
}

// A window may open mid-hour (the recovery burst's focus starts at 22:15): the
// hour it opens in is still part of the story, so the table keeps every hour that
// overlaps the window, as the JSON does.
bool hour_overlaps(const SessionHourRow& h, double hour_s, double from_s, double to_s) {
  return h.t_s + hour_s > from_s && h.t_s < to_s;
}

}  // namespace

json session_json(const SessionReport& r) {
  LadderCheck ladder = check_ladder(r.run.scenario);
  json sessions_list = json::array();
  for (const auto& row : r.run.sessions) sessions_list.push_back(session_row_json(row));
  json hours = json::array();
  for (const auto& h : r.hours) {
    json hour = {{"clock", format_clock(h.t_s)}};
    for (const HourField& field : kHourFields) hour[std::string(field.name)] = h.*field.member;
    hours.push_back(std::move(hour));
  }
  json out = {{"scenario", scenario_to_json(r.run.scenario)},
              {"engine", "sessions"},
              {"metrics", metrics_object(r.metrics)},
              {"verdict", {{"headline", r.verdict}, {"claim", r.claim}}},
              {"ladder",
               {{"ladder_s", ladder.ladder_s},
                {"total_s", ladder.total_s},
                {"deadline_s", ladder.deadline_s},
                {"exceeds_deadline", ladder.exceeds},
                {"longer_than_deadline", ladder.longer},
                {"deadline_aware", ladder.deadline_aware}}},
              {"series", buckets_json(r.run.series)},
              {"hours", hours},
              {"items",
               {{"arrived", r.run.items.arrived},
                {"done", r.run.items.done},
                {"superseded", r.run.items.superseded},
                {"unread", r.run.items.unread}}},
              {"sessions", sessions_list},
              {"advice", advice_json(r.advice)}};
  if (r.montecarlo) {
    out["montecarlo"] = {{"runs", r.montecarlo->runs},
                         {"seed", r.montecarlo->seed},
                         {"metrics", summaries_json(r.montecarlo->metrics)},
                         {"headline_claim",
                          {{"claim", r.montecarlo->claims.front()},
                           {"seeds", seeds_holding_claim(*r.montecarlo)},
                           {"runs", r.montecarlo->runs}}},
                         {"band",
                          {{"in_flight_low", r.montecarlo->in_flight.low},
                           {"in_flight_mean", r.montecarlo->in_flight.mean},
                           {"in_flight_high", r.montecarlo->in_flight.high}}}};
  }
  return out;
}

namespace {

std::string ladder_text(const LadderCheck& c) {
  std::string out;
  for (double d : c.ladder_s) out += (out.empty() ? "" : " + ") + format_minutes(d);
  if (out.empty()) return "no retries";
  out += " = " + format_minutes(c.total_s);
  if (c.deadline_s <= 0) return out + " (no deadline)";
  return out + " against a " + format_minutes(c.deadline_s) + " deadline: " +
         (c.exceeds  ? "longer"
          : c.longer ? "longer, cut by the deadline-aware rule (a session fails fast instead)"
                     : "fits");
}

// Four characters a session: # working, - blocked, . asleep.
std::string occupancy_bar(const SessionHourRow& h) {
  auto chars = [](double sessions) { return static_cast<size_t>(std::lround(sessions * 4)); };
  return std::string(chars(h.working), '#') + std::string(chars(h.blocked), '-') +
         std::string(chars(h.asleep), '.');
}

// The Monte Carlo table and how many seeds share the headline claim.
std::string session_montecarlo_text(const SessionMonteCarlo& r) {
  std::string out = summaries_text(r.runs, r.seed, r.metrics);
  if (!r.claims.empty())
    out += "  headline claim \"" + r.claims.front() + "\" holds in " +
           std::to_string(seeds_holding_claim(r)) + "/" + std::to_string(r.runs) + " seeds\n";
  return out;
}

}  // namespace

std::string session_text(const SessionReport& r) {
  const Scenario& s = r.run.scenario;
  const SessionMetrics& m = r.metrics;
  // A name can hold any bytes a file holds; a terminal gets none of its controls.
  std::string out =
      printable(s.name) + (s.description.empty() ? "" : ": " + printable(s.description)) + "\n";
  out += "Window " + format_clock(m.from_s) + " to " + format_clock(m.to_s) +
         " (engine sessions, seed " + format_amount(s.seed) + ")\n\n";
  out += r.verdict + "\n\n";
  out += fmt::format("  {:<14} launched {}, completed {}, failed {}, still running {}\n",
                     "Sessions", m.launched, m.completed, m.failed, m.in_flight);
  std::string outcomes;
  for (const auto& [name, n] : m.outcomes)
    if (n > 0) outcomes += (outcomes.empty() ? "" : ", ") + name + " " + std::to_string(n);
  out += fmt::format("  {:<14} {}\n", "Outcomes", outcomes.empty() ? "none" : outcomes);
  auto minutes = [](double s) { return std::isfinite(s) ? format_minutes(s) : std::string("-"); };
  out += fmt::format(
      "  {:<14} success median {}, p90 {}, p99 {}; mean failure {}, {} of failures pinned "
      "to the deadline\n",
      "Durations", minutes(m.median_success_s), minutes(m.success_p90_s), minutes(m.success_p99_s),
      minutes(m.mean_failed_s), format_percent(m.pinned_share));
  out += fmt::format(
      "  {:<14} {} 429 and {} 401 answers; {:.2f} 429 log lines a session; hourly "
      "correlation with launches {}\n",
      "Errors", m.errors_429, m.errors_401, m.lines_429_per_session,
      std::isfinite(m.launches_429_correlation) ? text::fixed_text(m.launches_429_correlation, 2)
                                                : "-");
  out += fmt::format(
      "  {:<14} {:.2f} on average (working {:.2f}, blocked {:.2f}, asleep {:.2f}: {} asleep), "
      "peak {}\n",
      "In flight", m.mean_in_flight, m.mean_working, m.mean_blocked, m.mean_asleep,
      format_percent(m.asleep_share), m.peak_in_flight);
  out += fmt::format("  {:<14} L {:.3f} against launches x mean duration {:.3f}\n", "Little's law",
                     m.little_l, m.little_lambda_w);
  out += fmt::format("  {:<14} {} arrived, {} done in the window\n", "Items", m.items_arrived,
                     m.items_done);
  out += fmt::format("  {:<14} {}\n", "Ladder", ladder_text(check_ladder(s)));
  out +=
      "\nPer hour: sessions launched, completed, failed; time-average in flight by state; "
      "429s; items done; unread queue at the hour's end\n";
  out += fmt::format("  {:<11} {:>6} {:>5} {:>5} {:>7} {:>7} {:>7} {:>5} {:>5} {:>5} {:>6}  {}\n",
                     "hour", "launch", "done", "fail", "working", "blocked", "asleep", "peak",
                     "429", "items", "queue", "# working - blocked . asleep");
  for (const SessionHourRow& h : r.hours) {
    if (!hour_overlaps(h, r.run.hourly.bucket_s, m.from_s, m.to_s)) continue;
    out += fmt::format(
        "  {:<11} {:6.0f} {:5.0f} {:5.0f} {:7.2f} {:7.2f} {:7.2f} {:5.0f} {:5.0f} {:5.0f} {:6.0f}  "
        "{}\n",
        text::hour_label(static_cast<int64_t>(std::floor(h.t_s / text::kHour))), h.launches,
        h.completions, h.failures, h.working, h.blocked, h.asleep, h.peak_in_flight, h.errors_429,
        h.items_done, h.queue_unread, occupancy_bar(h));
  }
  if (!r.advice.empty()) {
    out += "\nAdvice\n";
    for (const Advice& a : r.advice) {
      out += "  - " + a.title + "\n    " + a.why + "\n";
    }
  }
  if (r.montecarlo) out += session_montecarlo_text(*r.montecarlo);
  return out;
}

std::string session_series_csv(const SessionRun& run) {
  const auto& b = run.series;
  const char* separator = "";
  std::string out;
  for (const sessions::BucketField& field : sessions::kBucketFields)
    out += std::exchange(separator, ",") + std::string(field.name);
  for (size_t i = 0; i < b.size(); ++i) {
    separator = "\n";
    for (const sessions::BucketField& field : sessions::kBucketFields)
      out += std::exchange(separator, ",") +
             fmt::format(fmt::runtime(field.csv_format), field.get(b)[i]);
  }
  return out + "\n";
}

std::vector<CalibrationRow> scheduler_calibration_of_presets(int seeds) {
  return scheduler_calibration(
      [](const std::string& name) { return preset_or_throw(name).scenario; }, seeds);
}

std::string calibration_page(const std::vector<CalibrationRow>& rows, int seeds) {
  std::string n = std::to_string(seeds);
  std::string out =
      "# The scheduler incident: the post-mortem's figures against the model\n\n"
      "Generated by `retrystorm calibrate > docs/scheduler-calibration.md` (seeds 1 to " +
      n +
      "); `tests/session_calibration_test.cpp` checks that this page is the program's "
      "output. Every quantitative claim of the post-mortem a preset reproduces: the claim, "
      "the simulated value over " +
      n +
      " seeds (mean, then per seed min / median / max; a yes/no claim gives the seeds it "
      "holds in), the tolerance and the verdict. Tolerances are those of the presets' table in "
      "[docs/sessions.md](sessions.md) where it gives "
      "one, issue 16's for the figures it adds, else stated in the notes. Verdicts: `holds`; "
      "`off`, the model misses the figure, and the note says why; `conflict`, the "
      "post-mortem's own figures cannot all hold, and the note says which reading the model "
      "keeps. The model is [docs/sessions.md](sessions.md).\n\n"
      "| figure | preset | post-mortem | simulated | tolerance | verdict |\n"
      "|---|---|---|---|---|---|\n";
  for (const CalibrationRow& r : rows)
    out += "| `" + r.figure + "` | `" + r.preset + "` | " + r.claim + " | " + r.simulated + " | " +
           r.tolerance + " | " + calibration_verdict_name(r.verdict) + " |\n";
  out += "\n## How each figure is measured\n\n";
  for (const CalibrationRow& r : rows) out += "- `" + r.figure + "`: " + r.note + ".\n";
  return out;
}

}  // namespace retrystorm
