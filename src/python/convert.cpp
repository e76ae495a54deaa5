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

// What a message calls the value: its key, or the whole scenario.
std::string label(const std::string& name) {
  return name.empty() ? "scenario" : name;
}

// "a bytes", "an int": the type's name with its article.
std::string type_name(py::handle v) {
  std::string t = py::str(v.get_type().attr("__name__"));
  return (!t.empty() && std::string("aeiouAEIOU").find(t[0]) != std::string::npos ? "an " : "a ") +
         t;
}

// Text for a message; a lone surrogate, which has no UTF-8, as \ud800.
std::string escaped(py::handle text) {
  PyObject* bytes = PyUnicode_AsEncodedString(text.ptr(), "utf-8", "backslashreplace");
  if (!bytes) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(bytes);
}

// A value for a message as retrystorm/_args.py shows it: its repr,
// shortened past 40 characters (10**400 would fill the screen; past
// Python's 4300 digits an int has no repr at all).
std::string shown(py::handle v) {
  PyObject* repr = PyObject_Repr(v.ptr());
  if (!repr) {
    PyErr_Clear();
    if (PyLong_Check(v.ptr()))
      return "an integer of " + std::to_string(_PyLong_NumBits(v.ptr())) + " bits";
    return type_name(v);
  }
  py::str text = py::reinterpret_steal<py::str>(repr);
  size_t length = py::len(text);
  if (length <= 40) return escaped(text);
  py::object head = text[py::slice(0, 28, 1)];
  return escaped(head) + "... (" + std::to_string(length) + " characters)";
}

py::value_error outside_numbers(py::handle v, const std::string& name) {
  return py::value_error(label(name) + ": " + shown(v) + " is outside the range of numbers");
}

// A str as UTF-8: a lone surrogate ("\ud800") has none, and pybind11's
// cast would say only "Unable to cast" (a RuntimeError).
std::string utf8(py::handle text, const std::string& name) {
  Py_ssize_t size = 0;
  if (const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size))
    return std::string(data, static_cast<size_t>(size));
  if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();
  PyErr_Clear();
  throw py::value_error(label(name) + ": " + shown(text) +
                        " holds a lone surrogate, which UTF-8 cannot encode; give text of "
                        "whole Unicode characters");
}

// A Python int as JSON: a whole number when it fits, else the nearest
// float, whose range the key then checks (2**63 is a number, not an error
// of the binding).
nlohmann::json int_to_json(py::handle v, const std::string& name) {
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
    throw outside_numbers(v, name);
  }
  return d;
}

// Another number (Fraction, Decimal) as its float; one past a double
// (Fraction(10**400)) is out of range, not an OverflowError.
double float_of(py::handle v, const std::string& name) {
  PyObject* f = PyNumber_Float(v.ptr());
  if (f) return py::reinterpret_steal<py::float_>(f).cast<double>();
  if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw py::error_already_set();
  PyErr_Clear();
  throw outside_numbers(v, name);
}

// A value (or dict key) of a type the scenario has no use for; `allowed`
// says what it takes.
py::type_error wrong_type(py::handle v, const std::string& name, const std::string& allowed) {
  return py::type_error(label(name) + ": " + shown(v) + " is " + type_name(v) + "; " + allowed);
}

// The key of a dict's item: "client" and "retries" make "client.retries".
std::string joined(const std::string& name, const std::string& key) {
  return name.empty() ? key : name + "." + key;
}

// The dicts and lists being converted, outermost first: a value that
// contains itself, or nests past the files' limit, is a ValueError, not a
// stack overflow. `name` is the key being converted, for every error.
nlohmann::json to_json(py::handle v, const std::string& name, std::vector<PyObject*>& path);

nlohmann::json container_to_json(py::handle v, const std::string& name,
                                 std::vector<PyObject*>& path) {
  if (std::find(path.begin(), path.end(), v.ptr()) != path.end())
    throw py::value_error(label(name) +
                          ": the scenario contains itself (a dict or list inside its own value)");
  if (path.size() >= static_cast<size_t>(kMaxNesting))
    throw py::value_error(label(name) + ": the scenario is nested more than " +
                          std::to_string(kMaxNesting) + " levels deep");
  path.push_back(v.ptr());
  nlohmann::json out;
  if (py::isinstance<py::dict>(v)) {
    out = nlohmann::json::object();
    for (auto [key, item] : v.cast<py::dict>()) {
      // str() of another key would make a key of its repr ("b'retries'").
      if (!py::isinstance<py::str>(key))
        throw wrong_type(key, label(name) + " key", "a scenario key is a str");
      std::string text = utf8(key, label(name) + " key");
      out[text] = to_json(item, joined(name, text), path);
    }
  } else {
    out = nlohmann::json::array();
    size_t i = 0;
    for (auto item : v)
      out.push_back(to_json(item, label(name) + "[" + std::to_string(i++) + "]", path));
  }
  path.pop_back();
  return out;
}

nlohmann::json to_json(py::handle v, const std::string& name, std::vector<PyObject*>& path) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  // numpy.bool_ has __index__ too: it is a bool, not the number 1.
  if (py::hasattr(v, "dtype") && py::hasattr(v.attr("dtype"), "kind") &&
      py::str(v.attr("dtype").attr("kind")).cast<std::string>() == "b")
    return py::bool_(py::reinterpret_borrow<py::object>(v)).cast<bool>();
  if (py::isinstance<py::int_>(v)) return int_to_json(v, name);
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return utf8(v, name);
  if (py::isinstance<py::dict>(v) || py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
    return container_to_json(v, name, path);
  // An array of one or more dimensions is many values, even of size one.
  if (py::hasattr(v, "ndim") && py::int_(v.attr("ndim")).cast<long>() > 0)
    throw py::type_error(label(name) + ": cannot use an array (ndim " +
                         py::str(v.attr("ndim")).cast<std::string>() +
                         ") as a scenario value; give one number (bool, int, float or str)");
  // numpy scalars and other numbers: a whole number when it is one
  // (operator.index, which a float array of no dimension refuses; int()
  // would cut its fraction), else a float.
  if (py::hasattr(v, "__index__")) {
    if (PyObject* whole = PyNumber_Index(v.ptr()))
      return int_to_json(py::reinterpret_steal<py::int_>(whole), name);
    PyErr_Clear();
  }
  if (py::hasattr(v, "__float__")) return float_of(v, name);
  throw wrong_type(v, name, "a scenario value is a bool, int, float or str");
}

}  // namespace

nlohmann::json python_to_json(py::handle v, const std::string& name) {
  std::vector<PyObject*> path;
  return to_json(v, name, path);
}

}  // namespace retrystorm::python
