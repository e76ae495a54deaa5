#include "server/routes.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "analysis/ladder.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "app/commands.hpp"
#include "app/configs.hpp"
#include "app/montecarlo_batches.hpp"
#include "app/scenario_request.hpp"
#include "engines/engine.hpp"
#include "formats/input_text.hpp"
#include "formats/result_json.hpp"
#include "formats/risk_report.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"
#include "formats/step_down_report.hpp"
#include "model/graph.hpp"
#include "parallel/cancel.hpp"
#include "text/printable.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

// The longest error an answer carries: every message of ours fits, a bad
// value it quotes is cut.
constexpr size_t kMaxErrorChars = 2000;

// The scenario a request names: {"preset", "set"} or {"scenario"}.
// `warnings`, when given, receives a line per key the scenario does not use.
Scenario scenario_of(const json& body, const std::set<std::string>& extra,
                     const ServerLimits& limits, std::vector<std::string>* warnings = nullptr) {
  if (!body.is_object()) throw InputError("body: must be a JSON object");
  for (const auto& [key, v] : body.items()) {
    if (key == "preset" || key == "set" || key == "scenario" || extra.count(key)) continue;
    std::string allowed = "preset, set, scenario";
    for (const auto& e : extra) allowed += ", " + e;
    throw InputError("body." + key + ": unknown field; allowed: " + allowed);
  }
  if (body.contains("preset") && body.contains("scenario"))
    throw InputError("body: give preset or scenario, not both");
  app::ScenarioRequest request;
  if (body.contains("preset")) {
    if (!body["preset"].is_string()) throw InputError("preset: must be a preset name");
    request.preset = body["preset"].get<std::string>();
    if (request.preset.empty()) preset_or_throw("");  // the unknown-preset error, not the default
  } else if (body.contains("scenario")) {
    request.scenario = body["scenario"];
  }
  if (body.contains("set")) {
    if (!body["set"].is_object()) throw InputError("set: must be an object of path: value");
    for (const auto& [path, v] : body["set"].items()) request.sets.push_back({path, v});
  }
  request.limits.max_steps = limits.max_steps;
  app::AssembledScenario assembled = app::assemble_scenario(request);
  if (warnings) *warnings = std::move(assembled.warnings);
  return assembled.scenario;
}

std::vector<SweepAxis> axes_of(const json& body) {
  if (!body.contains("vary") || !body["vary"].is_array())
    throw InputError("vary: must be a list of {path, from, to, step}");
  std::vector<SweepAxis> axes;
  for (const auto& v : body["vary"]) {
    if (!v.is_object()) throw InputError("vary[]: must be an object {path, from, to, step}");
    SweepAxis a;
    for (const auto& [key, value] : v.items()) {
      if (key == "path" && value.is_string())
        a.path = value.get<std::string>();
      else if (key == "from" && value.is_number())
        a.from = value.get<double>();
      else if (key == "to" && value.is_number())
        a.to = value.get<double>();
      else if (key == "step" && value.is_number())
        a.step = value.get<double>();
      else if (key == "values" && value.is_array() && !value.empty() && value.size() <= 100000 &&
               std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_number(); }))
        a.listed = value.get<std::vector<double>>();
      else
        throw InputError("vary[]." + clip(key, 40) +
                         ": unknown field or wrong type; allowed: path "
                         "(text), from, to, step (numbers), or values (1 to 100000 numbers)");
    }
    // Values and a range at once: the values were taken and the range dropped unsaid.
    if (v.contains("values") && (v.contains("from") || v.contains("to") || v.contains("step")))
      throw InputError("vary[] " + clip(a.path, 100) +
                       ": give values, or from, to and step, not both");
    // A field left out is no default: an axis of one point at 0 was run unsaid.
    if (!v.contains("path")) throw InputError("vary[].path: missing; give the key to vary");
    if (!v.contains("values") && !(v.contains("from") && v.contains("to")))
      throw InputError("vary[] " + clip(a.path, 100) +
                       ": give from and to (and step, 1 when left out), or values (a list of "
                       "numbers)");
    axes.push_back(a);
  }
  return axes;
}

