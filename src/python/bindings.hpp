// The pieces of the Python module `retrystorm._core`, one function per
// file that binds part of the core library (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"

namespace retrystorm::python {

// JSON values as Python objects (dict, list, float, int, str, bool, None);
// strings that are not UTF-8 are decoded with replacement characters, as the
// command line's JSON writes them (src/python/module.cpp).
pybind11::object json_to_python(const nlohmann::json& j);
// A Python value (bool, int, float, str, dict, list, None) as JSON; TypeError otherwise.
nlohmann::json python_to_json(pybind11::handle value);
// What one call may cost: the command line's limits, or with allow_large
// those of --allow-large (analysis/cost.hpp).
app::CostBudget python_budget(bool allow_large);

// Scenario, presets and the key table (src/python/bind_scenario.cpp).
void bind_scenario(pybind11::module_& m);
// run and its answer: metrics, verdict, series, band, JSON (src/python/bind_run.cpp).
void bind_run(pybind11::module_& m);
// ladder, tipping, analyze, import, export, lint (src/python/bind_studies.cpp).
void bind_studies(pybind11::module_& m);

// Grid sweeps, their shards and point ranges (src/python/bind_sweep.cpp).
void bind_sweep(pybind11::module_& m);

}  // namespace retrystorm::python
