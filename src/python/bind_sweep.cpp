// Grid sweeps for rs.sweep and rs.distributed.sweep: the grid's size, and one
// batch of its points run in C++ (GIL released) with their rows as column
// arrays. A batch's rows depend only on the scenario, the axes, runs, the
// base seed and the point indices, so any cut of the grid gives the same
// rows (docs/distributed.md).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <optional>

#include "analysis/cost.hpp"
#include "bindings.hpp"
#include "formats/text_report.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

namespace {

// (path, from, to, step, values): values not empty lists the axis's values.
using Axis = std::tuple<std::string, double, double, double, std::vector<double>>;

std::vector<SweepAxis> axes_of(const std::vector<Axis>& axes) {
  std::vector<SweepAxis> out;
  for (const auto& [path, from, to, step, listed] : axes)
    out.push_back({path, from, to, step, listed});
  return out;
}

SweepOptions options_of(int runs, std::optional<double> seed, unsigned threads) {
  SweepOptions o;
  o.runs = runs;
  o.seed = seed;
  o.threads = threads;
  return o;
}

// Each function takes the scenario by value: pybind11 copies it with the
// GIL held, and the work, which releases it, never reads an object another
// Python thread may be changing meanwhile.

// The grid checked and every point validated, as the command line does before
// any work: {"points", "paths", "figures", "seconds"}; seconds: each point's
// estimated CPU seconds, priced by the check (None for a grid too large to
// price point by point), for _sweep_ranges.
py::dict sweep_grid_info(Scenario s, const std::vector<Axis>& axes, int runs,
                         std::optional<double> seed, bool allow_large) {
  SweepOptions o = options_of(runs, seed, 0);
  std::vector<SweepAxis> sweep_axes = axes_of(axes);
  std::vector<double> seconds;
  SweepGrid grid = interruptible([&] {
    // The whole grid's cost, as `retrystorm sweep` checks it; its batches then run unchecked.
    app::check_sweep_cost(s, sweep_axes, o, python_budget(allow_large), &seconds);
    return sweep_grid(s, sweep_axes, o);
  });
  py::dict out;
  out["points"] = grid.points;
  if (seconds.size() == grid.points)
    out["seconds"] = py::array_t<double>(static_cast<py::ssize_t>(seconds.size()), seconds.data());
  else
    out["seconds"] = py::none();
  py::list paths, figures;
  for (const auto& a : axes) paths.append(std::get<0>(a));
  for (std::string_view name : sweep_csv_figures()) figures.append(std::string(name));
  out["paths"] = paths;
  out["figures"] = figures;
  return out;
}

// One figure over the rows: NaN where it never happened; a flag is a bool
// array for single runs and the share of replications otherwise.
py::array figure_column(const std::vector<SweepRow>& rows, const MetricField& field, bool shares) {
  if (field.kind == FigureKind::flag && !shares) {
    py::array_t<bool> out(static_cast<py::ssize_t>(rows.size()));
    auto view = out.mutable_unchecked<1>();
    for (size_t i = 0; i < rows.size(); ++i)
      view(i) = sweep_figure(rows[i], field).value_or(0) != 0;
    return out;
  }
  py::array_t<double> out(static_cast<py::ssize_t>(rows.size()));
  auto view = out.mutable_unchecked<1>();
  for (size_t i = 0; i < rows.size(); ++i)
    view(i) = sweep_figure(rows[i], field).value_or(std::numeric_limits<double>::quiet_NaN());
  return out;
}

// Points [first, first + count) of the grid as columns: "point", one per
// axis, then the figures of the sweep's CSV (one copy, straight from the rows).
py::dict sweep_points(Scenario s, const std::vector<Axis>& axes, size_t first, size_t count,
                      int runs, std::optional<double> seed, unsigned threads, bool validate_grid,
                      bool allow_large) {
  std::vector<SweepAxis> sweep_axes = axes_of(axes);
  SweepOptions o = options_of(runs, seed, threads);
  o.first = first;
  o.count = count;
  o.validate_grid = validate_grid;
  std::vector<SweepRow> rows =
      interruptible([&] { return app::sweep(s, sweep_axes, o, python_budget(allow_large)); });
  py::dict out;
  py::array_t<long long> point(static_cast<py::ssize_t>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i)
    point.mutable_at(i) = static_cast<long long>(rows[i].point);
  out["point"] = point;
  for (size_t a = 0; a < sweep_axes.size(); ++a) {
    py::array_t<double> column(static_cast<py::ssize_t>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) column.mutable_at(i) = rows[i].values[a];
    out[py::str(sweep_axes[a].path)] = column;
  }
  for (std::string_view name : sweep_csv_figures())
    out[py::str(std::string(name))] = figure_column(rows, metric_field(name), runs > 1);
  return out;
}

// Ranges of about equal estimated cost covering the grid (the cut of
// `sweep --shard K/N`): [(first, count), ...], `parts` of them. `seconds`:
// the points' prices _sweep_grid gave, or none to price them here.
std::vector<std::pair<size_t, size_t>> sweep_ranges(Scenario s, const std::vector<Axis>& axes,
                                                    int runs, std::optional<double> seed,
                                                    size_t parts,
                                                    std::optional<std::vector<double>> seconds) {
  std::vector<SweepAxis> sweep_axes = axes_of(axes);
  SweepOptions o = options_of(runs, seed, 0);
  o.validate_grid = false;  // _sweep_grid validated it; here only its size
  return interruptible([&] {
    if (!seconds) seconds = sweep_point_seconds(s, sweep_axes, o);
    if (seconds->size() != sweep_grid(s, sweep_axes, o).points)
      throw InputError("seconds: " + std::to_string(seconds->size()) +
                       " prices for a grid of another size; give those _sweep_grid returned");
    return cost_balanced_ranges(*seconds, parts);
  });
}

}  // namespace

void bind_sweep(py::module_& m) {
  // The grid's point limit, for sweep.py to refuse a listed axis past it
  // before turning it into a list (a range of millions would fill memory first).
  m.attr("_sweep_max_points") = py::int_(SweepOptions{}.max_runs);
  m.def("_sweep_grid", &sweep_grid_info, py::arg("scenario"), py::arg("axes"), py::arg("runs") = 1,
        py::arg("seed") = py::none(), py::arg("allow_large") = false,
        "Checks a sweep's cost, axes, runs and seed and validates every grid point; returns "
        "{points, paths, figures, seconds}. axes: [(path, from, to, step, values), ...] (values: "
        "[] for "
        "a range).");
  m.def("_sweep_ranges", &sweep_ranges, py::arg("scenario"), py::arg("axes"), py::arg("runs"),
        py::arg("seed"), py::arg("parts"), py::arg("seconds") = py::none(),
        "The grid cut into `parts` contiguous ranges of about equal estimated cost: "
        "[(first, count), ...], as `retrystorm sweep --shard K/N` cuts it. seconds: the "
        "points' prices from _sweep_grid (None: priced here).");
  m.def("_sweep_points", &sweep_points, py::arg("scenario"), py::arg("axes"), py::arg("first"),
        py::arg("count"), py::arg("runs") = 1, py::arg("seed") = py::none(), py::arg("threads") = 0,
        py::arg("validate_grid") = false, py::arg("allow_large") = false,
        "Runs points [first, first + count) of the grid (GIL released); returns columns: point, "
        "one per axis, then the sweep CSV's figures (NaN: never happened).");
}

}  // namespace retrystorm::python
