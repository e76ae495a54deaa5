// The studies beside run, through the app layer as the command line runs
// them: the defense ladder, the tipping point, risk, incident analysis, and the
// configuration commands import, export and lint.
// Each answer is the JSON view the command line writes, as Python objects.
#include <pybind11/stl.h>

#include "app/analyze.hpp"
#include "app/configs.hpp"
#include "bindings.hpp"
#include "formats/analyze_report.hpp"
#include "formats/result_json.hpp"
#include "formats/risk_report.hpp"
#include "formats/risk_shard.hpp"
#include "formats/step_down_report.hpp"
#include "text/number.hpp"

namespace py = pybind11;

namespace retrystorm::python {

namespace {

// The scenario a study runs: a copy taken with the GIL held (another Python
// thread may change the original once the work releases it), validated as
// the command line validates before any study (Scenario.set checks a key
// alone; a study on a scenario that fails validation would run nonsense).
Scenario study_scenario(Scenario s) {
  validate(s);
  return s;
}

py::object ladder(Scenario s, bool allow_large) {
  s = study_scenario(std::move(s));
  std::vector<LadderResult> rows =
      interruptible([&] { return app::ladder(s, python_budget(allow_large)); });
  return json_to_python(ladder_json(rows));
}

py::object tipping(Scenario s, double grid_s, bool allow_large) {
  s = study_scenario(std::move(s));
  TippingResult t =
      interruptible([&] { return app::tipping(s, grid_s, python_budget(allow_large)); });
  return json_to_python(tipping_json(t));
}

// `retrystorm risk`: one level per load, or with `vary` the metastable
// region over that knob (PATH=V1,V2,... or PATH=FROM:TO:STEP).
// `split` holds effort, runs and levels for splitting, or is empty.
void set_splitting(RiskOptions& o, const std::vector<int>& split) {
  if (split.size() != 3) return;
  o.splitting = true;
  o.split_effort = split[0], o.split_runs = split[1], o.split_levels = split[2];
}

py::object risk(Scenario s, std::vector<double> loads, int runs, double horizon_s, unsigned threads,
                bool exact, const std::string& vary, bool allow_large, std::vector<int> split) {
  s = study_scenario(std::move(s));
  RiskOptions o;
  set_splitting(o, split);
  o.loads = std::move(loads);
  o.runs = runs;
  o.horizon_s = horizon_s;
  o.threads = threads;
  o.exact = exact;
  if (!vary.empty()) {
    RiskMap map = interruptible(
        [&] { return app::risk_map(s, parse_axis(vary), o, python_budget(allow_large)); });
    return json_to_python(risk_map_json(map));
  }
  RiskResult r = interruptible([&] { return app::risk(s, o, python_budget(allow_large)); });
  return json_to_python(risk_json(r));
}

// A number given to Python, as the app layer reads options: its text reads
// back as the same double, and refusals show it unquoted.
app::OptionText given(const char* name, double v) {
  return {name, number_text(v), false};
}

// A time as --from and --to take it: seconds, or the text of a clock
// ("1d09:40"), read by the same parser; None: not given.
app::OptionText time_given(const char* name, py::handle value) {
  if (value.is_none()) return {name, "", false};
  if (py::isinstance<py::str>(value)) return {name, value.cast<std::string>(), true};
  const bool number = py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value);
  if (py::isinstance<py::bool_>(value) || !number)
    throw py::type_error(std::string(name) + ": give seconds or a clock like '1d09:40'");
  return given(name, value.cast<double>());
}

// `retrystorm analyze` with Python's numbers in place of its options.
app::AnalyzeRequest analyze_request(std::vector<std::string> paths, py::handle from_s,
                                    py::handle to_s, std::optional<double> slots,
                                    std::optional<double> deadline_s,
                                    const std::vector<double>& ladder_s) {
  app::AnalyzeRequest r;
  r.logs = std::move(paths);
  r.from = time_given("from_s", from_s);
  r.to = time_given("to_s", to_s);
  if (slots) r.slots = given("slots", *slots);
  if (deadline_s) r.deadline = given("deadline_s", *deadline_s);
  r.ladder = {"ladder_s", "", false};
  for (double step : ladder_s)
    r.ladder.text += (r.ladder.text.empty() ? "" : ",") + number_text(step);
  return r;
}

// The report of `retrystorm analyze --format json`.
py::object analyze_report(const app::AnalyzeRequest& request) {
  nlohmann::json j = interruptible([&] { return analyze_json(app::analyze(request)); });
  return json_to_python(j);
}

// `retrystorm lint --format json`, with the exit status the command gives.
// The request is this function's own copy (files read, scenario copied with
// the GIL held), so --simulate's runs can release the GIL and hear Ctrl-C.
py::object lint_report(app::LintRequest request, std::optional<double> load, bool simulate,
                       std::optional<double> instances) {
  request.options.load = load;            // checked by lint, in the ranges of --load
  request.options.instances = instances;  // and of --instances
  request.options.simulate = simulate;
  nlohmann::json j = interruptible([&] { return configs::lint_json(app::lint(request)); });
  return json_to_python(j);
}

void bind_configs(py::module_& m) {
  m.def(
      "import_configs",
      [](const std::vector<std::string>& paths) {
        auto r = configs::import_configs(app::read_config_files(paths));
        return json_to_python(app::import_details_json(r));
      },
      py::arg("paths"));
  m.def(
      "export",
      [](const Scenario& s, const std::string& system) {
        // Validated as `retrystorm export` builds its scenario: a policy of a
        // scenario the command line refuses is no answer.
        configs::ExportResult r = configs::export_config(study_scenario(s), system);
        return json_to_python(app::export_json(r));
      },
      py::arg("scenario"), py::arg("to"));
  m.def("export_systems", &configs::export_systems);
  m.def(
      "lint_files",
      [](const std::vector<std::string>& paths, std::optional<double> load, bool simulate,
         const std::string& incident, std::optional<double> instances) {
        app::LintRequest r;
        r.files = app::read_config_files(paths);
        r.options.preset = incident;
        return lint_report(std::move(r), load, simulate, instances);
      },
      py::arg("paths"), py::arg("load") = py::none(), py::arg("simulate") = false,
      py::arg("incident") = "", py::arg("instances") = py::none());
  m.def(
      "lint_scenario",
      [](const Scenario& s, const std::string& source, std::optional<double> load, bool simulate,
         std::optional<double> instances) {
        app::LintRequest r;
        r.scenario = study_scenario(s);
        r.source = source;
        r.options.base = r.scenario;  // its own incident and load, as `lint --scenario` takes them
        return lint_report(std::move(r), load, simulate, instances);
      },
      py::arg("scenario"), py::arg("source"), py::arg("load") = py::none(),
      py::arg("simulate") = false, py::arg("instances") = py::none());
}

}  // namespace

