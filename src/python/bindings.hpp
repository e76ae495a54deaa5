// The pieces of the Python module `retrystorm._core`, one function per
// file that binds part of the core library (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/commands.hpp"
#include "parallel/cancel.hpp"

// A bound object made by `Type.__new__(Type)` without `__init__` has no C++
// value: pybind11 would hand a method its raw memory (garbage, then a crash).
// Every function that takes a Scenario or a RunAnswer refuses one with a
// TypeError instead (the casters below apply wherever this header is seen,
// which is every file of the module).
namespace pybind11::detail {

template <typename T>
class constructed_caster : public type_caster_base<T> {
 public:
  bool load(handle src, bool convert) {
    const type_info* info = get_type_info(typeid(T));
    if (info && src && PyObject_TypeCheck(src.ptr(), info->type)) {
      auto* inst = reinterpret_cast<instance*>(src.ptr());
      if (!inst->get_value_and_holder(info).holder_constructed())
        throw type_error(std::string(info->type->tp_name) +
                         ": this object was made by __new__ without __init__; make one with " +
                         info->type->tp_name + "() or its constructors");
    }
    return type_caster_base<T>::load(src, convert);
  }
};
template <>
class type_caster<retrystorm::Scenario> : public constructed_caster<retrystorm::Scenario> {};
template <>
class type_caster<retrystorm::app::RunAnswer>
    : public constructed_caster<retrystorm::app::RunAnswer> {};

}  // namespace pybind11::detail

namespace retrystorm::python {

// JSON values as Python objects (dict, list, float, int, str, bool, None);
// strings that are not UTF-8 are decoded with replacement characters, as the
// command line's JSON writes them (src/python/module.cpp).
pybind11::object json_to_python(const nlohmann::json& j);
// A Python value (bool, int, float, str, dict, list, None) as JSON; TypeError
// otherwise. Every error names `name`, the key the value sets, or an item in
// it (client.retries, calls[0]); empty: the value is the whole scenario.
nlohmann::json python_to_json(pybind11::handle value, const std::string& name = "");
// What one call may cost: the command line's limits, or with allow_large
// those of --allow-large (analysis/cost.hpp).
app::CostBudget python_budget(bool allow_large);

// Ctrl-C during a call that runs C++ with the GIL released. Python's SIGINT
// handler runs only when the interpreter has control, so while the call
// runs a handler of the module's own sets a flag that the engines and pools
// poll (parallel/cancel.hpp), and the call raises KeyboardInterrupt. Only on
// the main thread, and only while Python's default handler is in place (a
// Dask worker's threads and a program with its own handler are left alone).
class InterruptScope {
 public:
  InterruptScope();  // with the GIL held
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  const CancelCheck& check() const { return check_; }
  // Puts Python's handler back; true when Ctrl-C came while ours was in
  // place. Read after the handler is back, so no signal falls between the
  // two: one that came later reaches Python's own handler.
  bool finish();

 private:
  bool installed_ = false;
  bool interrupted_ = false;
  CancelCheck check_;
};

// Runs work() with the GIL released, under an InterruptScope: Ctrl-C stops
// it within a few milliseconds with KeyboardInterrupt. A Ctrl-C that lands
// after the work's last poll still raises: the work finished, but the user
// asked to stop, as Python's own handler would have told them.
template <typename Work>
auto interruptible(Work&& work) -> decltype(work()) {
  InterruptScope interrupt;
  std::optional<decltype(work())> result;
  try {
    CancelScope scope(interrupt.check());
    pybind11::gil_scoped_release released;
    result.emplace(work());
  } catch (const Cancelled&) {
    if (!interrupt.finish()) throw;
  }
  if (!interrupt.finish()) return std::move(*result);
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw pybind11::error_already_set();
}

// Scenario, presets and the key table (src/python/bind_scenario.cpp).
void bind_scenario(pybind11::module_& m);
// run and its answer: metrics, verdict, series, band, JSON (src/python/bind_run.cpp).
void bind_run(pybind11::module_& m);
// ladder, tipping, analyze, import, export, lint (src/python/bind_studies.cpp).
void bind_studies(pybind11::module_& m);

// Grid sweeps, their shards and point ranges (src/python/bind_sweep.cpp).
void bind_sweep(pybind11::module_& m);

}  // namespace retrystorm::python
