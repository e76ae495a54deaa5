#include "cli/study_commands.hpp"

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "app/commands.hpp"
#include "cli/merge_command.hpp"
#include "formats/result_json.hpp"
#include "formats/risk_report.hpp"
#include "formats/risk_shard.hpp"
#include "formats/step_down_report.hpp"
#include "formats/text_report.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

namespace {

// What every study command takes: the scenario, the format and the output.
struct StudyCommand {
  ScenarioOptions scenario;
  std::string format = "text", out;
};

struct TippingCommand : StudyCommand {
  double grid = 0;
  CLI::Option* grid_opt = nullptr;
};

struct SweepCommand : StudyCommand {
  std::vector<std::string> vary;
  unsigned threads = 0;
  int runs = 1;
  CLI::Option* runs_opt = nullptr;
  double seed = 0;
  CLI::Option* seed_opt = nullptr;
  std::string shard;  // "K/N": write shard K of N (docs/distributed.md)
};

struct RiskCommand : StudyCommand {
  // L1,L2,...: multiples of demand.rate_per_s; repeated, the lists add up.
  std::vector<std::string> loads = {"1"};
  int runs = 0;
  double horizon = 0, seed = 0;
  unsigned threads = 0;
  bool no_exact = false;
  bool splitting = false;
  int split_effort = 40, split_runs = 8, split_levels = 8;
  std::string vary;   // PATH=V1,V2,... or PATH=FROM:TO:STEP: the metastable region
  std::string shard;  // K/N: evidence for `merge` (docs/distributed.md)
  CLI::Option* seed_opt = nullptr;
};

struct StepDownCommand : StudyCommand {
  StepDownOptions options;
  double seed = 0;
  CLI::Option* seed_opt = nullptr;
};

int ladder(const StudyCommand& c) {
  Scenario s = c.scenario.build();
  auto rows = app::ladder(s, c.scenario.budget());
  emit(c.format == "json" ? dump(ladder_json(rows)) : ladder_text(s, rows), c.out);
  return 0;
}

int tipping(const TippingCommand& c) {
  if (c.grid_opt->count() && !(std::isfinite(c.grid) && c.grid > 0))
    throw InputError("--grid: " + c.grid_opt->as<std::string>() +
                     " must be a number of seconds above 0");
  Scenario s = c.scenario.build();
  TippingResult t = app::tipping(s, c.grid, c.scenario.budget());
  emit(c.format == "json" ? dump(tipping_json(t)) : tipping_text(s, t), c.out);
  return 0;
}

// --seed, when given: the first replication's seed.
void apply_seed(Scenario& s, double seed, const CLI::Option* given) {
  if (!given->count()) return;
  if (!(seed >= 0 && seed <= kMaxSeed && std::floor(seed) == seed))
    throw InputError("--seed: " + given->as<std::string>() + " must be a whole number from 0 to " +
                     number_text(kMaxSeed));
  s.seed = seed;
}

int step_down(const StepDownCommand& c) {
  Scenario s = c.scenario.build();
  apply_seed(s, c.seed, c.seed_opt);
  StepDown d = app::step_down(s, c.options, c.scenario.budget());
  emit(c.format == "json" ? dump(step_down_json(d)) : step_down_text(d), c.out);
  return 0;
}

// risk --shard K/N: replications of shard K's range as evidence for `merge`.
int risk_shard(const RiskCommand& c, const Scenario& s, const RiskOptions& o) {
  const ShardSpec shard = parse_shard(c.shard);
  RiskRequest r{s, o, std::nullopt};
  if (!c.vary.empty()) r.knob = parse_axis(c.vary);
  const ShardRange range =
      risk_shard_range(shard.index, shard.of, static_cast<size_t>(risk_runs(s, o)));
  app::check_risk_shard(r, range.first, range.count, c.scenario.budget());
  const auto cells = gather_risk_cells(r, range.first, range.count);
  emit(risk_shard_text(r, range, cells, c.format), c.out);
  return 0;
}

// --loads L1,L2,...: each a number (the ranges are checked with the request).
std::vector<double> risk_loads(const std::vector<std::string>& lists) {
  std::vector<double> loads;
  for (const std::string& text : lists) {
    std::string bad;
    if (!parse_number_list(text, loads, bad))
      throw InputError("--loads: '" + bad + "' in '" + text +
                       "' is not a number; give multiples of demand.rate_per_s, like 0.8,1,1.2");
  }
  if (loads.empty())
    throw InputError("--loads: give at least one load, a multiple of demand.rate_per_s, like 1");
  return loads;
}

int risk(const RiskCommand& c) {
  // Its keys warned of as the agent engine reads them: risk runs no other.
  Scenario s = c.scenario.build(Engine::agent);
  apply_seed(s, c.seed, c.seed_opt);
  RiskOptions o;
  o.loads = risk_loads(c.loads);
  o.runs = c.runs;
  o.horizon_s = c.horizon;
  o.threads = c.threads;
  o.exact = !c.no_exact;
  o.splitting = c.splitting;
  o.split_effort = c.split_effort;
  o.split_runs = c.split_runs;
  o.split_levels = c.split_levels;
  if (!c.shard.empty()) return risk_shard(c, s, o);
  if (!c.vary.empty()) {
    RiskMap map = app::risk_map(s, parse_axis(c.vary), o, c.scenario.budget());
    emit(c.format == "json" ? dump(risk_map_json(map)) : risk_map_text(map), c.out);
    return 0;
  }
  RiskResult r = app::risk(s, o, c.scenario.budget());
  emit(c.format == "json" ? dump(risk_json(r)) : risk_text(r), c.out);
  return 0;
}

// Progress on standard error once a sweep has taken more than a second.
std::function<void(size_t, size_t)> sweep_progress() {
  auto started = std::chrono::steady_clock::now();
  return [started](size_t done, size_t total) {
    if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
    std::cerr << "\rsweep: " << done << " of " << total << " runs" << std::flush;
    if (done == total) std::cerr << "\n";
  };
}

int sweep(const SweepCommand& c) {
  // The study commands' default, text, is a sweep's csv (--format itself takes csv or json).
  std::string format = c.format == "text" ? "csv" : c.format;
  check_format(format, {"csv", "json"});
  Scenario s = c.scenario.build();
  std::vector<SweepAxis> axes;
  for (const auto& v : c.vary) axes.push_back(parse_axis(v));
  SweepOptions options;
  options.threads = c.threads;
  options.progress = sweep_progress();
  // Without --runs, the scenario's runs (`--set runs=5`) wherever `run` reads
  // them too (the fluid engine warns them ignored).
  options.runs = c.runs_opt->count() ? c.runs : app::montecarlo_wanted(s) ? s.runs : 1;
  if (c.seed_opt->count()) options.seed = c.seed;
  if (!c.shard.empty()) {
    ShardSpec shard = parse_shard(c.shard);
    size_t points = app::sweep_points(s, axes, options);
    select_shard(s, axes, shard, options);
    auto rows = app::sweep(s, axes, options, c.scenario.budget());
    emit(shard_text(s, axes, options, points, shard, rows, format), c.out);
    return 0;
  }
  auto rows = app::sweep(s, axes, options, c.scenario.budget());
  emit(format == "json" ? dump(sweep_json(axes, rows)) : sweep_csv(axes, rows), c.out);
  return 0;
}

// --format (text | json) and --out, last among a study's options.
void add_text_or_json(CLI::App& cmd, StudyCommand& c) {
  cmd.add_option("--format", c.format, "text | json")->check(one_of({"text", "json"}));
  cmd.add_option("--out", c.out, "write to FILE (atomically)");
}

}  // namespace