// The calls "call" may name in `s`, in words: every refusal of a call says them,
// whatever was wrong with the value given.
std::string call_range(const Scenario& s) {
  const size_t n = s.graph.calls.size();
  return n == 0 ? "it has no services and calls" : "choose 0 to " + std::to_string(n - 1);
}

// The index a body's "call" gives, checked here against `s`'s calls, so that
// every value out of range (negative, past the last call, beyond a long long,
// where it would wrap) gets the one message with the range.
long long call_index(const Scenario& s, const json& call) {
  if (!call.is_number_integer())
    throw InputError("call: must be the index of a call (an integer), got " +
                     clip(call.dump(), 40) + "; " + call_range(s));
  const uint64_t n = s.graph.calls.size();
  const bool in_range = call.is_number_unsigned()
                            ? call.get<uint64_t>() < n
                            : call.get<int64_t>() >= 0 && uint64_t(call.get<int64_t>()) < n;
  if (!in_range)
    throw InputError("call: " + call.dump() + " is not a call of the scenario; " + call_range(s));
  return call.get<long long>();
}

// POST /api/export/{system}: body as /api/run, and for a graph "call" (the index of the
// call whose policy to write, as export --call). Envoy keeps the field "yaml".
json export_json(const std::string& system, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {"call"}, limits);
  if (body.contains("call")) s = call_scenario(s, call_index(s, body["call"]), "call");
  configs::ExportResult r = configs::export_config(s, system);
  json out = app::export_json(r);
  if (r.system == configs::System::envoy) out["yaml"] = r.text;
  return out;
}

// POST /api/import and /api/lint: {"files": [{"name", "text"}]}; lint also
// takes "load", "instances", "simulate" and "preset".
// What one request may cost, and the check that stops it when its client has gone.
app::CostBudget budget_of(const ServerLimits& limits) {
  return {limits.cost, "", limits.cancelled};
}

constexpr size_t kMaxConfigFiles = 64;

json configs_json(const std::string& path, const json& body, const ServerLimits& limits) {
  if (!body.is_object() || !body.contains("files") || !body["files"].is_array())
    throw InputError("files: must be a list of {name, text}");
  bool lint = path == "/api/lint";
  for (const auto& [key, v] : body.items())
    if (key != "files" &&
        !(lint && (key == "load" || key == "instances" || key == "simulate" || key == "preset")))
      throw InputError("body." + key + ": unknown field; allowed: files" +
                       std::string(lint ? ", load, instances, simulate, preset" : ""));
  // Each file is bounded alone (its size, its aliases' expansion); their
  // number is bounded here, before any is read: 400 files of nested aliases
  // took half a minute. A stack has at most six layers; a mesh is a folder
  // for the command line (import --mesh).
  if (body["files"].size() > kMaxConfigFiles)
    throw InputError("files: " + std::to_string(body["files"].size()) +
                     " files; the server takes at most " + std::to_string(kMaxConfigFiles) +
                     " a request (the command line's import --mesh DIR reads a folder)");
  app::LintRequest request;
  std::vector<configs::ConfigFile>& files = request.files;
  for (const auto& f : body["files"]) {
    if (!f.is_object() || !f.contains("text") || !f["text"].is_string())
      throw InputError("files[]: must be {name, text} with text a string");
    for (const auto& [key, value] : f.items())
      if (!(key == "text" || (key == "name" && value.is_string())))
        throw InputError("files[]." + clip(key, 40) +
                         ": unknown field or wrong type; allowed: name (text), text (text)");
    // A file without a name gets one by its place, as the page's pasted text does.
    std::string name = f.contains("name") ? f["name"].get<std::string>()
                                          : "file" + std::to_string(files.size() + 1);
    files.push_back({name, f["text"].get<std::string>()});
  }
  if (!lint) return app::import_json(configs::import_configs(files));
  configs::LintOptions& o = request.options;
  if (body.contains("load")) {
    // The CLI's range (lint --load), so both refuse the same values.
    const json& load = body["load"];
    if (!load.is_number() || !(load.get<double>() >= 0) ||
        !(load.get<double>() <= configs::kMaxLintLoad))
      throw InputError(
          "load: " + (load.is_number() ? to_string(KeyValue{load.get<double>()}) : "not a number") +
          "; must be a number from 0 to " + to_string(KeyValue{configs::kMaxLintLoad}) +
          " (demand / capacity)");
    o.load = body["load"].get<double>();
  }
  if (body.contains("instances")) {
    // The CLI's check (lint --instances): a whole number from 1 to 10^7.
    if (!body["instances"].is_number())
      throw InputError("instances: must be a whole number from 1 to " +
                       number_text(configs::kMaxLintInstances));
    o.instances = configs::checked_lint_instances(body["instances"].get<double>(), "instances");
  }
  if (body.contains("simulate")) {
    if (!body["simulate"].is_boolean()) throw InputError("simulate: must be true or false");
    o.simulate = body["simulate"].get<bool>();
  }
  if (body.contains("preset")) {
    if (!body["preset"].is_string()) throw InputError("preset: must be a preset name");
    o.preset = body["preset"].get<std::string>();
    preset_or_throw(o.preset);
  }
  request.budget = budget_of(limits);  // --simulate's runs, priced before any
  return configs::lint_json(app::lint(request));
}

