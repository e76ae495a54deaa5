// The retrystorm command line: presets, run, ladder, tipping, sweep, serve.
// Command names, options and exit statuses follow contract.md.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "analysis/cost.hpp"
#include "analysis/ladder.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "cli/analyze_command.hpp"
#include "cli/common.hpp"
#include "cli/config_commands.hpp"
#include "engines/agent/request_log.hpp"
#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "io/metrics_out.hpp"
#include "io/prometheus_client.hpp"
#include "io/result_json.hpp"
#include "io/scenario_io.hpp"
#include "io/session_report.hpp"
#include "io/text_report.hpp"
#include "server/server.hpp"

using namespace retrystorm;
using retrystorm::cli::check_format;
using retrystorm::cli::emit;

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

struct ScenarioOptions {
  std::string preset;
  std::string file;
  std::vector<std::string> sets;
  bool allow_large = false;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--preset", preset, "a preset name (see `retrystorm presets`)");
    cmd.add_option("--scenario", file, "a scenario file, YAML or JSON");
    cmd.add_option("--set", sets, "PATH=VALUE, e.g. client.retries=0 (repeatable)")
        ->allow_extra_args(false);
    cmd.add_flag("--allow-large", allow_large,
                 "run requests above the cost limits of the server (about a minute of CPU, "
                 "1 GiB), up to 8 GiB of memory (docs/limits.md)");
  }

  // Refuses, before any work, a request that costs more than allowed.
  void check(const Cost& cost, const std::string& what) const {
    if (allow_large) return check_cost(cost, large_cost_limits(), what);
    check_cost(cost, CostLimits{}, what, "; --allow-large allows more");
  }

  // The scenario to run: preset or file (default: order-status), then --set.
  Scenario build() const { return cli::build_scenario(preset, file, sets, "order-status"); }
};

std::string dump(const nlohmann::json& j) {
  return j.dump(2) + "\n";
}

// The directory of --log, made when missing.
void make_log_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError("--log: cannot make the directory '" + dir +
                     "': " + (ec ? ec.message() : "a file of that name is in the way"));
}

// `run` with the session model: the report, and the logs when --log names a
// directory (written whole or not at all, like every output).
void run_sessions_command(const Scenario& s, const std::string& format, const std::string& out,
                          const std::string& log_dir) {
  EventsJsonl events;
  SessionReport r = make_session_report(s, log_dir.empty() ? nullptr : &events);
  if (!log_dir.empty()) {
    make_log_dir(log_dir);
    std::filesystem::path dir(log_dir);
    cli::emit_all({{(dir / "sessions.csv").string(), sessions_csv(r.run)},
                   {(dir / "events.jsonl").string(), events.text()}},
                  "--log");
  }
  if (format == "csv") return emit(session_series_csv(r.run), out);
  emit(format == "json" ? dump(session_json(r)) : session_text(r), out);
}

