// rs.run: app::run, the function behind `retrystorm run` and POST /api/run,
// with the GIL released, and its answer kept in C++ so that a series reaches
// Python as numpy views over the run's own buffers (one copy, into pandas).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "analysis/cost.hpp"
#include "analysis/run_montecarlo.hpp"
#include "bindings.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "engines/graph_series.hpp"
#include "engines/montecarlo.hpp"
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
  o.montecarlo = app::montecarlo_wanted(s);
  // Other Python threads run meanwhile; Ctrl-C stops it.
  return interruptible([&] { return app::run(s, o, python_budget(allow_large)); });
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
  o.montecarlo = app::montecarlo_wanted(s);
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

// rs.distributed.run's task: replications first .. first + count - 1 of the
// scenario with `runs` and `seed`, as {"first", "names", "values" (one list
// per replication, None where a figure never happened), "band" (goodput,
// count x steps)}: plain values that pickle exactly.
// The scenario with rs.run's runs and seed, split across machines: its
// `count` replications priced against the budget.
Scenario split_montecarlo(const Scenario& scenario, int runs, std::optional<double> seed,
                          size_t count, bool allow_large) {
  Scenario s = with_options(scenario, runs, seed);
  if (!engine_facts(s).run)
    throw InputError("engine: sessions runs its Monte Carlo on one machine; use rs.run");
  check_replication_seeds(s, static_cast<size_t>(std::max(s.runs, 1)));
  Scenario part = s;
  part.runs = 1;
  Cost cost = engine_run_cost(part);
  cost.seconds *= static_cast<double>(count);
  check_cost(cost, python_budget(allow_large).limits, "replications");
  return s;
}

// rs.distributed.run's check before any task: all its replications priced.
void montecarlo_price(const Scenario& scenario, int runs, std::optional<double> seed,
                      bool allow_large) {
  split_montecarlo(scenario, runs, seed, static_cast<size_t>(std::max(runs, 1)), allow_large);
}

py::dict montecarlo_part(const Scenario& scenario, int runs, std::optional<double> seed,
                         size_t first, size_t count, bool allow_large) {
  Scenario s = split_montecarlo(scenario, runs, seed, count, allow_large);
  if (first > static_cast<size_t>(s.runs) || count > static_cast<size_t>(s.runs) - first)
    throw InputError("replications " + std::to_string(first) + " + " + std::to_string(count) +
                     ": past runs=" + std::to_string(s.runs));
  std::vector<Replication> all = interruptible([&] { return montecarlo_part(s, first, count, 1); });
  py::list names, values;
  for (const Figure& f : montecarlo_figures(Metrics{})) names.append(f.name);
  size_t steps = all.empty() ? 0 : all[0].band.size();
  py::array_t<double> band({py::ssize_t(all.size()), py::ssize_t(steps)});
  auto b = band.mutable_unchecked<2>();
  for (size_t i = 0; i < all.size(); ++i) {
    py::list row;
    for (const Figure& f : all[i].figures) row.append(f.value ? py::cast(*f.value) : py::none());
    values.append(row);
    for (size_t k = 0; k < steps; ++k) b(py::ssize_t(i), py::ssize_t(k)) = all[i].band[k];
  }
  py::dict out;
  out["first"] = first;
  out["names"] = names;
  out["values"] = values;
  out["band"] = band;
  return out;
}

// The replications of parts (montecarlo_part's answers, any order), checked
// to be runs' replications 0 .. runs - 1, each exactly once.
std::vector<Replication> replications_of(const py::list& parts, int runs) {
  std::vector<Figure> names = montecarlo_figures(Metrics{});
  std::vector<Replication> all(static_cast<size_t>(runs));
  std::vector<bool> seen(all.size());
  for (py::handle part : parts) {
    auto first = part["first"].cast<size_t>();
    auto values = part["values"].cast<py::list>();
    auto band = part["band"].cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
    if (part["names"].cast<std::vector<std::string>>().size() != names.size() || band.ndim() != 2 ||
        py::len(values) != size_t(band.shape(0)))
      throw InputError("parts: a part of another build or scenario (its figures differ)");
    for (size_t k = 0; k < py::len(values); ++k) {
      size_t i = first + k;
      if (i >= all.size() || seen[i])
        throw InputError("parts: replication " + std::to_string(i) +
                         " is past runs=" + std::to_string(runs) + " or given twice");
      seen[i] = true;
      Replication& r = all[i];
      r.figures = names;
      auto row = values[k].cast<py::list>();
      if (py::len(row) != names.size()) throw InputError("parts: a replication lacks figures");
      for (size_t f = 0; f < names.size(); ++f)
        r.figures[f].value = row[f].is_none() ? std::nullopt : std::optional(row[f].cast<double>());
      const double* data = band.data(py::ssize_t(k), 0);
      r.band.assign(data, data + band.shape(1));
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw InputError("parts: replication " + std::to_string(i) + " is missing");
  return all;
}

// rs.distributed.run's answer: the report run here, the Monte Carlo of the parts.
app::RunAnswer run_of_parts(const Scenario& scenario, int runs, std::optional<double> seed,
                            const py::list& parts, bool trace, bool allow_large) {
  Scenario s = with_options(scenario, runs, seed);
  std::vector<Replication> all = replications_of(parts, s.runs);
  app::RunOptions o;
  o.report.trace = trace;
  o.montecarlo = app::montecarlo_wanted(s);  // rs.run's rule: a fluid run is one run
  return interruptible([&] { return app::run_of_parts(s, o, python_budget(allow_large), all); });
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
  m.def("_montecarlo_part", &montecarlo_part, py::arg("scenario"), py::arg("runs"), py::arg("seed"),
        py::arg("first"), py::arg("count"), py::arg("allow_large") = false,
        "Replications [first, first + count) of a run's Monte Carlo, on one thread "
        "(rs.distributed.run's task; GIL released).");
  m.def("_montecarlo_price", &montecarlo_price, py::arg("scenario"), py::arg("runs"),
        py::arg("seed"), py::arg("allow_large") = false,
        "Prices every replication of a run's Monte Carlo before rs.distributed.run submits any.");
  m.def(
      "_montecarlo_wanted",
      [](const Scenario& s, int runs) {
        return app::montecarlo_wanted(with_options(s, runs, std::nullopt));
      },
      py::arg("scenario"), py::arg("runs"),
      "True when rs.run of the scenario with `runs` has a Monte Carlo (a random engine, runs > "
      "1).");
  m.def("_run_of_parts", &run_of_parts, py::arg("scenario"), py::arg("runs"), py::arg("seed"),
        py::arg("parts"), py::arg("trace") = true, py::arg("allow_large") = false,
        "rs.run's answer with its Monte Carlo from _montecarlo_part's answers.");
}

}  // namespace retrystorm::python