// An optional true/false field of a body (default true).
bool flag_of(const json& body, const char* name) {
  if (!body.contains(name)) return true;
  if (!body[name].is_boolean()) throw InputError(std::string(name) + ": must be true or false");
  return body[name].get<bool>();
}

TippingCache& tipping_cache() {
  static TippingCache cache;
  return cache;
}

// The page's Monte Carlo in batches (POST /api/montecarlo): what earlier
// batches and the single first run ran is not run again.
app::ReplicationCache& replication_cache() {
  static app::ReplicationCache cache;
  return cache;
}

// POST /api/run for a valid scenario: the session report, or the run's report
// with its Monte Carlo when there are replications.
json run_answer(const Scenario& s, const json& body, const ServerLimits& limits) {
  app::RunOptions o;
  o.report.trace = flag_of(body, "trace");  // the page asks without, then fetches /api/trace
  // Advice and tipping point; the page fetches them after drawing the chart.
  o.report.advice = o.report.tipping = flag_of(body, "advice");
  o.report.cache = &tipping_cache();
  bool rows = flag_of(body, "sessions");  // session rows; the page draws without them
  o.montecarlo = app::montecarlo_wanted(s);
  o.max_runs = engine_facts(s).run ? limits.max_agent_runs : limits.max_session_runs;
  app::RunAnswer a = app::run(s, o, budget_of(limits));
  // The page's first run of an agent Monte Carlo: replication 0 of its batches.
  if (engine_facts(s).random && s.runs == 1 && a.report)
    replication_cache().keep(s, 0, replication_of(a.report->metrics, a.report->run));
  json answer = app::run_answer_json(a);
  if (!rows && !engine_facts(s).run) answer.erase("sessions");
  return answer;
}

// GET /api/systems: the systems table (systems/system.hpp), in order.
json systems_json() {
  json list = json::array();
  for (const configs::SystemFacts& f : configs::system_table())
    list.push_back(
        {{"name", f.name}, {"label", f.label}, {"extension", f.extension}, {"export", f.exported}});
  return {{"systems", list}};
}

// ---------------------------------------------------------------- handlers

json presets_answer(const std::string&, const json&, const ServerLimits&) {
  json list = json::array();
  for (const auto& p : presets())
    list.push_back({{"name", p.name},
                    {"description", p.description},
                    {"scenario", scenario_to_json(p.scenario)}});
  return {{"presets", list}};
}

json schema_answer(const std::string&, const json&, const ServerLimits&) {
  return schema_json();
}

json systems_answer(const std::string&, const json&, const ServerLimits&) {
  return systems_json();
}

json run_route(const std::string&, const json& body, const ServerLimits& limits) {
  std::vector<std::string> warnings;
  Scenario s = scenario_of(body, {"trace", "sessions", "advice"}, limits, &warnings);
  app::check_run_cost(s, budget_of(limits));  // before the body's flags are read
  json answer = run_answer(s, body, limits);
  if (!warnings.empty()) answer["warnings"] = warnings;  // keys this engine ignores
  return answer;
}

json trace_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {}, limits);
  if (!engine_facts(s).run) return {{"trace", json::array()}};  // no per-step trace
  return {{"trace", trace_json(app::trace(s, budget_of(limits)))}};
}

