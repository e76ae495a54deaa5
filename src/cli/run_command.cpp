#include "cli/run_command.hpp"

#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "app/commands.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "formats/metrics_out.hpp"
#include "formats/result_json.hpp"
#include "formats/risk_report.hpp"
#include "formats/session_report.hpp"
#include "formats/text_report.hpp"
#include "logs/requests_csv_writer.hpp"
#include "logs/session_logs.hpp"
#include "model/keys.hpp"
#include "systems/prometheus/client.hpp"

namespace retrystorm::cli {

namespace {

struct RunCommand {
  ScenarioOptions scenario;
  std::string format = "text", out;
  bool no_trace = false;
  int runs = 0;
  std::optional<double> seed;
  std::string log_dir;
  std::string metrics_out, metrics_as = "envoy", metrics_start;
  std::string per;   // csv of a graph: "service" or "call" rows
  std::string walk;  // a splitting walk of `risk --splitting`, replayed
};

// The directory of --log, made when missing.
void make_log_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError("--log: cannot make the directory '" + dir +
                     "': " + (ec ? ec.message() : "a file of that name is in the way"));
}

// A --log step whose failure is the user's to fix (a path, a full disk).
void log_step(const std::function<void()>& step) {
  try {
    step();
  } catch (const InputError&) {
    throw;  // already names --log
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("--log: ") + e.what());
  }
}

// A log writer that streams into `path`, opened as a --log step.
template <class Writer>
std::unique_ptr<Writer> log_file(const std::string& path) {
  std::unique_ptr<Writer> w;
  log_step([&] { w = std::make_unique<Writer>(path); });
  return w;
}

// The session model: the report, and the logs when --log names a directory
// (written whole or not at all, like every output).
int run_sessions(const RunCommand& c, const Scenario& s, const app::CostBudget& budget) {
  app::RunOptions o;
  std::unique_ptr<EventsJsonl> events;  // streamed during the run
  std::filesystem::path dir(c.log_dir);
  if (!c.log_dir.empty()) {
    make_log_dir(c.log_dir);
    events = log_file<EventsJsonl>((dir / "events.jsonl").string());
    o.session_log = events.get();
  }
  SessionReport r = std::move(*app::run(s, o, budget).sessions);
  if (events) {
    // Both files or neither: sessions.csv is written whole before either
    // goes into place.
    AtomicFile csv((dir / "sessions.csv").string(), "--log");
    csv.write(sessions_csv(r.run));
    events->commit();
    csv.commit();
  }
  if (c.format == "csv")
    emit(session_series_csv(r.run), c.out);
  else
    emit(c.format == "json" ? dump(session_json(r)) : session_text(r), c.out);
  return 0;
}

// --log with the agent engine: DIR/requests.csv, one row per attempt.
void write_request_log(const Scenario& s, const std::string& log_dir) {
  if (!engine_facts(s).logs)
    throw InputError("--log: needs engine agent or sessions (--set engine=agent)");
  make_log_dir(log_dir);
  RequestsCsv csv((std::filesystem::path(log_dir) / "requests.csv").string(), "--log",
                  !s.graph.empty());
  run_agent(s, {&csv, nullptr});
  csv.close();
}

// --metrics-start as Unix seconds (the default start without it).
double metrics_start(const RunCommand& c) {
  if (c.metrics_start.empty()) return kDefaultMetricsStart;
  auto t = parse_unix_time(c.metrics_start);
  if (!t || *t < 0 || *t > 4e9)
    throw InputError("--metrics-start: '" + c.metrics_start +
                     "' is not Unix seconds (0 to 4e9) or a time like 2024-01-01T00:00:00Z");
  return *t;
}

// --metrics-out: the run's series under one system's metric names.
void write_metrics(const Scenario& s, const RunCommand& c) {
  emit(metrics_openmetrics(run_engine(s), c.metrics_as, metrics_start(c)), c.metrics_out,
       "--metrics-out");
}

// The options that go together, checked before any output is written (a
// refused command leaves no request log or metrics behind).
void check_run_options(const RunCommand& c, const Scenario& s) {
  if (c.metrics_out.empty() && !c.metrics_start.empty())
    throw InputError("--metrics-start: goes with --metrics-out FILE (the samples it stamps)");
  metrics_start(c);
  if (!c.metrics_out.empty() && !engine_facts(s).run)
    throw InputError("--metrics-out: needs a per-step engine (fluid or agent), not sessions");
  if (!c.per.empty() && (c.format != "csv" || s.graph.empty() || !engine_facts(s).run))
    throw InputError("--per: '" + c.per +
                     "' needs --format csv and a scenario with services and calls");
}