// A risk request from rs.risk's arguments (its runs resolved).
RiskRequest risk_request(const Scenario& s, std::vector<double> loads, int runs, double horizon_s,
                         bool exact, const std::string& vary, const std::vector<int>& split) {
  RiskRequest r{study_scenario(s), {}, std::nullopt};
  set_splitting(r.options, split);
  r.options.loads = std::move(loads);
  r.options.runs = runs;
  r.options.horizon_s = horizon_s;
  r.options.exact = exact;
  r.options.threads = 1;  // a task runs on one worker thread
  if (!vary.empty()) r.knob = parse_axis(vary);
  r.options.runs = risk_runs(s, r.options);
  return r;
}

// rs.distributed.risk's task: replications [first, first + count) as
// evidence (count 0: only the checks and the cost, before any task).
py::object risk_part(const Scenario& s, std::vector<double> loads, int runs, double horizon_s,
                     bool exact, const std::string& vary, const std::vector<int>& split,
                     size_t first, size_t count, bool allow_large) {
  const RiskRequest r = risk_request(s, std::move(loads), runs, horizon_s, exact, vary, split);
  if (count == 0) {
    app::check_risk_shard(r, static_cast<size_t>(r.options.runs), python_budget(allow_large));
    return py::int_(r.options.runs);
  }
  nlohmann::json cells = nlohmann::json::array();
  auto gathered = interruptible([&] { return gather_risk_cells(r, first, count); });
  for (const auto& cell : gathered) cells.push_back(evidence_json(cell));
  return json_to_python(cells);
}