// What /api/run leaves out with "advice": false.
json advice_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {}, limits);
  if (!engine_facts(s).run) return {{"advice", json::array()}};
  RunReport r = app::advice(s, &tipping_cache(), budget_of(limits));
  json answer = {{"advice", advice_json(r.advice)}};
  if (r.tipping) answer["tipping"] = tipping_json(*r.tipping);
  return answer;
}

json ladder_route(const std::string&, const json& body, const ServerLimits& limits) {
  return ladder_json(app::ladder(scenario_of(body, {}, limits), budget_of(limits)));
}

json tipping_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {"grid_s"}, limits);
  double grid = 0;
  if (body.contains("grid_s")) {
    const double max_grid_s = key_or_throw("tipping.grid_s").max;
    const json& given = body["grid_s"];
    if (!given.is_number() || !(given.get<double>() > 0 && given.get<double>() <= max_grid_s))
      throw InputError(
          "grid_s: " + clip(given.dump(), 40) + " is not a grid; give seconds above 0 up to " +
          to_string(KeyValue{max_grid_s}) + " (leave grid_s out for the scenario's grid)");
    grid = given.get<double>();
  }
  if (tipping_steps(s, grid) > limits.max_tipping_steps)
    throw InputError("grid_s: " + to_string(KeyValue{grid > 0 ? grid : default_grid_s(s)}) +
                     " s makes " + to_string(KeyValue{tipping_steps(s, grid)}) +
                     " steps of work; the limit is " +
                     to_string(KeyValue{limits.max_tipping_steps}) + "; choose a coarser grid");
  return tipping_json(app::tipping(s, grid, budget_of(limits)));
}

json sweep_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {"vary"}, limits);
  auto axes = axes_of(body);
  SweepOptions options;
  options.max_runs = limits.max_sweep_runs;
  options.threads = limits.sweep_threads;
  options.limits.max_steps = limits.max_steps;  // each point is a run: /api/run's limit
  return sweep_json(axes, app::sweep(s, axes, options, budget_of(limits)));
}

// A number field of a request body: its value, or `fallback` when absent.
double number_field(const json& body, const char* name, double fallback) {
  if (!body.contains(name)) return fallback;
  if (!body[name].is_number())
    throw InputError(std::string("body.") + name + ": must be a number, not " + body[name].dump());
  return body[name].get<double>();
}

// A whole-number field of a request body within [low, high], or `fallback`
// when absent. `high_text` says the upper end in words ("runs (8)") when it
// comes from the scenario: one message, with the real range, for every value
// refused (not a number, a fraction, out of range).
int whole_in(const json& body, const char* name, int fallback, int low, int high,
             const std::string& high_text) {
  if (!body.contains(name)) return fallback;
  const json& given = body[name];
  const double v = given.is_number() ? given.get<double>() : std::nan("");
  if (!(v >= low && v <= high && v == std::floor(v)))
    throw InputError(fmt::format("body.{}: {} must be a whole number, {} to {}", name,
                                 given.is_number() ? number_text(v) : clip(given.dump(), 40), low,
                                 high_text));
  return static_cast<int>(v);
}

// A whole-number field of a request body within fixed [low, high], or `fallback`.
int whole_field(const json& body, const char* name, int fallback, int low, int high) {
  return whole_in(body, name, fallback, low, high, std::to_string(high));
}

// POST /api/montecarlo (docs/http-api.md): the next batch of an agent Monte
// Carlo after `done` replications, and the summary of all done so far.
// Runs `work` on a thread of its own, five nice levels below the request's
// thread and with its cancel check; the threads it starts inherit the
// priority (Linux keeps nice per thread). Best effort: a failed setpriority
// leaves the priority as it was.
json at_lower_priority(const std::function<json()>& work) {
  const CancelCheck* check = CancelScope::current();  // the request's deadline
  json out;
  std::exception_ptr error;
  std::thread background([&] {
    const auto self = static_cast<id_t>(gettid());
    errno = 0;
    const int nice_now = getpriority(PRIO_PROCESS, self);
    if (errno == 0) setpriority(PRIO_PROCESS, self, std::min(19, nice_now + 5));
    static const CancelCheck kNone;
    CancelScope scope(check ? *check : kNone);
    try {
      out = work();
    } catch (...) {
      error = std::current_exception();
    }
  });
  background.join();
  if (error) std::rethrow_exception(error);
  return out;
}