void add_ladder_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<StudyCommand>();
  auto* cmd =
      app.add_subcommand("ladder", "the defenses one at a time, as the scenario's ladder says");
  c->scenario.add_to(*cmd);
  add_text_or_json(*cmd, *c);
  table.add(cmd, [c] { return ladder(*c); });
}

void add_tipping_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<TippingCommand>();
  auto* cmd = app.add_subcommand("tipping", "the shortest incident that does not recover");
  c->scenario.add_to(*cmd);
  c->grid_opt = cmd->add_option("--grid", c->grid,
                                "grid of incident lengths in seconds, above 0 (default: "
                                "the scenario's tipping.grid_s, else ten steps)");
  add_text_or_json(*cmd, *c);
  table.add(cmd, [c] { return tipping(*c); });
}

void add_risk_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<RiskCommand>();
  auto* cmd = app.add_subcommand(
      "risk", "how likely randomness tips the service into the stuck state, and how long it stays");
  c->scenario.add_to(*cmd);
  cmd->add_option("--loads", c->loads,
                  "multiples of demand.rate_per_s to assess, comma-separated (default: 1)");
  cmd->add_option("--runs", c->runs,
                  "replications per load, 1 to 100000 (0 or none: the scenario's runs, else 100)");
  cmd->add_option("--horizon", c->horizon,
                  "seconds each replication watches, up to 10000000 (0 or none: horizon_s)");
  c->seed_opt = cmd->add_option("--seed", c->seed, "first seed: replication r runs at seed + r");
  cmd->add_option("--threads", c->threads, "worker threads (default: every core)");
  cmd->add_flag("--no-exact", c->no_exact, "leave out the exact Markov chain");
  cmd->add_flag("--splitting", c->splitting,
                "also estimate the chance of tipping by multilevel splitting on the agent engine: "
                "for tips too rare for --runs to see (not with --vary)");
  cmd->add_option("--split-effort", c->split_effort,
                  "splitting: walks per stage, 2 to 100000 (default 40)");
  cmd->add_option("--split-runs", c->split_runs,
                  "splitting: independent splitting runs, 2 to 1000 (default 8)");
  cmd->add_option("--split-levels", c->split_levels,
                  "splitting: levels of attempts at the server up to the stuck backlog, 1 to 100 "
                  "(default 8)");
  cmd->add_option("--vary", c->vary,
                  "PATH=V1,V2,... or PATH=FROM:TO:STEP: the metastable region over one policy "
                  "knob and the loads (at most 50 values)");
  cmd->add_option("--shard", c->shard,
                  "K/N: run shard K (from 1) of N's replications and write them for `merge`");
  add_text_or_json(*cmd, *c);
  table.add(cmd, [c] { return risk(*c); });
}

