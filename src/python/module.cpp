// The Python module retrystorm._core: the application layer of the command
// line and the server, bound with pybind11 (docs/python.md). The package
// python/retrystorm wraps it in pandas and matplotlib.
#include <pybind11/stl.h>

#include "analysis/cost.hpp"
#include "bindings.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

py::object json_to_python(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::null:
    case T::discarded:
      return py::none();
    case T::boolean:
      return py::bool_(j.get<bool>());
    case T::number_integer:
      return py::int_(j.get<long long>());
    case T::number_unsigned:
      return py::int_(j.get<unsigned long long>());
    case T::number_float:
      return py::float_(j.get<double>());
    case T::string: {
      const auto& s = j.get_ref<const std::string&>();
      PyObject* text = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "replace");
      if (!text) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(text);
    }
    case T::array: {
      py::list out;
      for (const auto& item : j) out.append(json_to_python(item));
      return out;
    }
    case T::object: {
      py::dict out;
      for (const auto& [key, item] : j.items()) out[py::str(key)] = json_to_python(item);
      return out;
    }
    case T::binary:
      break;
  }
  throw py::type_error("a JSON value with no Python equivalent");
}

nlohmann::json python_to_json(py::handle v) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<long long>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::dict>(v)) {
    nlohmann::json out = nlohmann::json::object();
    for (auto [key, item] : v.cast<py::dict>()) out[py::str(key)] = python_to_json(item);
    return out;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    nlohmann::json out = nlohmann::json::array();
    for (auto item : v) out.push_back(python_to_json(item));
    return out;
  }
  // numpy scalars and other numbers: their own conversions.
  if (py::hasattr(v, "__index__"))
    return py::int_(py::reinterpret_borrow<py::object>(v)).cast<long long>();
  if (py::hasattr(v, "__float__"))
    return py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
  throw py::type_error("cannot use a " + std::string(py::str(v.get_type().attr("__name__"))) +
                       " as a scenario value (bool, int, float or str)");
}

app::Budget python_budget(bool allow_large) {
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
