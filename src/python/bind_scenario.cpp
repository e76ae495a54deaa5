// rs.Scenario (the C++ Scenario itself), rs.presets() and rs.keys(): every
// key goes through the key table (model/keys.hpp), so a value the command
// line refuses is refused here with the same message.
#include <pybind11/stl.h>

#include "app/scenario_request.hpp"
#include "bindings.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

namespace {

const char* type_name(KeyType t) {
  static const char* names[] = {"number", "integer", "boolean", "choice", "text"};
  return names[static_cast<int>(t)];
}

// One row of the key table, with the default of a scenario with no keys set.
py::dict key_row(const KeySpec& k, const Scenario& defaults) {
  py::dict row;
  row["path"] = k.path;
  row["type"] = type_name(k.type);
  bool numeric = k.type == KeyType::number || k.type == KeyType::integer;
  row["min"] = numeric ? py::object(py::float_(k.min)) : py::none();
  row["max"] = numeric ? py::object(py::float_(k.max)) : py::none();
  row["min_exclusive"] = numeric && k.min_exclusive;
  row["choices"] = k.choices;
  row["unit"] = k.unit;
  row["group"] = k.group;
  row["label"] = k.label;
  row["help"] = k.help;
  row["default"] = json_to_python(key_value_to_json(k.get(defaults)));
  return row;
}

py::list key_table() {
  py::list rows;
  Scenario defaults;
  for (const KeySpec& k : scenario_keys()) rows.append(key_row(k, defaults));
  return rows;
}

py::list preset_list() {
  py::list out;
  for (const Preset& p : presets()) {
    py::dict row;
    row["name"] = p.name;
    row["description"] = p.description;
    row["engine"] = engine_name(p.scenario.engine);
    out.append(row);
  }
  return out;
}

// The scenario a preset or file names, validated like the command line's.
Scenario assembled(const std::string& preset, const std::string& file) {
  app::ScenarioRequest request;
  request.preset = preset;
  request.file = file;
  return app::assemble_scenario(request).scenario;
}

// An empty name is refused, as --preset "" is: the request reads it as none
// given, which is the default scenario.
Scenario named(const std::string& name, bool is_file) {
  if (name.empty())
    throw InputError(is_file ? "path: '' is empty; give a scenario file"
                             : "name: '' is empty; give a preset name (rs.presets() lists them)");
  return is_file ? assembled("", name) : assembled(name, "");
}

// A str is read as --set reads its text ("true", "3", "full"); anything else
// as the JSON value it converts to. Both go through the converter, whose
// errors name the key.
py::object set_value(py::object self, const std::string& key, py::handle value) {
  nlohmann::json given = python_to_json(value, key);
  if (py::isinstance<py::str>(value))
    set_key_text(self.cast<Scenario&>(), key, given.get<std::string>());
  else
    set_key_json(self.cast<Scenario&>(), key, given);
  return self;
}

// A path as str or any os.PathLike (pathlib.Path), as open() takes it.
std::string path_text(py::handle path) {
  py::object text = py::module_::import("os").attr("fspath")(path);
  if (!py::isinstance<py::str>(text))
    throw py::type_error("path: give a str or a pathlib.Path, not bytes");
  std::string given = text.cast<std::string>();
  // The file system reads a path up to its first NUL: a longer text names another file.
  if (given.find('\0') != std::string::npos)
    throw py::value_error("path: " + py::repr(text).cast<std::string>() +
                          " holds a NUL character, which no file name can");
  return given;
}

// A graph path ("calls[0].retries", "services.db.queue_limit") is read as
// set_value writes it: whatever Scenario.set takes, Scenario.get gives back.
py::object get_value(const Scenario& s, const std::string& key) {
  if (is_graph_path(key)) return json_to_python(key_value_to_json(graph_key_value(s, key)));
  return json_to_python(key_value_to_json(key_or_throw(key).get(s)));
}

Scenario from_dict(py::handle object) {
  return scenario_from_json(python_to_json(object));
}

std::string pickled(const Scenario& s) {
  return scenario_to_json(s).dump();
}

// A state that does not parse is bad input (ValueError), not the JSON library's error.
Scenario unpickled(const std::string& text) {
  nlohmann::json state = nlohmann::json::parse(text, nullptr, false);
  if (state.is_discarded())
    throw InputError("pickled scenario: the state is not a scenario's JSON");
  return scenario_from_json(state);
}

}  // namespace

void bind_scenario(py::module_& m) {
  py::class_<Scenario>(m, "Scenario", "A scenario: every input of a run (docs/scenario-keys.md).")
      .def(py::init([] { return assembled("", ""); }), "The command line's default: order-status.")
      .def_static(
          "preset", [](const std::string& name) { return named(name, false); }, py::arg("name"),
          "A preset by name (rs.presets()).")
      .def_static(
          "scenario_file", [](py::handle path) { return named(path_text(path), true); },
          py::arg("path"), "A scenario file, YAML or JSON, as --scenario reads it.")
      .def_static("from_dict", &from_dict, py::arg("scenario"),
                  "A (possibly partial) scenario object as in a file, onto the defaults.")
      .def("set", &set_value, py::arg("key"), py::arg("value"),
           "Sets one key (checked against the key table); returns the scenario.")
      .def("get", &get_value, py::arg("key"), "One key's value.")
      .def(
          "validate", [](const Scenario& s) { validate(s); },
          "Checks the rules that tie keys together, as run does (ValueError).")
      .def("to_dict", [](const Scenario& s) { return json_to_python(scenario_to_json(s)); })
      .def("copy", [](const Scenario& s) { return s; })
      .def("__copy__", [](const Scenario& s) { return s; })
      .def("__deepcopy__", [](const Scenario& s, py::dict) { return s; })
      .def_property_readonly("name", [](const Scenario& s) { return s.name; })
      .def_property_readonly("engine", [](const Scenario& s) { return engine_name(s.engine); })
      .def("__repr__",
           [](const Scenario& s) {
             return "<retrystorm.Scenario " + s.name + " (engine " + engine_name(s.engine) + ")>";
           })
      .def(py::pickle(&pickled, &unpickled));
  m.def("presets", &preset_list, "The presets: name, description, engine.");
  m.def("keys", &key_table, "The key table: path, type, range, unit, help, default.");
}

}  // namespace retrystorm::python
