#include "cli/analyze_command.hpp"

#include <cmath>
#include <ctime>
#include <iostream>

#include "analysis/incident/accumulator.hpp"
#include "cli/common.hpp"
#include "io/analyze_report.hpp"
#include "io/input_text.hpp"
#include "io/logs/line_reader.hpp"
#include "io/logs/read_logs.hpp"
#include "io/logs/times.hpp"
#include "io/observed_report.hpp"
#include "io/prometheus_client.hpp"
#include "io/scenario_io.hpp"
#include "model/keys.hpp"
#include "text/list.hpp"

namespace retrystorm::cli {

struct AnalyzeCommand {
  CLI::App* cmd = nullptr;
  std::vector<std::string> logs;
  std::string from, to, ladder, format = "text", out, emit_scenario, slots, deadline;
  // --prometheus: the series of a Prometheus instead of logs (docs/prometheus.md).
  std::string prometheus, step = "1", selector, metrics_file, metrics_as = "envoy";
  std::string trigger_start, trigger_end, timeout, capacity;
};

namespace {

// The most steps --ladder takes: client.retries' range in the key table.
constexpr size_t kMaxLadderSteps = 100;

double clock_option(const std::string& name, const std::string& text) {
  auto t = logs::parse_clock(text);
  if (!t || *t < 0 || *t > logs::kMaxTime)
    throw InputError(name + ": '" + logs::printable(text) +
                     "' is not a time from 0 to 1000000000 s; write seconds (70200) or a clock "
                     "([Nd]HH:MM[:SS], e.g. 1d09:40)");
  return *t;
}

// A finite number in (low, high] (or [low, high] when `low_in`); InputError
// naming the option, the value and the range.
double number_option(const std::string& name, const std::string& text, double low, bool low_in,
                     double high, const std::string& what) {
  auto v = logs::parse_number(text);
  if (!v || *v > high || *v < low || (!low_in && *v == low))
    throw InputError(name + ": '" + logs::printable(text) + "' is not allowed; " + what);
  return *v;
}

std::vector<double> ladder_option(const std::string& text) {
  const char* what =
      "give steps in seconds, above 0 and at most 10000000, separated by commas, e.g. "
      "30,60,120,240,480,960";
  std::vector<std::string_view> items = text::list_items(text);
  if (items.empty()) number_option("--ladder", text, 0, false, logs::kMaxDuration, what);
  if (items.size() > kMaxLadderSteps)
    throw InputError("--ladder: more than " + std::to_string(kMaxLadderSteps) + " steps");
  std::vector<double> steps;
  for (std::string_view item : items)
    steps.push_back(
        number_option("--ladder", std::string(item), 0, false, logs::kMaxDuration, what));
  return steps;
}

incident::AnalysisOptions options_of(const AnalyzeCommand& c) {
  incident::AnalysisOptions o;
  if (!c.from.empty()) o.from_s = clock_option("--from", c.from);
  if (!c.to.empty()) o.to_s = clock_option("--to", c.to);
  if (o.from_s && o.to_s && *o.to_s <= *o.from_s)
    throw InputError("--to: '" + logs::printable(c.to) + "' is not after --from '" +
                     logs::printable(c.from) + "'");
  if (c.cmd->count("--slots"))
    o.slots = number_option("--slots", c.slots, 1, true, logs::kMaxCount,
                            "the ceiling is a number of slots from 1 to 1000000000");
  if (c.cmd->count("--deadline"))
    o.deadline_s = number_option("--deadline", c.deadline, 0, false, logs::kMaxDuration,
                                 "the deadline is seconds above 0 and at most 10000000");
  if (!c.ladder.empty()) o.ladder_s = ladder_option(c.ladder);
  return o;
}

// The replay scenario, checked the way `run --scenario` reads it.
std::string checked_replay(const incident::Report& r, const std::string& file) {
  std::string yaml = replay_yaml(r);
  try {
    validate(scenario_from_text(yaml, file));
  } catch (const InputError& e) {
    throw InputError("--emit-scenario: the replay of this log would not run, so '" +
                     logs::printable(file) + "' is not written: " + e.what());
  }
  return yaml;
}

void add_prometheus_options(AnalyzeCommand& c) {
  auto* a = c.cmd;
  a->add_option("--prometheus", c.prometheus,
                "read the series from this Prometheus (http://HOST:PORT) instead of logs; "
                "--from/--to are then Unix seconds or 2024-01-01T00:00:00Z (default: the last "
                "hour)");
  a->add_option("--step", c.step, "--prometheus: seconds between points (default 1)");
  a->add_option("--selector", c.selector,
                "--prometheus: label matchers for every metric, e.g. '{cluster=\"orders\"}'");
  a->add_option("--metrics-as", c.metrics_as,
                "--prometheus: whose metric names: envoy | istio | linkerd | grpc (default envoy)");
  a->add_option("--metrics", c.metrics_file,
                "--prometheus: a mapping file (YAML or JSON) of quantity: PromQL instead");
  a->add_option("--trigger-start", c.trigger_start,
                "--prometheus: when the trigger began, as --from (default: the first bad second)");
  a->add_option("--trigger-end", c.trigger_end,
                "--prometheus: when the trigger ended, as --from (default: the end of the first "
                "bad stretch)");
  a->add_option("--timeout", c.timeout,
                "--prometheus: the clients' timeout in seconds, for latency and the replay");
  a->add_option("--capacity", c.capacity,
                "--prometheus: the server's capacity in requests/s, for the replay (default: the "
                "most successes a second)");
}

double unix_option(const std::string& name, const std::string& text) {
  auto t = parse_unix_time(text);
  if (!t || *t < 0 || *t > 4e9)
    throw InputError(name + ": '" + logs::printable(text) +
                     "' is not Unix seconds (0 to 4e9) or a time like 2024-01-01T00:00:00Z");
  return *t;
}

PrometheusQuery query_of(const AnalyzeCommand& c) {
  PrometheusQuery q;
  q.url = c.prometheus;
  q.to_unix_s = c.to.empty() ? std::floor(static_cast<double>(std::time(nullptr)))
                             : unix_option("--to", c.to);
  q.from_unix_s = c.from.empty() ? q.to_unix_s - 3600 : unix_option("--from", c.from);
  if (q.to_unix_s <= q.from_unix_s)
    throw InputError("--to: '" + logs::printable(c.to) + "' is not after --from '" +
                     logs::printable(c.from) + "'");
  q.step_s = number_option("--step", c.step, 0, false, 86400,
                           "the step is seconds above 0 and at most 86400");
  q.selector = c.selector;
  if (!c.timeout.empty())
    q.timeout_s = number_option("--timeout", c.timeout, 0, false, logs::kMaxDuration,
                                "the timeout is seconds above 0 and at most 10000000");
  return q;
}

incident::ObservedOptions observed_options(const AnalyzeCommand& c, const PrometheusQuery& q) {
  incident::ObservedOptions o;
  auto relative = [&](const std::string& name, const std::string& text) {
    double t = unix_option(name, text);
    if (t < q.from_unix_s || t > q.to_unix_s)
      throw InputError(name + ": '" + logs::printable(text) + "' is not between --from and --to");
    return t - q.from_unix_s;
  };
  if (!c.trigger_start.empty()) o.trigger_start_s = relative("--trigger-start", c.trigger_start);
  if (!c.trigger_end.empty()) o.trigger_end_s = relative("--trigger-end", c.trigger_end);
  if (o.trigger_start_s && o.trigger_end_s && *o.trigger_end_s < *o.trigger_start_s)
    throw InputError("--trigger-end: before --trigger-start");
  o.timeout_s = q.timeout_s;
  if (!c.capacity.empty())
    o.capacity_per_s = number_option("--capacity", c.capacity, 0, false, 1e9,
                                     "the capacity is requests/s above 0 and at most 1e9");
  return o;
}

// `analyze --prometheus`: the series through the HTTP API, the diagnosis, the
// report and the replay.
int run_prometheus(AnalyzeCommand& c) {
  check_format(c.format, {"text", "json"});
  if (!c.logs.empty()) throw InputError("analyze: give log files or --prometheus, not both");
  for (const char* name : {"--slots", "--deadline", "--ladder"})
    if (c.cmd->count(name)) throw InputError(std::string(name) + ": only with log files");
  PrometheusQuery q = query_of(c);
  MetricsMapping m = c.metrics_file.empty()
                         ? builtin_mapping(c.metrics_as)
                         : mapping_from_text(read_input_file(c.metrics_file, "--metrics"),
                                             logs::printable(c.metrics_file));
  incident::ObservedOptions o = observed_options(c, q);
  incident::ObservedReport r = incident::analyze_observed(fetch_observed(q, m), o);
  ObservedSource src{logs::printable(q.url),
                     c.metrics_file.empty() ? c.metrics_as : logs::printable(c.metrics_file),
                     q.from_unix_s, q.step_s};
  std::string text =
      c.format == "json" ? observed_json(r, src).dump(2) + "\n" : observed_text(r, src);
  if (!c.emit_scenario.empty()) {
    std::string yaml = observed_replay_yaml(r, o);
    try {
      validate(scenario_from_text(yaml, c.emit_scenario));
    } catch (const InputError& e) {
      throw InputError("--emit-scenario: the replay would not run, so '" +
                       logs::printable(c.emit_scenario) + "' is not written: " + e.what());
    }
    emit(yaml, c.emit_scenario, "--emit-scenario");
  }
  emit(text, c.out);
  return 0;
}

}  // namespace

int run_analyze_command(AnalyzeCommand& c);

void add_analyze_command(CLI::App& app, CommandTable& table) {
  static AnalyzeCommand c;
  c.cmd = app.add_subcommand(
      "analyze",
      "read incident logs (sessions.csv, events.jsonl, requests.csv, client logs, per-second "
      "CSVs; format detected) and report Little's law by hour, fake saturation, errors as a "
      "retry signal, durations, the ladder against the deadline and a ranked diagnosis; or, "
      "with --prometheus URL, the verdict of `run` from Envoy, Istio, Linkerd or gRPC metrics");
  c.cmd->add_option("logs", c.logs, "log files (or --prometheus URL)");
  c.cmd->add_option(
      "--from", c.from,
      "only sessions starting from T (seconds or [Nd]HH:MM[:SS]); with --prometheus: Unix "
      "seconds or 2024-01-01T00:00:00Z");
  c.cmd->add_option("--to", c.to,
                    "only sessions starting before T; with --prometheus, the end of the range");
  c.cmd->add_option("--slots", c.slots,
                    "the concurrency ceiling for utilization, 1 to 1e9 (default: the peak in "
                    "flight)");
  c.cmd->add_option("--deadline", c.deadline,
                    "the session deadline in seconds, up to 1e7 (default: where killed or failed "
                    "sessions' durations cluster)");
  c.cmd->add_option("--ladder", c.ladder,
                    "the backoff ladder in seconds, e.g. 30,60,120,240,480,960 (default: "
                    "inferred from events)");
  c.cmd->add_option("--format", c.format, "text | json | html (one self-contained file)");
  c.cmd->add_option("--out", c.out, "write to FILE (atomically) instead of standard output");
  c.cmd->add_option("--emit-scenario", c.emit_scenario,
                    "also write a session-engine scenario (YAML) that replays the incident");
  add_prometheus_options(c);
  table.add(c.cmd, [] { return run_analyze_command(c); });
}

int run_analyze_command(AnalyzeCommand& c) {
  if (!c.prometheus.empty()) return run_prometheus(c);
  if (c.logs.empty())
    throw InputError(
        "analyze: give log files, or --prometheus URL (see retrystorm analyze --help)");
  for (const char* name : {"--step", "--selector", "--metrics-as", "--metrics", "--trigger-start",
                           "--trigger-end", "--timeout", "--capacity"})
    if (c.cmd->count(name)) throw InputError(std::string(name) + ": only with --prometheus");
  check_format(c.format, {"text", "json", "html"});
  incident::Accumulator acc(options_of(c));
  auto sources = logs::read_logs(c.logs, acc);
  incident::Report r = acc.finish();
  for (const auto& s : sources)
    r.sources.push_back(logs::printable(s.path) + ": " + logs::format_name(s.format));
  if (r.sessions <= 0)
    throw InputError(logs::printable(c.logs.front()) +
                     (c.logs.size() > 1 ? " and the others" : "") + ": no sessions or requests" +
                     (c.from.empty() && c.to.empty() ? "" : " between --from and --to") +
                     "; nothing to analyze");
  std::string text =
      c.format == "json"
          ? analyze_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
      : c.format == "html" ? analyze_html(r)
                           : analyze_text(r);
  if (!c.emit_scenario.empty()) emit(checked_replay(r, c.emit_scenario), c.emit_scenario);
  emit(text, c.out);
  // Also on standard error: JSON and HTML reports go to files or pipes.
  for (const auto& w : r.warnings) std::cerr << "retrystorm: warning: " << w << "\n";
  return 0;
}

}  // namespace retrystorm::cli
