// The Python module retrystorm._core: the application layer of the command
// line and the server, bound with pybind11 (docs/python.md). The package
// python/retrystorm wraps it in pandas and matplotlib.
#include <pybind11/stl.h>

#include "analysis/cost.hpp"
#include "bindings.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

app::CostBudget python_budget(bool allow_large) {
  if (allow_large) return {large_cost_limits(), "", {}};
  return {CostLimits{}, "; allow_large=True allows more", {}};
}

}  // namespace retrystorm::python

PYBIND11_MODULE(_core, m) {
  using namespace retrystorm::python;
  m.doc() = "retrystorm's C++ core (docs/python.md); use the package retrystorm";
  // Bad input keeps the core's message, which names the key and the range.
  py::register_exception<retrystorm::InputError>(m, "InputError", PyExc_ValueError);
  bind_scenario(m);
  bind_run(m);
  bind_studies(m);
  bind_sweep(m);
}