// `run --metrics-out`: the run's series under one system's metric names.
void write_metrics(const Scenario& s, const std::string& file, const std::string& scheme,
                   const std::string& start_text) {
  double start = kDefaultMetricsStart;
  if (!start_text.empty()) {
    auto t = parse_unix_time(start_text);
    if (!t || *t < 0 || *t > 4e9)
      throw InputError("--metrics-start: '" + start_text +
                       "' is not Unix seconds (0 to 4e9) or a time like 2024-01-01T00:00:00Z");
    start = *t;
  }
  const auto& schemes = metrics_schemes();
  if (std::find(schemes.begin(), schemes.end(), scheme) == schemes.end())
    throw InputError("--metrics-as: '" + scheme + "' is not one of envoy, istio, linkerd, grpc");
  emit(metrics_openmetrics(run_engine(s), scheme, start), file, "--metrics-out");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "retrystorm: how client retries turn a short incident into an outage that sustains "
      "itself, and which defenses get a system out.\nSee README.md and docs/ for the model."};
  app.require_subcommand(1);
  app.set_version_flag("--version", RETRYSTORM_VERSION);

  auto* presets_cmd = app.add_subcommand("presets", "list the presets with their descriptions");
  auto* keys_cmd =
      app.add_subcommand("keys", "list the scenario keys: type, allowed values, default, meaning");
  int calibrate_seeds = 40;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate",
      "the scheduler presets against the post-mortem's figures (docs/scheduler-calibration.md)");
  calibrate_cmd->add_option("--seeds", calibrate_seeds, "seeds 1 to N (default 40)")
      ->check(CLI::Range(1, 1000));
  std::string format = "text", out;

  ScenarioOptions run_opts;
  auto* run_cmd = app.add_subcommand("run", "run one scenario: verdict, metrics, chart, table");
  run_opts.add_to(*run_cmd);
  run_cmd->add_option("--format", format, "text | json | csv (csv: the per-step series)");
  run_cmd->add_option("--out", out, "write to FILE (atomically) instead of standard output");
  bool no_trace = false;
  run_cmd->add_flag("--no-trace", no_trace, "json: leave the decision trace out");
  int runs = 0;
  std::optional<double> seed;
  std::string log_dir;
  run_cmd
      ->add_option("--runs", runs,
                   "Monte Carlo replications (agent engine, session model; default: runs key)")
      ->check(CLI::Range(1, 10000));
  run_cmd->add_option("--seed", seed,
                      "seed of the agent engine or session model (default: seed key)");
  run_cmd->add_option("--log", log_dir,
                      "agent engine: write DIR/requests.csv, one row per attempt; sessions: "
                      "DIR/sessions.csv and DIR/events.jsonl");
  std::string metrics_out, metrics_as = "envoy", metrics_start;
  run_cmd->add_option("--metrics-out", metrics_out,
                      "also write the run's series as OpenMetrics text, one sample a second, "
                      "for promtool tsdb create-blocks-from openmetrics (docs/prometheus.md)");
  run_cmd->add_option("--metrics-as", metrics_as,
                      "the names and labels of --metrics-out: envoy | istio | linkerd | grpc "
                      "(default envoy)");
  run_cmd->add_option("--metrics-start", metrics_start,
                      "the timestamp of t = 0 in --metrics-out: Unix seconds or "
                      "2024-01-01T00:00:00Z (the default)");

  ScenarioOptions ladder_opts;
  auto* ladder_cmd =
      app.add_subcommand("ladder", "the defenses one at a time, as the scenario's ladder says");
  ladder_opts.add_to(*ladder_cmd);
  ladder_cmd->add_option("--format", format, "text | json");
  ladder_cmd->add_option("--out", out, "write to FILE (atomically)");

  ScenarioOptions tipping_opts;
  double grid = 0;
  auto* tipping_cmd = app.add_subcommand("tipping", "the shortest incident that does not recover");
  tipping_opts.add_to(*tipping_cmd);
  auto* grid_opt = tipping_cmd->add_option("--grid", grid,
                                           "grid of incident lengths in seconds, above 0 (default: "
                                           "the scenario's tipping.grid_s, else ten steps)");
  tipping_cmd->add_option("--format", format, "text | json");
  tipping_cmd->add_option("--out", out, "write to FILE (atomically)");

  ScenarioOptions sweep_opts;
  std::vector<std::string> vary;
  unsigned threads = 0;
  auto* sweep_cmd = app.add_subcommand("sweep", "a grid of runs over numeric keys, one row each");
  sweep_opts.add_to(*sweep_cmd);
  sweep_cmd->add_option("--vary", vary, "PATH=FROM:TO:STEP (repeatable; the grid is their product)")
      ->required();
  sweep_cmd->add_option("--format", format, "csv | json")->default_str("csv");
  sweep_cmd->add_option("--threads", threads, "worker threads (default: every core)");
  sweep_cmd->add_option("--out", out, "write to FILE (atomically)");

  std::string host = "127.0.0.1";
  int port = 8080;
  auto* serve_cmd = app.add_subcommand("serve", "the web explorer and its JSON API");
  serve_cmd->add_option("--host", host, "address to bind (default 127.0.0.1, loopback only)");
  serve_cmd->add_option("--port", port, "port (default 8080)")->check(CLI::Range(1, 65535));
  ServerLimits serve_limits;
  serve_cmd
      ->add_option("--allow-host", serve_limits.allowed_hosts,
                   "another Host name to answer, NAME or NAME:PORT (repeatable; default: the "
                   "bound address, localhost and 127.0.0.1; see docs/http-api.md)")
      ->allow_extra_args(false);

  auto& config_cmds = cli::add_config_commands(app);  // import, export, lint
  auto& analyze_cmd = cli::add_analyze_command(app);

  // CLI11 reports an unknown command as a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "retrystorm: unknown command '" << argv[1] << "'; choose one of " << names
                << "\n";
      return kExitBadInput;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "retrystorm: " << e.what() << " (see --help)\n";
    return kExitBadInput;
  }

  try {
    if (auto status = cli::run_config_commands(config_cmds)) return *status;
    if (auto status = cli::run_analyze_command(analyze_cmd)) return *status;
    if (presets_cmd->parsed()) {
      std::cout << presets_text();
    } else if (keys_cmd->parsed()) {
      std::cout << keys_markdown();
    } else if (calibrate_cmd->parsed()) {
      std::cout << calibration_page(scheduler_calibration_of_presets(calibrate_seeds),
                                    calibrate_seeds);
    } else if (run_cmd->parsed()) {
      check_format(format, {"text", "json", "csv"});
      Scenario s = run_opts.build();
      if (seed) set_key(s, "seed", *seed);
      if (runs > 0) set_key(s, "runs", double(runs));
      validate(s);
      run_opts.check(run_cost(s), "run");
      if (!metrics_out.empty() && !engine_facts(s).run)
        throw InputError("--metrics-out: needs a per-step engine (fluid or agent), not sessions");
      if (!engine_facts(s).run) {  // sessions: the session report
        run_sessions_command(s, format, out, log_dir);
        return 0;
      }
      if (!log_dir.empty()) {
        if (!engine_facts(s).logs)
          throw InputError("--log: needs engine agent or sessions (--set engine=agent)");
        make_log_dir(log_dir);
        RequestsCsv csv((std::filesystem::path(log_dir) / "requests.csv").string());
        run_agent(s, {&csv, nullptr});
        csv.close();
      }
      if (!metrics_out.empty()) write_metrics(s, metrics_out, metrics_as, metrics_start);
      std::optional<MonteCarloResult> mc;
      if (s.runs > 1 && format != "csv") mc = run_montecarlo(s);
      if (format == "csv") {
        emit(series_csv(run_engine(s).series), out);
      } else {
        RunReport r = make_report(s);
        if (no_trace) r.trace.clear();
        nlohmann::json j = format == "json" ? run_json(r) : nlohmann::json();
        if (mc) j["montecarlo"] = montecarlo_json(*mc);
        emit(format == "json" ? dump(j) : run_text(r) + (mc ? montecarlo_text(*mc) : ""), out);
      }
    } else if (ladder_cmd->parsed()) {
      check_format(format, {"text", "json"});
      Scenario s = ladder_opts.build();
      ladder_opts.check(ladder_cost(s), "ladder");
      auto rows = run_ladder(s);
      emit(format == "json" ? dump(ladder_json(rows)) : ladder_text(s, rows), out);
    } else if (tipping_cmd->parsed()) {
      check_format(format, {"text", "json"});
      if (grid_opt->count() && !(std::isfinite(grid) && grid > 0))
        throw InputError("--grid: " + grid_opt->as<std::string>() +
                         " must be a number of seconds above 0");
      Scenario s = tipping_opts.build();
      tipping_opts.check(tipping_cost(s, grid), "tipping");
      TippingResult t = tipping_point(s, grid);
      emit(format == "json" ? dump(tipping_json(t)) : tipping_text(s, t), out);
    } else if (sweep_cmd->parsed()) {
      if (format == "text") format = "csv";
      check_format(format, {"csv", "json"});
      Scenario s = sweep_opts.build();
      std::vector<SweepAxis> axes;
      for (const auto& v : vary) axes.push_back(parse_axis(v));
      SweepOptions options;
      options.threads = threads;
      sweep_opts.check(sweep_cost(s, axes, options), "sweep");
      auto started = std::chrono::steady_clock::now();
      options.progress = [&](size_t done, size_t total) {
        if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
        std::cerr << "\rsweep: " << done << " of " << total << " runs" << std::flush;
        if (done == total) std::cerr << "\n";
      };
      auto rows = run_sweep(s, axes, options);
      emit(format == "json" ? dump(sweep_json(axes, rows)) : sweep_csv(axes, rows), out);
    } else if (serve_cmd->parsed()) {
      return serve(host, port, serve_limits);
    }
  } catch (const InputError& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "retrystorm: out of memory: the request is larger than this machine can hold; "
                 "make it smaller (see docs/limits.md)\n";
    return kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";  // names the path
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "retrystorm: " << e.what() << "\n";
    return kExitFailure;
  }
  return 0;
}