void add_step_down_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<StepDownCommand>();
  auto* cmd = app.add_subcommand(
      "step-down",
      "the hysteresis loop: the load stepped up until it tips, then down until it recovers");
  c->scenario.add_to(*cmd);
  StepDownOptions& o = c->options;
  cmd->add_option("--from", o.from, "first and last load, a multiple of demand.rate_per_s (0.5)");
  cmd->add_option("--to", o.to, "the top load (1.5)");
  cmd->add_option("--step", o.step, "the load's step (0.1)");
  cmd->add_option("--hold", o.hold_s, "seconds at each load (default: 40 timeouts, at least 60 s)");
  cmd->add_option("--runs", o.runs,
                  "agent engine: runs, each with its own seed (default: the scenario's runs, "
                  "else 10); the fluid engine runs once");
  c->seed_opt = cmd->add_option("--seed", c->seed, "first seed: run r runs at seed + r");
  cmd->add_option("--threads", o.threads, "worker threads (default: every core)");
  add_text_or_json(*cmd, *c);
  table.add(cmd, [c] { return step_down(*c); });
}

void add_sweep_command(CLI::App& app, CommandTable& table) {
  auto c = std::make_shared<SweepCommand>();
  auto* cmd = app.add_subcommand("sweep", "a grid of runs over numeric keys, one row each");
  c->scenario.add_to(*cmd);
  cmd->add_option("--vary", c->vary,
                  "PATH=FROM:TO:STEP or PATH=V1,V2,... (repeatable; the grid is their product)")
      ->required();
  cmd->add_option("--format", c->format, "csv | json")
      ->default_str("csv")
      ->check(one_of({"csv", "json"}));
  cmd->add_option("--threads", c->threads, "worker threads (default: every core)");
  c->runs_opt = cmd->add_option("--runs", c->runs,
                                "Monte Carlo replications per point (default: the scenario's "
                                "runs); above 1 a row holds their means");
  c->seed_opt = cmd->add_option("--seed", c->seed,
                                "base seed: point i, replication r runs at seed + i * runs + r");
  cmd->add_option("--shard", c->shard, "K/N: write shard K (from 1) of N for `merge`");
  cmd->add_option("--out", c->out, "write to FILE (atomically)");
  table.add(cmd, [c] { return sweep(*c); });
}

}  // namespace retrystorm::cli
