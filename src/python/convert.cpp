// Python values and JSON, both ways: what every binding hands the core and
// gets back (docs/python.md). Apart from the module so that a fuzz target can
// embed the interpreter and test the converter alone (fuzz/fuzz_python.cpp).
#include <algorithm>
#include <vector>

#include "bindings.hpp"
#include "formats/input_text.hpp"

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

namespace {

// A Python int as JSON: a whole number when it fits, else the nearest
// float, whose range the key then checks (2**63 is a number, not an error
// of the binding).
nlohmann::json int_to_json(py::handle v) {
  long long whole = PyLong_AsLongLong(v.ptr());
  if (!(whole == -1 && PyErr_Occurred())) return whole;
  PyErr_Clear();
  // Above 2^63: a seed of a walk's path, which must come back exact.
  unsigned long long large = PyLong_AsUnsignedLongLong(v.ptr());
  if (!(large == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return large;
  PyErr_Clear();
  double d = PyLong_AsDouble(v.ptr());
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error("an integer of " + std::to_string(_PyLong_NumBits(v.ptr())) +
                          " bits is outside the range of numbers");
  }
  return d;
}

// The dicts and lists being converted, outermost first: a value that
// contains itself, or nests past the files' limit, is a ValueError, not a
// stack overflow.
nlohmann::json to_json(py::handle v, std::vector<PyObject*>& path);

nlohmann::json container_to_json(py::handle v, std::vector<PyObject*>& path) {
  if (std::find(path.begin(), path.end(), v.ptr()) != path.end())
    throw py::value_error("the scenario contains itself (a dict or list inside its own value)");
  if (path.size() >= static_cast<size_t>(kMaxNesting))
    throw py::value_error("the scenario is nested more than " + std::to_string(kMaxNesting) +
                          " levels deep");
  path.push_back(v.ptr());
  nlohmann::json out;
  if (py::isinstance<py::dict>(v)) {
    out = nlohmann::json::object();
    for (auto [key, item] : v.cast<py::dict>()) out[py::str(key)] = to_json(item, path);
  } else {
    out = nlohmann::json::array();
    for (auto item : v) out.push_back(to_json(item, path));
  }
  path.pop_back();
  return out;
}

nlohmann::json to_json(py::handle v, std::vector<PyObject*>& path) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  // numpy.bool_ has __index__ too: it is a bool, not the number 1.
  if (py::hasattr(v, "dtype") && py::hasattr(v.attr("dtype"), "kind") &&
      py::str(v.attr("dtype").attr("kind")).cast<std::string>() == "b")
    return py::bool_(py::reinterpret_borrow<py::object>(v)).cast<bool>();
  if (py::isinstance<py::int_>(v)) return int_to_json(v);
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::dict>(v) || py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
    return container_to_json(v, path);
  // An array of one or more dimensions is many values, even of size one.
  if (py::hasattr(v, "ndim") && py::int_(v.attr("ndim")).cast<long>() > 0)
    throw py::type_error("cannot use an array (ndim " +
                         py::str(v.attr("ndim")).cast<std::string>() +
                         ") as a scenario value; give one number (bool, int, float or str)");
  // numpy scalars and other numbers: a whole number when it is one
  // (operator.index, which a float array of no dimension refuses; int()
  // would cut its fraction), else a float.
  if (py::hasattr(v, "__index__")) {
    if (PyObject* whole = PyNumber_Index(v.ptr()))
      return int_to_json(py::reinterpret_steal<py::int_>(whole));
    PyErr_Clear();
  }
  if (py::hasattr(v, "__float__"))
    return py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
  throw py::type_error("cannot use a " + std::string(py::str(v.get_type().attr("__name__"))) +
                       " as a scenario value (bool, int, float or str)");
}

}  // namespace

nlohmann::json python_to_json(py::handle v) {
  std::vector<PyObject*> path;
  return to_json(v, path);
}

}  // namespace retrystorm::python