// The scenario with --seed and --runs, validated again.
Scenario scenario_of(const RunCommand& c) {
  Scenario s = c.scenario.build();
  if (c.seed) set_key(s, "seed", *c.seed);
  if (c.runs > 0) set_key(s, "runs", double(c.runs));
  validate(s);
  // The flags say what the keys would: ignored by an engine that draws nothing.
  std::vector<std::string> flags;
  if (c.seed) flags.push_back("seed");
  if (c.runs > 0) flags.push_back("runs");
  for (const std::string& w : ignored_keys(s, flags))
    std::cerr << "retrystorm: warning: --" << w << "\n";
  return s;
}

// --walk: one walk of `risk --splitting` replayed (docs/risk.md): the agent
// run whose generator restarts where the walk says. Its own run: no advice
// or tipping point (they would run other seeds).
int run_walk(const RunCommand& c, const Scenario& s) {
  if (s.engine != Engine::agent || !s.graph.empty() || s.runs > 1)
    throw InputError("--walk: one run of the agent engine without services (engine agent, runs 1)");
  if (!c.log_dir.empty() || !c.metrics_out.empty() || !c.per.empty())
    throw InputError(
        "--walk: the report or the series only (not with --log, --metrics-out, --per)");
  SplitControl walk;
  walk.reseeds = parse_walk(c.walk);
  RunResult r = run_agent(s, {.split = &walk});
  if (c.format == "csv") return emit(series_csv(r.series), c.out), 0;
  const RunReport report =
      report_of_run(s, std::move(r), {.advice = false, .tipping = false, .trace = !c.no_trace});
  emit(c.format == "json" ? dump(run_json(report)) : run_text(report), c.out);
  return 0;
}

int run(const RunCommand& c) {
  Scenario s = scenario_of(c);
  app::CostBudget budget = c.scenario.budget();
  app::check_run_cost(s, budget);  // before any log is written
  if (!c.walk.empty()) return run_walk(c, s);
  check_run_options(c, s);
  if (!engine_facts(s).run) return run_sessions(c, s, budget);
  if (!c.log_dir.empty()) write_request_log(s, c.log_dir);
  if (!c.metrics_out.empty()) write_metrics(s, c);
  if (c.format == "csv") {
    RunResult r = run_engine(s);
    emit(c.per == "service" ? graph_services_csv(r)
         : c.per == "call"  ? graph_calls_csv(r)
                            : series_csv(r.series),
         c.out);
    return 0;
  }
  app::RunOptions o;
  o.report.trace = !c.no_trace;
  o.montecarlo = app::montecarlo_wanted(s);
  // The answer and its JSON are freed before the text is written: the text
  // alone is the peak while writing (docs/limits.md).
  const std::string text = [&] {
    app::RunAnswer a = app::run(s, o, budget);
    return c.format == "json"
               ? dump(app::run_answer_json(a))
               : run_text(*a.report) + (a.montecarlo ? montecarlo_text(*a.montecarlo) : "");
  }();
  emit(text, c.out);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<RunCommand>();
  auto* cmd = app.add_subcommand("run", "run one scenario: verdict, metrics, chart, table");
  c->scenario.add_to(*cmd);
  cmd->add_option("--format", c->format, "text | json | csv (csv: the per-step series)")
      ->check(one_of({"text", "json", "csv"}));
  cmd->add_option("--per", c->per,
                  "csv of a graph: one row per step and service, or per step and call, with "
                  "their series (docs/graph.md)")
      ->check(one_of({"service", "call"}));
  cmd->add_option("--out", c->out, "write to FILE (atomically) instead of standard output");
  cmd->add_flag("--no-trace", c->no_trace, "json: leave the decision trace out");
  cmd->add_option("--runs", c->runs,
                  "Monte Carlo replications (agent engine, session model; default: runs key)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--seed", c->seed,
                  "seed of the agent engine or session model (default: seed key)");
  cmd->add_option("--walk", c->walk,
                  "EVENTS:SEED,...: replay a walk of `risk --splitting` (its tipped_path): "
                  "the generator restarts with SEED after EVENTS events (docs/risk.md)")
      ->check(not_empty("a walk, EVENTS:SEED,... (a tipped_path of `risk --splitting`)"));
  cmd->add_option("--log", c->log_dir,
                  "agent engine: write DIR/requests.csv, one row per attempt; sessions: "
                  "DIR/sessions.csv and DIR/events.jsonl")
      ->check(not_empty("a directory"));
  cmd->add_option("--metrics-out", c->metrics_out,
                  "also write the run's series as OpenMetrics text, one sample a second, "
                  "for promtool tsdb create-blocks-from openmetrics (docs/prometheus.md)");
  cmd->add_option("--metrics-as", c->metrics_as,
                  "the names and labels of --metrics-out: envoy | istio | linkerd | grpc "
                  "(default envoy)")
      ->check(one_of(metrics_schemes()));
  cmd->add_option("--metrics-start", c->metrics_start,
                  "the timestamp of t = 0 in --metrics-out: Unix seconds or "
                  "2024-01-01T00:00:00Z (the default)");
  table.add(cmd, [c] { return run(*c); });
}

}  // namespace retrystorm::cli
