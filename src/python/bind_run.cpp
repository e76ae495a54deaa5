// rs.run: app::run, the function behind `retrystorm run` and POST /api/run,
// with the GIL released, and its answer kept in C++ so that a series reaches
// Python as numpy views over the run's own buffers (one copy, into pandas).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "bindings.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "engines/graph_series.hpp"
#include "engines/series.hpp"
#include "formats/result_json.hpp"
#include "formats/session_report.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

namespace {

// The scenario with runs and seed, validated again (as `run --runs --seed`).
Scenario with_options(Scenario s, std::optional<int> runs, std::optional<double> seed) {
  if (seed) set_key(s, "seed", *seed);
  if (runs) set_key(s, "runs", double(*runs));
  validate(s);
  return s;
}

app::RunAnswer run_scenario(const Scenario& scenario, std::optional<int> runs,
                            std::optional<double> seed, bool trace, bool allow_large) {
  Scenario s = with_options(scenario, runs, seed);
  app::RunOptions o;
  o.report.trace = trace;
  o.montecarlo = s.runs > 1;  // as the command line: every engine
  app::CostBudget budget = python_budget(allow_large);
  // Other Python threads run meanwhile; Ctrl-C stops it.
  return interruptible([&] { return app::run(s, o, budget); });
}

std::string answer_json(const app::RunAnswer& a) {
  return app::run_answer_json(a).dump(2) + "\n";  // the bytes of `run --format json`
}

py::object metrics(const app::RunAnswer& a) {
  if (a.sessions) return json_to_python(app::run_answer_json(a)["metrics"]);
  return json_to_python(metrics_json(a.report->metrics));
}

py::object verdict(const app::RunAnswer& a) {
  if (a.sessions) return json_to_python(app::run_answer_json(a)["verdict"]);
  const Verdict& v = a.report->verdict;
  return json_to_python(
      {{"recovered", v.recovered}, {"headline", v.headline}, {"detail", v.detail}});
}

// Per-step engines: name -> read-only numpy view over the run's buffer,
// kept alive by the answer. Sessions: the JSON series (lists).
py::dict series(py::object self) {
  const app::RunAnswer& a = self.cast<const app::RunAnswer&>();
  if (a.sessions) return json_to_python(app::run_answer_json(a)["series"]);
  py::dict out;
  const Series& s = a.report->run.series;
  for (const SeriesField& field : kSeriesFields) {
    std::span<double> v = s.*field.member;
    py::array_t<double> view({py::ssize_t(v.size())}, {py::ssize_t(sizeof(double))}, v.data(),
                             self);
    view.attr("flags").attr("writeable") = false;
    out[py::str(std::string(field.name))] = view;
  }
  return out;
}

// A record's series as read-only numpy views over its buffers, kept alive
// by the answer.
template <typename Record, size_t N>
py::dict record_views(py::object owner, const Record& x,
                      const std::array<GraphField<Record>, N>& fields) {
  py::dict out;
  for (const auto& field : fields) {
    const std::vector<double>& v = x.*field.member;
    py::array_t<double> view({py::ssize_t(v.size())}, {py::ssize_t(sizeof(double))}, v.data(),
                             owner);
    view.attr("flags").attr("writeable") = false;
    out[py::str(std::string(field.name))] = view;
  }
  return out;
}

// A graph's services as (name, series) and calls as (from, to, series), in
// the scenario's order; empty without a graph (docs/graph.md, "Results").
py::list graph_services(py::object self) {
  const app::RunAnswer& a = self.cast<const app::RunAnswer&>();
  py::list out;
  if (a.sessions) return out;
  for (const ServiceSeries& x : a.report->run.graph.services)
    out.append(py::make_tuple(x.name, record_views(self, x, kServiceFields)));
  return out;
}

py::list graph_calls(py::object self) {
  const app::RunAnswer& a = self.cast<const app::RunAnswer&>();
  py::list out;
  if (a.sessions) return out;
  for (const EdgeSeries& x : a.report->run.graph.edges)
    out.append(py::make_tuple(x.from, x.to, record_views(self, x, kEdgeFields)));
  return out;
}

py::object montecarlo(const app::RunAnswer& a) {
  // Per-step engines: the summaries alone, not the whole answer with its series.
  if (a.montecarlo) return json_to_python(montecarlo_json(*a.montecarlo));
  if (!a.sessions) return py::none();
  nlohmann::json j = app::run_answer_json(a);
  return j.contains("montecarlo") ? json_to_python(j["montecarlo"]) : py::none();
}

// For bench/python_bench.py: the seconds of one app::run of `scenario`, the
// mean of `repeats`, timed in C++ (the cost rs.run adds to).
double time_runs(const Scenario& scenario, int repeats) {
  Scenario s = with_options(scenario, std::nullopt, std::nullopt);
  app::RunOptions o;
  o.montecarlo = s.runs > 1;
  app::CostBudget budget = python_budget(false);
  py::gil_scoped_release released;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) app::run(s, o, budget);
  std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / std::max(repeats, 1);
}

