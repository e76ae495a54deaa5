// The lab's commands, in retrystorm-lab (`retrystorm lab` starts it).
#include "cli/lab_command.hpp"

#include <iostream>
#include <memory>

#include "cli/common.hpp"
#include "formats/input_text.hpp"
#include "formats/scenario_io.hpp"
#include "lab/backend.hpp"
#include "lab/lab.hpp"
#include "lab/lab_report.hpp"
#include "lab/process.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

namespace {

constexpr int kExitInterrupted = 130;

struct LabCommand {
  ScenarioOptions scenario;  // --preset, --scenario, --set
  std::string through = "direct", config, format = "text", out;
  double scale = 1;
  std::optional<double> seed;
  double bin_s = 0.5;
};

int run_lab_command(const LabCommand& c) {
  check_format(c.format, {"text", "json", "csv"});
  check_output(c.out);  // before the run, not after its minutes
  lab::LabOptions o;
  o.scenario = c.scenario.build();
  if (c.seed) set_key(o.scenario, "seed", KeyValue{*c.seed});  // the key's own range
  o.through = c.through;
  o.config_path = c.config;
  o.scale = c.scale;
  if (!(c.bin_s >= 0.05 && c.bin_s <= 10)) throw InputError("--bin: between 0.05 and 10 s");
  o.bin_s = c.bin_s;
  o.program = lab::self_executable();
  o.progress = [](const std::string& line) { std::cerr << "\r" << line << "   " << std::flush; };
  lab::check_lab(o);
  lab::LabResult r = lab::run_lab(o);
  std::cerr << "\n";
  if (c.format == "json")
    emit(lab::lab_json(r).dump(2) + "\n", c.out);
  else if (c.format == "csv")
    emit(lab::lab_csv(r), c.out);
  else
    emit(lab::lab_text(r), c.out);
  return r.interrupted ? kExitInterrupted : 0;
}

void add_lab(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<LabCommand>();
  auto* cmd = app.add_subcommand("lab", kLabSummary);
  c->scenario.add_source_to(*cmd);
  cmd->add_option("--through", c->through,
                  "who retries: direct (the generator, with the scenario's policy), haproxy or "
                  "nginx (the real proxy), grpc (gRPC C-core's retryPolicy); the layer is "
                  "configured from the scenario's export or --config");
  cmd->add_option("--config", c->config,
                  "the layer's retry settings instead of the export (same shape as "
                  "`retrystorm export --to haproxy|nginx|grpc`)");
  cmd->add_option("--scale", c->scale, "rates and capacities x K, times unchanged (default 1)");
  cmd->add_option("--seed", c->seed, "the generator's and the agent engine's seed");
  cmd->add_option("--bin", c->bin_s, "seconds per measured step (default 0.5)");
  cmd->add_option("--format", c->format, "text, json or csv");
  cmd->add_option("--out", c->out, "write to FILE instead of standard output");
  table.add(cmd, [c] { return run_lab_command(*c); });
}

void add_lab_backend(CLI::App& app, CommandTable& table) {
  auto o = std::make_shared<lab::BackendOptions>();
  auto* cmd = app.add_subcommand("lab-backend", "the lab's backend process (started by `lab`)");
  cmd->group("");  // hidden: an internal part of `lab`
  cmd->add_option("--port", o->port);
  cmd->add_option("--capacity", o->capacity_per_s)->required();
  cmd->add_option("--slots", o->slots);
  cmd->add_option("--queue-limit", o->queue_limit);
  cmd->add_flag("--shed-abandoned", o->shed_abandoned);
  cmd->add_flag("--grpc", o->grpc);
  cmd->add_option("--incident-start", o->incident_start_s);
  cmd->add_option("--incident-duration", o->incident_duration_s);
  cmd->add_option("--capacity-factor", o->capacity_factor);
  cmd->add_option("--t0-unix-ms", o->t0_unix_ms)->required();
  cmd->add_option("--bin", o->bin_s);
  cmd->add_option("--horizon", o->horizon_s);
  cmd->add_option("--out", o->out);
  auto call_scenario = std::make_shared<std::string>();
  cmd->add_option("--call-port", o->call_port);
  cmd->add_option("--call-scenario", *call_scenario);
  cmd->add_option("--call-seed", o->call_seed);
  table.add(cmd, [o, call_scenario] {
    if (!call_scenario->empty())
      o->call =
          scenario_from_text(read_input_file(*call_scenario, "--call-scenario"), *call_scenario);
    return lab::run_backend(*o);
  });
}

}  // namespace

void add_lab_commands(CLI::App& app, CommandTable& table) {
  add_lab(app, table);
  add_lab_backend(app, table);
}

}  // namespace retrystorm::cli