// POST /api/montecarlo: the next batch of the page's band. The page asks for
// it beside POST /api/run's replication 0, whose chart the user waits for:
// the batch's runs give way to it (and to other users' requests).
json montecarlo_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {"done"}, limits);
  // Replications of this scenario the caller has: its runs bound them, not a
  // fixed number, and the message says so.
  const int done = whole_in(body, "done", 0, 0, s.runs, fmt::format("runs ({})", s.runs));
  return at_lower_priority([&] {
    return app::montecarlo_batch_json(app::montecarlo_batch(
        s, done, limits.max_agent_runs, replication_cache(), budget_of(limits)));
  });
}

RiskOptions risk_options_of(const json& body, const ServerLimits& limits) {
  RiskOptions o;
  if (body.contains("loads")) {
    if (!body["loads"].is_array() || body["loads"].empty())
      throw InputError("body.loads: must be a list of numbers, multiples of demand.rate_per_s");
    o.loads.clear();
    for (const json& v : body["loads"]) {
      if (!v.is_number()) throw InputError("body.loads: " + v.dump() + " is not a number");
      o.loads.push_back(v.get<double>());
    }
  }
  o.runs = whole_field(body, "runs", 0, 0, 100000);
  o.horizon_s = number_field(body, "horizon_s", 0);
  o.exact = flag_of(body, "exact");
  o.splitting = body.contains("splitting") && flag_of(body, "splitting");
  o.split_effort = whole_field(body, "split_effort", o.split_effort, 2, 100000);
  o.split_runs = whole_field(body, "split_runs", o.split_runs, 2, 1000);
  o.split_levels = whole_field(body, "split_levels", o.split_levels, 1, 100);
  o.threads = limits.sweep_threads;
  o.max_steps = limits.max_steps;  // a run's limit, as /api/run has it
  return o;
}

// POST /api/step-down (docs/http-api.md): `retrystorm step-down` with from,
// to, step, hold_s and runs.
json step_down_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body, {"from", "to", "step", "hold_s", "runs"}, limits);
  StepDownOptions o;
  o.from = number_field(body, "from", o.from);
  o.to = number_field(body, "to", o.to);
  o.step = number_field(body, "step", o.step);
  o.hold_s = number_field(body, "hold_s", o.hold_s);
  o.runs = whole_field(body, "runs", 0, 0, 10000);
  o.threads = limits.sweep_threads;
  o.max_steps = limits.max_steps;  // a run's limit, as /api/run has it
  return step_down_json(app::step_down(s, o, budget_of(limits)));
}

// POST /api/risk (docs/http-api.md): `retrystorm risk` with loads, runs,
// horizon_s, exact, splitting (split_effort, split_runs, split_levels) and
// vary ("PATH=V1,V2,..." for the metastable region).
json risk_route(const std::string&, const json& body, const ServerLimits& limits) {
  Scenario s = scenario_of(body,
                           {"loads", "runs", "horizon_s", "exact", "vary", "splitting",
                            "split_effort", "split_runs", "split_levels"},
                           limits);
  const RiskOptions o = risk_options_of(body, limits);
  if (body.contains("vary")) {
    if (!body["vary"].is_string())
      throw InputError("body.vary: must be a text PATH=V1,V2,... or PATH=FROM:TO:STEP");
    return risk_map_json(
        app::risk_map(s, parse_axis(body["vary"].get<std::string>()), o, budget_of(limits)));
  }
  return risk_json(app::risk(s, o, budget_of(limits)));
}

const std::string kExportPrefix = "/api/export/";

json export_route(const std::string& path, const json& body, const ServerLimits& limits) {
  return export_json(path.substr(kExportPrefix.size()), body, limits);
}

json configs_route(const std::string& path, const json& body, const ServerLimits& limits) {
  return configs_json(path, body, limits);
}

using Handler = json (*)(const std::string&, const json&, const ServerLimits&);

// What the page reads first; nothing runs.
constexpr std::pair<const char*, Handler> kReads[] = {{"/api/presets", presets_answer},
                                                      {"/api/schema", schema_answer},
                                                      {"/api/systems", systems_answer}};