// rs.risk's answer from the tasks' evidence, given in replication order.
py::object risk_of_parts(const Scenario& s, std::vector<double> loads, int runs, double horizon_s,
                         bool exact, const std::string& vary, const std::vector<int>& split,
                         const py::list& parts) {
  const RiskRequest r = risk_request(s, std::move(loads), runs, horizon_s, exact, vary, split);
  std::vector<std::vector<RiskEvidence>> cells;
  for (const py::handle part : parts)
    append_risk_cells(cells, python_to_json(part, "parts"), "rs.distributed.risk");
  // The exact chains take seconds: without the GIL, and Ctrl-C stops them.
  return json_to_python(interruptible([&] { return risk_answer_json(r, cells); }));
}

// `retrystorm step-down`: the hysteresis loop as one staircase of loads.
py::object step_down(Scenario s, double from, double to, double step, double hold_s, int runs,
                     unsigned threads, bool allow_large) {
  s = study_scenario(std::move(s));
  StepDownOptions o;
  o.from = from, o.to = to, o.step = step, o.hold_s = hold_s, o.runs = runs, o.threads = threads;
  StepDown d = interruptible([&] { return app::step_down(s, o, python_budget(allow_large)); });
  return json_to_python(step_down_json(d));
}

void bind_studies(py::module_& m) {
  m.def("ladder", &ladder, py::arg("scenario"), py::arg("allow_large") = false);
  m.def("tipping", &tipping, py::arg("scenario"), py::arg("grid_s") = 0.0,
        py::arg("allow_large") = false);
  m.def("risk", &risk, py::arg("scenario"), py::arg("loads"), py::arg("runs"), py::arg("horizon_s"),
        py::arg("threads"), py::arg("exact"), py::arg("vary"), py::arg("allow_large"),
        py::arg("split"));
  m.def("_risk_part", &risk_part, py::arg("scenario"), py::arg("loads"), py::arg("runs"),
        py::arg("horizon_s"), py::arg("exact"), py::arg("vary"), py::arg("split"), py::arg("first"),
        py::arg("count"), py::arg("allow_large"));
  m.def("_risk_of_parts", &risk_of_parts, py::arg("scenario"), py::arg("loads"), py::arg("runs"),
        py::arg("horizon_s"), py::arg("exact"), py::arg("vary"), py::arg("split"),
        py::arg("parts"));
  m.def("step_down", &step_down, py::arg("scenario"), py::arg("from_load"), py::arg("to_load"),
        py::arg("step"), py::arg("hold_s"), py::arg("runs"), py::arg("threads"),
        py::arg("allow_large"));
  m.def(
      "analyze",
      [](std::vector<std::string> paths, py::object from_s, py::object to_s,
         std::optional<double> slots, std::optional<double> deadline_s,
         const std::vector<double>& ladder_s) {
        return analyze_report(
            analyze_request(std::move(paths), from_s, to_s, slots, deadline_s, ladder_s));
      },
      py::arg("paths"), py::arg("from_s") = py::none(), py::arg("to_s") = py::none(),
      py::arg("slots") = py::none(), py::arg("deadline_s") = py::none(),
      py::arg("ladder_s") = std::vector<double>{});
  bind_configs(m);
}

}  // namespace retrystorm::python
