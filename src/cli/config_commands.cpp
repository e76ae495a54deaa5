#include "cli/config_commands.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "app/configs.hpp"
#include "app/scenario_request.hpp"
#include "cli/common.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "systems/common.hpp"
#include "systems/mesh/mesh.hpp"
#include "text/printable.hpp"

namespace retrystorm::cli {

using namespace retrystorm::configs;

struct ConfigCommands {
  CLI::App* import_cmd = nullptr;
  CLI::App* export_cmd = nullptr;
  CLI::App* lint_cmd = nullptr;
  std::vector<std::string> files;
  std::string format = "text";
  std::string out;
  std::string to;
  std::string preset, scenario;
  std::vector<std::string> sets;
  int call = -1;                 // export: one call of a graph
  std::string mesh;              // import, lint: a mesh's folder
  std::string calls;             // its calls file
  std::string calls_metrics;     // or a saved Prometheus answer of its call rates
  std::string calls_traces;      // or a saved export of traces
  std::string calls_prometheus;  // or a live Prometheus asked for the call rates
  std::string calls_at;          // ... at this time (default: its now)
  double calls_window = 600;     // ... over this window, seconds
  bool simulate = false;
  double load = 0, instances = 0;
  CLI::Option* load_opt = nullptr;
  CLI::Option* instances_opt = nullptr;
};

namespace {

Scenario build_scenario(const ConfigCommands& c, const std::string& fallback) {
  return cli::build_scenario(c.preset, c.scenario, c.sets, fallback);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "retrystorm: warning: " << w << "\n";
}

// The mesh's files of a known system that could not be read: the calls they
// would name take the defaults, whatever the output's format.
void print_unread(const MeshImport& m) {
  for (const auto& u : m.unread)
    std::cerr << "retrystorm: warning: not read, so its calls take the defaults: " << u << "\n";
}

app::MeshSources mesh_sources(const ConfigCommands& c);

// import --mesh: the graph, with each call's policy from the folder.
int import_mesh_command(const ConfigCommands& c) {
  MeshImport m = app::import_mesh_folder(app::read_mesh_folder(c.mesh, mesh_sources(c)));
  print_warnings(m.warnings);
  print_unread(m);
  if (c.format == "text")
    emit(mesh_text(m), c.out);
  else if (c.format == "json")
    emit(m.document.dump(2) + "\n", c.out);
  else
    emit(json_to_yaml_text(m.document), c.out);
  return 0;
}

// --calls and the call graph's sources belong to --mesh; --calls-at and
// --calls-window to --calls-from-prometheus.
void check_mesh_options(const ConfigCommands& c, const std::string& command) {
  const char* given = !c.calls.empty()              ? "--calls"
                      : !c.calls_metrics.empty()    ? "--calls-from-metrics"
                      : !c.calls_traces.empty()     ? "--calls-from-traces"
                      : !c.calls_prometheus.empty() ? "--calls-from-prometheus"
                                                    : nullptr;
  if (c.mesh.empty() && given)
    throw InputError(command + ": " + given +
                     " goes with --mesh DIR (the folder whose calls it gives)");
  // Asked of the command being run: both commands have the option.
  const CLI::App* cmd = command == "import" ? c.import_cmd : c.lint_cmd;
  bool window = cmd->count("--calls-window") > 0;
  if (c.calls_prometheus.empty() && (!c.calls_at.empty() || window))
    throw InputError(command + ": " + (window ? "--calls-window" : "--calls-at") +
                     " goes with --calls-from-prometheus URL (the time and window it asks)");
}

// Where the mesh's call graph comes from; the live query's time and window checked.
app::MeshSources mesh_sources(const ConfigCommands& c) {
  app::MeshSources s{c.calls, c.calls_metrics, c.calls_traces, std::nullopt};
  if (c.calls_prometheus.empty()) return s;
  LiveCallRates live;
  live.url = c.calls_prometheus;
  if (!c.calls_at.empty()) {
    live.at_unix_s = parse_unix_time(c.calls_at);
    if (!live.at_unix_s)
      throw InputError("--calls-at: '" + printable(c.calls_at) +
                       "' is not a time; give Unix seconds or 2024-01-01T00:00:00Z");
  }
  if (!(c.calls_window >= 1 && c.calls_window <= 7 * 86400))
    throw InputError("--calls-window: " + number_text(c.calls_window) +
                     " is not a window; give 1 to 604800 seconds (default 600)");
  live.window_s = c.calls_window;
  s.prometheus = live;
  return s;
}

int import_command(const ConfigCommands& c) {
  check_mesh_options(c, "import");
  if (!c.mesh.empty()) {
    if (!c.files.empty())
      throw InputError("import: give files or --mesh DIR, not both (a folder's files are read)");
    return import_mesh_command(c);
  }
  if (c.files.empty()) throw InputError("import: give configuration files, or --mesh DIR");
  ImportResult r = import_configs(app::read_config_files(c.files));
  print_warnings(r.warnings);
  if (c.format == "text")
    emit(keys_text(r), c.out);
  else if (c.format == "json")
    emit(keys_object(r.keys).dump(2) + "\n", c.out);
  else
    emit(json_to_yaml_text(keys_object(r.keys)), c.out);
  return 0;
}

int export_command(const ConfigCommands& c) {
  Scenario s = build_scenario(c, "order-status");
  // Given at all, the call is checked (a negative one was ignored).
  if (c.export_cmd->count("--call")) s = call_scenario(s, c.call, "--call");  // model/graph.hpp
  ExportResult r = export_config(s, c.to);
  if (r.system == System::grpc)  // JSON has no comments: the notes go to stderr too
    for (const auto& n : r.notes) std::cerr << "retrystorm: note: " << n << "\n";
  emit(r.text, c.out);
  return 0;
}

int lint_command(const ConfigCommands& c) {
  app::LintRequest request;
  LintOptions& o = request.options;
  if (c.load_opt->count() > 0) o.load = checked_lint_load(c.load, "--load");
  if (c.instances_opt->count() > 0)
    o.instances = checked_lint_instances(c.instances, "--instances");
  o.simulate = c.simulate;
  o.preset = c.preset;
  // With --mesh, --set applies to the folder's graph (below), not to a preset.
  if (c.mesh.empty() && (!c.scenario.empty() || !c.sets.empty()))
    o.base = build_scenario(c, "primary-failover");
  request.files = app::read_config_files(c.files);
  check_mesh_options(c, "lint");
  if (!c.mesh.empty()) {
    if (!c.files.empty() || !c.preset.empty() || !c.scenario.empty())
      throw InputError(
          "lint --mesh: the folder and its calls file are the scenario; give no files, --preset "
          "or --scenario (--set applies on top)");
    MeshImport m = app::import_mesh_folder(app::read_mesh_folder(c.mesh, mesh_sources(c)));
    if (c.format == "text") print_warnings(m.warnings);
    print_unread(m);
    app::ScenarioRequest mesh;
    mesh.scenario = m.document;
    // A storm of more attempts than a run allows is what lint reports, not a
    // reason to refuse the folder (a run of it is still refused: --simulate).
    mesh.limits.max_attempts = std::numeric_limits<int>::max();
    for (const std::string& kv : c.sets) mesh.sets.push_back({kv, std::nullopt});
    request.scenario = app::assemble_scenario(mesh).scenario;
    request.source = "mesh " + c.mesh;
  } else if (c.files.empty() && (!c.preset.empty() || !c.scenario.empty())) {
    request.scenario = build_scenario(c, "primary-failover");
    request.source = c.preset.empty() ? c.scenario : "preset " + c.preset;
  } else if (c.files.empty()) {
    throw InputError(
        "lint: name configuration files, or --preset or --scenario to lint a "
        "scenario's own client policy");
  }
  LintReport r = app::lint(request);
  if (c.format == "text") print_warnings(r.imported.warnings);
  emit(c.format == "json" ? lint_json(r).dump(2) + "\n" : lint_text(r), c.out);
  return r.exit_status();
}

// The live call graph's options, the same on import and lint.
void add_live_calls_options(CLI::App* cmd, ConfigCommands& c) {
  cmd->add_option("--calls-from-prometheus", c.calls_prometheus,
                  "with --mesh: who calls whom and how often, asked of a Prometheus at URL "
                  "(Istio's istio_requests_total, else Linkerd's request_total, by caller "
                  "and callee); a calls file, if any, adds its keys");
  cmd->add_option("--calls-at", c.calls_at,
                  "with --calls-from-prometheus: when (Unix seconds or "
                  "2024-01-01T00:00:00Z; default: Prometheus' now); pick a quiet time");
  cmd->add_option("--calls-window", c.calls_window,
                  "with --calls-from-prometheus: the rate window, seconds (default 600)");
}

// --preset and --scenario of export and lint (an empty one is refused).
void add_scenario_source(CLI::App* cmd, ConfigCommands& c, const std::string& preset_help,
                         const std::string& scenario_help) {
  cmd->add_option("--preset", c.preset, preset_help)
      ->check(not_empty("a preset name (`retrystorm presets` lists them)"));
  cmd->add_option("--scenario", c.scenario, scenario_help)->check(not_empty("a scenario file"));
}

}  // namespace

void add_config_commands(CLI::App& app, CommandTable& table) {
  static ConfigCommands c;
  c.import_cmd = app.add_subcommand(
      "import",
      "read Envoy, gRPC, Istio, Linkerd, AWS, HAProxy or nginx retry configuration as scenario "
      "keys; several files are stacked layers, outermost first");
  c.import_cmd->add_option("files", c.files, "configuration files (format detected)");
  c.import_cmd->add_option("--mesh", c.mesh,
                           "a folder of Kubernetes manifests and proxy files: writes the graph of "
                           "services, each call's policy from the files that name its callee "
                           "(docs/graph.md)");
  c.import_cmd->add_option("--calls", c.calls,
                           "with --mesh: who calls whom (default: the folder's calls.yaml)");
  c.import_cmd->add_option("--calls-from-metrics", c.calls_metrics,
                           "with --mesh: who calls whom and how often, from a saved Prometheus "
                           "answer of request rates by caller and callee (Istio, Linkerd); a "
                           "calls file, if any, adds its keys");
  c.import_cmd->add_option("--calls-from-traces", c.calls_traces,
                           "with --mesh: who calls whom, from a saved export of traces (Jaeger, "
                           "Zipkin v2 or OTLP JSON); a calls file, if any, adds its keys");
  add_live_calls_options(c.import_cmd, c);
  c.import_cmd->add_option("--format", c.format, "text (path = value # source) | json | yaml")
      ->check(one_of({"text", "json", "yaml"}));
  c.import_cmd->add_option("--out", c.out, "write to FILE (atomically)");

  c.export_cmd =
      app.add_subcommand("export",
                         "write the scenario's client policy as Envoy, gRPC, Istio, Linkerd, AWS, "
                         "HAProxy or nginx configuration, with comments on what the system "
                         "cannot express");
  c.export_cmd->add_option("--to", c.to, "envoy | grpc | istio | linkerd | aws | haproxy | nginx")
      ->required();
  add_scenario_source(c.export_cmd, c, "a preset name (default: order-status)",
                      "a scenario file, YAML or JSON");
  c.export_cmd->add_option("--set", c.sets, "PATH=VALUE (repeatable)")->allow_extra_args(false);
  c.export_cmd->add_option("--out", c.out, "write to FILE (atomically)");
  c.export_cmd->add_option("--call", c.call,
                           "a graph's call to export, N of calls[N] (docs/graph.md); a graph "
                           "has one policy per call");

  c.lint_cmd = app.add_subcommand(
      "lint",
      "check retry configuration files for retry storms in waiting; exit 0 clean, 1 "
      "findings, 2 bad input");
  c.lint_cmd->add_option("files", c.files,
                         "configuration files; several are stacked layers (none: lint the client "
                         "policy of --preset or --scenario)");
  c.lint_cmd->add_option("--mesh", c.mesh,
                         "a folder of Kubernetes manifests and proxy files with its calls.yaml: "
                         "lint the graph they make (docs/graph.md)");
  c.lint_cmd->add_option("--calls", c.calls, "with --mesh: the calls file");
  c.lint_cmd->add_option("--calls-from-metrics", c.calls_metrics,
                         "with --mesh: the calls from a saved Prometheus answer of request "
                         "rates by caller and callee");
  c.lint_cmd->add_option("--calls-from-traces", c.calls_traces,
                         "with --mesh: the calls from a saved export of traces (Jaeger, Zipkin "
                         "v2 or OTLP JSON)");
  add_live_calls_options(c.lint_cmd, c);
  c.lint_cmd->add_flag("--simulate", c.simulate,
                       "also run an incident (primary-failover, or --preset) with the imported "
                       "policy and with each suggested fix");
  add_scenario_source(c.lint_cmd, c, "the incident to simulate, and its load",
                      "a scenario file to simulate instead");
  c.lint_cmd->add_option("--set", c.sets, "PATH=VALUE on that scenario (repeatable)")
      ->allow_extra_args(false);
  // Checked in lint_command: CLI::Range lets NaN through.
  c.load_opt = c.lint_cmd->add_option(
      "--load", c.load,
      "demand / capacity outside incidents, 0 to " + number_text(kMaxLintLoad) + " (e.g. 0.6)");
  c.instances_opt = c.lint_cmd->add_option(
      "--instances", c.instances,
      "client instances that share the load, 1 to " + number_text(kMaxLintInstances) +
          " (per-instance budgets scale by it; default: a Kubernetes Deployment's replicas "
          "among the files, else 100)");
  c.lint_cmd->add_option("--format", c.format, "text | json")->check(one_of({"text", "json"}));
  c.lint_cmd->add_option("--out", c.out, "write to FILE (atomically)");
  table.add(c.import_cmd, [] { return import_command(c); });
  table.add(c.export_cmd, [] { return export_command(c); });
  table.add(c.lint_cmd, [] { return lint_command(c); });
}

}  // namespace retrystorm::cli
