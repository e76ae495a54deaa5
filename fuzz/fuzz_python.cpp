// libFuzzer target for the converter of Python values to JSON (python_to_json,
// src/python/convert.cpp) that rs.Scenario.from_dict and Scenario.set use.
// The interpreter is embedded; the input is a small program that builds a
// Python value on a stack, so the fuzzer reaches what JSON text cannot: dicts
// and lists that contain themselves, tuples, huge integers, floats that are
// not finite, keys that are not strings, deep nesting. The converter must
// give JSON, or raise ValueError or TypeError; anything else (a crash, a
// sanitizer report, another exception) is a bug.
#include <pybind11/embed.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "../src/python/bindings.hpp"

namespace py = pybind11;

namespace {

// One byte an operation; the low bits pick what it builds.
py::object build(const uint8_t* data, size_t size) {
  std::vector<py::object> stack;
  auto top = [&]() -> py::object& { return stack.back(); };
  for (size_t i = 0; i < size && stack.size() < 100000; ++i) {
    uint8_t op = data[i], arg = i + 1 < size ? data[i + 1] : 0;
    switch (op % 12) {
      case 0:
        stack.push_back(py::dict());
        break;
      case 1:
        stack.push_back(py::list());
        break;
      case 2:
        stack.push_back(py::int_(static_cast<int8_t>(arg)));
        break;
      case 3:
        stack.push_back(py::float_(arg == 0 ? 1e308 * 10 : arg / 7.0));
        break;
      case 4:
        stack.push_back(py::str(std::string(1 + arg % 3, static_cast<char>('a' + arg % 26))));
        break;
      case 5:
        stack.push_back(py::none());
        break;
      case 6:  // a huge integer: 2 ** (arg * 8)
        stack.push_back(py::reinterpret_steal<py::object>(
            PyNumber_Power(py::int_(2).ptr(), py::int_(arg * 8).ptr(), Py_None)));
        break;
      case 7:  // value into the container below it (a list, or a dict under a key)
        if (stack.size() >= 2) {
          py::object v = top();
          stack.pop_back();
          if (py::isinstance<py::list>(top())) top().cast<py::list>().append(v);
          if (py::isinstance<py::dict>(top())) top()[py::str(std::to_string(arg))] = v;
        }
        break;
      case 8:  // the top into itself: a cycle
        if (!stack.empty() && py::isinstance<py::list>(top())) top().cast<py::list>().append(top());
        if (!stack.empty() && py::isinstance<py::dict>(top())) top()["self"] = top();
        break;
      case 9:  // a key that is not a string
        if (!stack.empty() && py::isinstance<py::dict>(top())) top()[py::int_(arg)] = py::none();
        break;
      case 10:  // a tuple of the top
        if (!stack.empty()) top() = py::make_tuple(top());
        break;
      default:  // nesting: the top inside a new list, arg times
        for (int k = 0; k < arg && !stack.empty(); ++k) {
          py::list l;
          l.append(top());
          top() = l;
        }
    }
  }
  return stack.empty() ? py::none() : stack.front();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static py::scoped_interpreter python;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  py::object value = build(data, size);
  try {
    nlohmann::json j = retrystorm::python::python_to_json(value);
    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const py::value_error&) {
  } catch (const py::type_error&) {
  } catch (const py::error_already_set& e) {
    if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError)) std::abort();
  }
  // Cycles live on until the collector runs: run it, so memory stays flat.
  value = py::none();
  PyGC_Collect();
  return 0;
}
