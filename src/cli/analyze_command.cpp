#include "cli/analyze_command.hpp"

#include <iostream>
#include <optional>

#include "app/analyze.hpp"
#include "cli/common.hpp"
#include "formats/analyze_report.hpp"
#include "formats/metrics_out.hpp"
#include "formats/observed_report.hpp"
#include "logs/atomic_file.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

// The options bound straight into the app layer's requests; --from and --to
// serve both (logs: seconds or clocks; --prometheus: Unix times).
struct AnalyzeCommand {
  CLI::App* cmd = nullptr;
  app::AnalyzeRequest logs;
  app::ObservedRequest metrics;  // --prometheus (docs/prometheus.md)
  std::string format = "text", out, emit_scenario, slots, deadline;
};

namespace {

app::AnalyzeRequest logs_request(const AnalyzeCommand& c) {
  app::AnalyzeRequest r = c.logs;
  // Given even when empty, which is refused: CLI11 tells given from not.
  if (c.cmd->count("--slots")) r.slots = app::OptionText{"--slots", c.slots};
  if (c.cmd->count("--deadline")) r.deadline = app::OptionText{"--deadline", c.deadline};
  return r;
}

void add_prometheus_options(AnalyzeCommand& c) {
  auto* a = c.cmd;
  a->add_option("--prometheus", c.metrics.url,
                "read the series from this Prometheus (http://HOST:PORT) instead of logs; "
                "--from/--to are then Unix seconds or 2024-01-01T00:00:00Z (default: the last "
                "hour)");
  a->add_option("--step", c.metrics.step.text, "--prometheus: seconds between points (default 1)");
  a->add_option("--selector", c.metrics.selector,
                "--prometheus: label matchers for every metric, e.g. '{cluster=\"orders\"}'");
  a->add_option("--metrics-as", c.metrics.metrics_as,
                "--prometheus: whose metric names: envoy | istio | linkerd | grpc (default envoy)")
      ->check(one_of(metrics_schemes()));
  a->add_option("--metrics", c.metrics.metrics_file,
                "--prometheus: a mapping file (YAML or JSON) of quantity: PromQL instead");
  a->add_option("--trigger-start", c.metrics.trigger_start.text,
                "--prometheus: when the trigger began, as --from (default: the first bad second)");
  a->add_option("--trigger-end", c.metrics.trigger_end.text,
                "--prometheus: when the trigger ended, as --from (default: the end of the first "
                "bad stretch)");
  a->add_option("--timeout", c.metrics.timeout.text,
                "--prometheus: the clients' timeout in seconds, for latency and the replay");
  a->add_option("--capacity", c.metrics.capacity.text,
                "--prometheus: the server's capacity in requests/s, for the replay (default: the "
                "most successes a second)");
}

app::ObservedRequest metrics_request(const AnalyzeCommand& c) {
  app::ObservedRequest r = c.metrics;
  r.from = c.logs.from;
  r.to = c.logs.to;
  return r;
}

// The report, and with --emit-scenario the replay: both outputs or neither
// (the replay goes into place once the report is out).
template <typename Replay>
void emit_with_replay(const AnalyzeCommand& c, const std::string& text, Replay replay_text) {
  std::optional<AtomicFile> replay;
  if (!c.emit_scenario.empty()) {
    replay.emplace(c.emit_scenario, "--emit-scenario");
    replay->write(replay_text());
  }
  emit(text, c.out);
  if (replay) replay->commit();
}

// `analyze --prometheus`: the series through the HTTP API, the diagnosis, the
// report and the replay.
int run_prometheus(AnalyzeCommand& c) {
  check_format(c.format, {"text", "json"});  // no HTML report of metrics
  if (!c.logs.logs.empty()) throw InputError("analyze: give log files or --prometheus, not both");
  for (const char* name : {"--slots", "--deadline", "--ladder"})
    if (c.cmd->count(name)) throw InputError(std::string(name) + ": only with log files");
  app::ObservedAnswer a = app::analyze_prometheus(metrics_request(c));
  std::string text = c.format == "json" ? observed_json(a.report, a.source).dump(2) + "\n"
                                        : observed_text(a.report, a.source);
  emit_with_replay(c, text, [&] { return app::checked_observed_replay(a, c.emit_scenario); });
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
  c.cmd->add_option("logs", c.logs.logs, "log files (or --prometheus URL)");
  c.cmd->add_option(
      "--from", c.logs.from.text,
      "only sessions starting from T (seconds or [Nd]HH:MM[:SS]); with --prometheus: Unix "
      "seconds or 2024-01-01T00:00:00Z");
  c.cmd->add_option("--to", c.logs.to.text,
                    "only sessions starting before T; with --prometheus, the end of the range");
  c.cmd->add_option("--slots", c.slots,
                    "the concurrency ceiling for utilization, 1 to 1e9 (default: the deadline "
                    "over the launch interval, else the peak in flight)");
  c.cmd->add_option("--deadline", c.deadline,
                    "the session deadline in seconds, up to 1e7 (default: where killed or failed "
                    "sessions' durations cluster)");
  c.cmd->add_option("--ladder", c.logs.ladder.text,
                    "the backoff ladder in seconds, e.g. 30,60,120,240,480,960 (default: "
                    "inferred from events)");
  c.cmd->add_option("--format", c.format, "text | json | html (one self-contained file)")
      ->check(one_of({"text", "json", "html"}));
  c.cmd->add_option("--out", c.out, "write to FILE (atomically) instead of standard output");
  c.cmd->add_option("--emit-scenario", c.emit_scenario,
                    "also write a session-engine scenario (YAML) that replays the incident");
  add_prometheus_options(c);
  table.add(c.cmd, [] { return run_analyze_command(c); });
}

int run_analyze_command(AnalyzeCommand& c) {
  if (!c.metrics.url.empty()) return run_prometheus(c);
  if (c.logs.logs.empty())
    throw InputError(
        "analyze: give log files, or --prometheus URL (see retrystorm analyze --help)");
  for (const char* name : {"--step", "--selector", "--metrics-as", "--metrics", "--trigger-start",
                           "--trigger-end", "--timeout", "--capacity"})
    if (c.cmd->count(name)) throw InputError(std::string(name) + ": only with --prometheus");
  incident::Report r = app::analyze(logs_request(c));
  std::string text =
      c.format == "json"
          ? analyze_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
      : c.format == "html" ? analyze_html(r)
                           : analyze_text(r);
  emit_with_replay(c, text, [&] { return app::checked_replay(r, c.emit_scenario); });
  // Also on standard error: JSON and HTML reports go to files or pipes.
  for (const auto& w : r.warnings) std::cerr << "retrystorm: warning: " << w << "\n";
  return 0;
}

}  // namespace retrystorm::cli