// Requests with a body; `expensive`: runs engines.
struct PostRoute {
  const char* path;
  bool expensive;
  Handler handle;
};
constexpr PostRoute kPosts[] = {
    {"/api/run", true, run_route},
    {"/api/montecarlo", true, montecarlo_route},
    {"/api/trace", true, trace_route},
    {"/api/advice", true, advice_route},
    {"/api/ladder", true, ladder_route},
    {"/api/tipping", true, tipping_route},
    {"/api/sweep", true, sweep_route},
    {"/api/risk", true, risk_route},
    {"/api/step-down", true, step_down_route},
    {"/api/import", true, configs_route},  // a work slot: parsing many files takes a core
    {"/api/lint", true, configs_route},    // --simulate
};

std::vector<http::Route> route_table() {
  std::vector<http::Route> t;
  for (const auto& [path, handle] : kReads) t.push_back({http::Method::get, path, false, handle});
  for (const PostRoute& r : kPosts)
    t.push_back({http::Method::post, r.path, r.expensive, r.handle});
  for (const std::string& system : configs::export_systems())
    t.push_back({http::Method::post, kExportPrefix + system, false, export_route});
  return t;
}

}  // namespace

namespace http {

const std::vector<Route>& routes() {
  static const std::vector<Route> table = route_table();
  return table;
}

const Route* route_of(const std::string& path) {
  static const std::map<std::string, const Route*> by_path = [] {
    std::map<std::string, const Route*> m;
    for (const Route& r : routes()) m.emplace(r.path, &r);
    return m;
  }();
  auto it = by_path.find(path);
  return it == by_path.end() ? nullptr : it->second;
}

RoutedAnswer answer_call(const std::string& path, const std::string& body,
                         const ServerLimits& limits) {
  // The run deadline joins the request's own check, and every engine polls it
  // inside its runs (parallel/cancel.hpp): no run, even one a bug keeps
  // going, holds a work slot past it.
  auto overran = std::make_shared<std::atomic<bool>>(false);
  ServerLimits l = limits;
  if (limits.run_deadline_s > 0) {
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(limits.run_deadline_s));
    l.cancelled = [until, overran, client = limits.cancelled] {
      if (std::chrono::steady_clock::now() >= until) return *overran = true;
      return client && client();
    };
  }
  CancelScope scope(l.cancelled);
  try {
    const Route* route = route_of(path);
    if (!route) throw InputError("no such path: " + path.substr(0, 200));
    json parsed = json::object();
    if (route->method == Method::post) {
      // Nesting, duplicate keys and size bounded (formats/input_text.hpp).
      parsed = parse_json_text(body.empty() ? "{}" : body, "body");
    }
    return {ApiAnswer{200, route->handle(path, parsed, l)}};
  } catch (const Cancelled& e) {
    // Neither is worth repeating: the same run meets the same deadline, and
    // a client that has gone reads nothing. So no Retry-After.
    if (*overran)
      return {
          ApiAnswer{503,
                    {{"error", "run: stopped after " + to_string(KeyValue{limits.run_deadline_s}) +
                                   " s, the server's limit for one request (serve --run-deadline); "
                                   "make it smaller, or run it with the command line"}}}};
    return {ApiAnswer{503, {{"error", e.what()}}}};  // nobody reads it: the client has gone
  } catch (const InputError& e) {
    // Clipped: a message quotes the bad value, and a megabyte of key name
    // came back as a megabyte of error.
    return {ApiAnswer{400, {{"error", clip(e.what(), kMaxErrorChars)}}}};
  } catch (const json::exception& e) {
    return {ApiAnswer{400, {{"error", clip(std::string("body: ") + e.what(), kMaxErrorChars)}}}};
  } catch (const std::bad_alloc&) {
    // Memory comes free as other requests end: the same request may pass later.
    return {ApiAnswer{
                503, {{"error", "out of memory for this request; make it smaller or retry later"}}},
            kOutOfMemoryRetryAfterS};
  }
}

}  // namespace http

ApiAnswer handle_api(const std::string& path, const std::string& body, const ServerLimits& limits) {
  return http::answer_call(path, body, limits).answer;
}

}  // namespace retrystorm