// rs.requests: requests.csv's rows (docs/log-formats.md) kept as columns,
// at most max_rows of them (memory stays bounded whatever the run).
class RequestColumns : public AttemptSink {
 public:
  explicit RequestColumns(size_t max_rows) : max_rows_(max_rows) {}
  void row(const AttemptRow& r) override {
    if (request_id.size() >= max_rows_)
      throw InputError("requests: the run logs more than max_rows=" + std::to_string(max_rows_) +
                       " attempts; raise max_rows, or shorten horizon_s or lower demand");
    request_id.push_back(r.request_id);
    attempt.push_back(r.attempt);
    sent_s.push_back(r.sent_s);
    done_s.push_back(r.done_s);
    outcome.push_back(static_cast<int8_t>(r.outcome));
    layer.push_back(r.layer);
    call.push_back(r.call);
  }
  std::vector<uint64_t> request_id;
  std::vector<int> attempt, layer, call;
  std::vector<double> sent_s, done_s;
  std::vector<int8_t> outcome;

 private:
  size_t max_rows_;
};

template <typename T>
py::array_t<T> column(const std::vector<T>& v) {
  return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
}

// The per-request log of the run `run --log DIR` writes: {columns..., outcome
// as codes, "outcomes": the names of the codes}.
py::dict request_log_columns(const Scenario& scenario, std::optional<double> seed, size_t max_rows,
                             bool allow_large) {
  Scenario s = with_options(scenario, std::nullopt, seed);
  if (!engine_facts(s).logs || s.engine == Engine::sessions)
    throw InputError(
        std::string("requests: needs engine agent (set(\"engine\", \"agent\")); engine ") +
        engine_name(s.engine) + " has no per-request log");
  app::check_run_cost(s, python_budget(allow_large));
  RequestColumns rows(max_rows);
  interruptible([&] { return run_agent(s, {&rows, nullptr}); });
  using request_log::Column;
  py::dict out;
  out[request_log::column_name(Column::request_id)] = column(rows.request_id);
  out[request_log::column_name(Column::attempt)] = column(rows.attempt);
  out[request_log::column_name(Column::sent_s)] = column(rows.sent_s);
  out[request_log::column_name(Column::done_s)] = column(rows.done_s);
  out[request_log::column_name(Column::outcome)] = column(rows.outcome);
  out[request_log::column_name(Column::layer)] = column(rows.layer);
  if (!s.graph.empty()) out[request_log::kCallColumn] = column(rows.call);
  py::list names;
  for (int o = 0; o <= static_cast<int>(request_log::AttemptOutcome::in_flight); ++o)
    names.append(request_log::outcome_name(static_cast<request_log::AttemptOutcome>(o)));
  out["outcomes"] = names;
  return out;
}

}  // namespace

void bind_run(py::module_& m) {
  py::class_<app::RunAnswer>(m, "RunAnswer", "What app::run answers; see retrystorm.Result.")
      .def_property_readonly("engine",
                             [](const app::RunAnswer& a) {
                               return a.sessions ? "sessions"
                                                 : engine_name(a.report->run.scenario.engine);
                             })
      .def_property_readonly("scenario",
                             [](const app::RunAnswer& a) {
                               return a.sessions ? a.sessions->run.scenario
                                                 : a.report->run.scenario;
                             })
      .def("to_json", &answer_json)
      .def("to_dict",
           [](const app::RunAnswer& a) { return json_to_python(app::run_answer_json(a)); })
      .def("metrics", &metrics)
      .def("verdict", &verdict)
      .def("series", &series)
      .def("graph_services", &graph_services)
      .def("graph_calls", &graph_calls)
      .def("montecarlo", &montecarlo);
  m.def("run", &run_scenario, py::arg("scenario"), py::arg("runs") = py::none(),
        py::arg("seed") = py::none(), py::arg("trace") = true, py::arg("allow_large") = false,
        "Runs a scenario as `retrystorm run` does (GIL released).");
  m.def("_request_log", &request_log_columns, py::arg("scenario"), py::arg("seed") = py::none(),
        py::arg("max_rows") = 20'000'000, py::arg("allow_large") = false,
        "The per-request log of an agent run (requests.csv's columns; GIL released).");
  m.def("_time_runs", &time_runs, py::arg("scenario"), py::arg("repeats"));
}

}  // namespace retrystorm::python
