#include "app/analyze.hpp"

#include <cmath>
#include <ctime>

#include "analysis/incident/accumulator.hpp"
#include "formats/analyze_report.hpp"
#include "formats/input_text.hpp"
#include "formats/scenario_io.hpp"
#include "logs/line_reader.hpp"
#include "logs/read_logs.hpp"
#include "logs/times.hpp"
#include "model/keys.hpp"
#include "systems/prometheus/client.hpp"
#include "systems/prometheus/series.hpp"
#include "text/clock.hpp"
#include "text/list.hpp"

namespace retrystorm::app {

namespace {

// The most steps a ladder takes: client.retries' range in the key table.
constexpr size_t kMaxLadderSteps = 100;

double clock_option(const OptionText& o) {
  auto t = logs::parse_clock(o.text);
  if (!t || *t < 0 || *t > logs::kMaxTime)
    throw InputError(o.name + ": " + o.shown() +
                     " is not a time from 0 to 1000000000 s; write seconds (70200) or a clock "
                     "([Nd]HH:MM[:SS], e.g. 1d09:40)");
  return *t;
}

std::vector<double> ladder_option(const OptionText& o) {
  const char* what =
      "give steps in seconds, above 0 and at most 10000000, separated by commas, e.g. "
      "30,60,120,240,480,960";
  std::vector<std::string_view> items = text::list_items(o.text);
  if (items.empty()) checked_number(o, 0, false, logs::kMaxDuration, what);
  if (items.size() > kMaxLadderSteps)
    throw InputError(o.name + ": more than " + std::to_string(kMaxLadderSteps) + " steps");
  std::vector<double> steps;
  for (std::string_view item : items)
    steps.push_back(
        checked_number({o.name, std::string(item), o.typed}, 0, false, logs::kMaxDuration, what));
  return steps;
}

double unix_option(const OptionText& o) {
  auto t = parse_unix_time(o.text);
  if (!t || *t < 0 || *t > 4e9)
    throw InputError(o.name + ": " + o.shown() +
                     " is not Unix seconds (0 to 4e9) or a time like 2024-01-01T00:00:00Z");
  return *t;
}

PrometheusQuery query_of(const ObservedRequest& r) {
  PrometheusQuery q;
  q.url = r.url;
  q.to_unix_s =
      r.to.text.empty() ? std::floor(static_cast<double>(std::time(nullptr))) : unix_option(r.to);
  q.from_unix_s = r.from.text.empty() ? q.to_unix_s - text::kHour : unix_option(r.from);
  if (q.to_unix_s <= q.from_unix_s)
    throw InputError(r.to.name + ": " + r.to.shown() + " is not after " + r.from.name + " " +
                     r.from.shown());
  q.step_s = checked_number(r.step, 0, false, text::kDay,
                            "the step is seconds above 0 and at most " + number_text(text::kDay));
  q.selector = r.selector;
  if (!r.timeout.text.empty())
    q.timeout_s = checked_number(r.timeout, 0, false, logs::kMaxDuration,
                                 "the timeout is seconds above 0 and at most 10000000");
  return q;
}

incident::ObservedOptions observed_options(const ObservedRequest& r, const PrometheusQuery& q) {
  incident::ObservedOptions o;
  auto relative = [&](const OptionText& t) {
    double at = unix_option(t);
    if (at < q.from_unix_s || at > q.to_unix_s)
      throw InputError(t.name + ": " + t.shown() + " is not between " + r.from.name + " and " +
                       r.to.name);
    return at - q.from_unix_s;
  };
  if (!r.trigger_start.text.empty()) o.trigger_start_s = relative(r.trigger_start);
  if (!r.trigger_end.text.empty()) o.trigger_end_s = relative(r.trigger_end);
  if (o.trigger_start_s && o.trigger_end_s && *o.trigger_end_s < *o.trigger_start_s)
    throw InputError(r.trigger_end.name + ": before " + r.trigger_start.name);
  o.timeout_s = q.timeout_s;
  if (!r.capacity.text.empty())
    o.capacity_per_s = checked_number(r.capacity, 0, false, 1e9,
                                      "the capacity is requests/s above 0 and at most 1e9");
  return o;
}

// The replay scenario, once it validates: a file that would not run is never written.
std::string runnable_replay(std::string yaml, const std::string& file, const char* replay) {
  try {
    validate(scenario_from_text(yaml, file));
  } catch (const InputError& e) {
    throw InputError(std::string("--emit-scenario: ") + replay + " would not run, so '" +
                     printable(file) + "' is not written: " + e.what());
  }
  return yaml;
}

}  // namespace

std::string OptionText::shown() const {
  return typed ? "'" + printable(text) + "'" : text;
}

double checked_number(const OptionText& o, double low, bool low_in, double high,
                      const std::string& what) {
  auto v = logs::parse_number(o.text);
  if (!v || *v > high || *v < low || (!low_in && *v == low))
    throw InputError(o.name + ": " + o.shown() + " is not allowed; " + what);
  return *v;
}

incident::AnalysisOptions analysis_options(const AnalyzeRequest& r) {
  incident::AnalysisOptions o;
  if (!r.from.text.empty()) o.from_s = clock_option(r.from);
  if (!r.to.text.empty()) o.to_s = clock_option(r.to);
  if (o.from_s && o.to_s && *o.to_s <= *o.from_s)
    throw InputError(r.to.name + ": " + r.to.shown() + " is not after " + r.from.name + " " +
                     r.from.shown());
  if (r.slots)
    o.slots = checked_number(*r.slots, 1, true, logs::kMaxCount,
                             "the ceiling is a number of slots from 1 to 1000000000");
  if (r.deadline)
    o.deadline_s = checked_number(*r.deadline, 0, false, logs::kMaxDuration,
                                  "the deadline is seconds above 0 and at most 10000000");
  if (!r.ladder.text.empty()) o.ladder_s = ladder_option(r.ladder);
  return o;
}

incident::Report analyze(const AnalyzeRequest& r) {
  if (r.logs.empty()) throw InputError("analyze: give log files");
  incident::Accumulator acc(analysis_options(r));
  auto sources = logs::read_logs(r.logs, acc);
  incident::Report report = acc.finish();
  for (const auto& s : sources)
    report.sources.push_back(printable(s.path) + ": " + logs::format_name(s.format));
  if (report.sessions <= 0)
    throw InputError(printable(r.logs.front()) + (r.logs.size() > 1 ? " and the others" : "") +
                     ": no sessions or requests" +
                     (r.from.text.empty() && r.to.text.empty()
                          ? ""
                          : " between " + r.from.name + " and " + r.to.name) +
                     "; nothing to analyze");
  return report;
}

std::string checked_replay(const incident::Report& report, const std::string& file) {
  return runnable_replay(replay_yaml(report), file, "the replay of this log");
}

ObservedAnswer analyze_prometheus(const ObservedRequest& r) {
  PrometheusQuery q = query_of(r);
  MetricsMapping m = r.metrics_file.empty()
                         ? builtin_mapping(r.metrics_as)
                         : mapping_from_text(read_input_file(r.metrics_file, "--metrics"),
                                             printable(r.metrics_file));
  ObservedAnswer a;
  a.options = observed_options(r, q);
  a.report = incident::analyze_observed(fetch_observed(q, m), a.options);
  a.source = {printable(q.url), r.metrics_file.empty() ? r.metrics_as : printable(r.metrics_file),
              q.from_unix_s, q.step_s};
  return a;
}

std::string checked_observed_replay(const ObservedAnswer& a, const std::string& file) {
  return runnable_replay(observed_replay_yaml(a.report, a.options), file, "the replay");
}

}  // namespace retrystorm::app
