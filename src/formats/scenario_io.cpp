#include "formats/scenario_io.hpp"

#include <cmath>
#include <set>

#include "formats/input_text.hpp"
#include "formats/preset_texts.hpp"
#include "model/graph.hpp"
#include "text/printable.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

std::string type_name(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  if (v.is_null()) return "null";
  // Replace: a YAML string may hold bytes that are not UTF-8.
  return "'" + v.dump(-1, ' ', false, json::error_handler_t::replace) + "'";
}

LadderRow ladder_row_from_json(const json& row, size_t index) {
  std::string where = "ladder.rows[" + std::to_string(index) + "]";
  if (!row.is_object()) throw InputError(where + ": must be an object with name, change, set");
  LadderRow out;
  for (const auto& [key, value] : row.items()) {
    if (key == "name" && value.is_string()) {
      out.name = value.get<std::string>();
    } else if (key == "change" && value.is_string()) {
      out.change = value.get<std::string>();
    } else if (key == "set" && (value.is_object() || value.is_null())) {
      if (value.is_null()) continue;
      Scenario probe;  // checks each path and value now, not at ladder time
      for (const auto& [path, v] : value.items()) {
        // A call's or a service's key is checked when the row runs: the
        // graph may come later in the file.
        if (!is_graph_path(path)) set_key_json(probe, path, v);
        out.set.emplace_back(path, key_value_from_json(path, v));
      }
    } else {
      throw InputError(where + "." + key + ": unknown or wrong type " + type_name(value) +
                       "; allowed: name (text), change (text), set (object of path: value)");
    }
  }
  return out;
}

Ladder ladder_from_json(const json& v) {
  if (!v.is_object()) throw InputError("ladder: must be an object with mode and rows");
  Ladder ladder;
  for (const auto& [key, value] : v.items()) {
    if (key == "mode") {
      std::string mode = value.is_string() ? value.get<std::string>() : "";
      if (mode == "cumulative")
        ladder.mode = LadderMode::cumulative;
      else if (mode == "single")
        ladder.mode = LadderMode::single;
      else
        throw InputError("ladder.mode: " + type_name(value) +
                         " is not allowed; choose cumulative or single");
    } else if (key == "rows") {
      if (!value.is_array()) throw InputError("ladder.rows: must be a list");
      for (size_t i = 0; i < value.size(); ++i)
        ladder.rows.push_back(ladder_row_from_json(value[i], i));
    } else {
      throw InputError("ladder." + key + ": unknown key; allowed: mode, rows");
    }
  }
  return ladder;
}

// A service's or a call's keys, nested objects flattened ("backoff.base_s").
template <typename Add>
void add_settings(KeySettings& settings, const std::string& where, const json& object,
                  const std::string& prefix, Add add) {
  for (const auto& [key, value] : object.items()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object())
      add_settings(settings, where, value, path, add);
    else
      add(settings, where, path, key_value_from_json(where + "." + path, value));
  }
}

std::string text_field(const std::string& where, const json& value) {
  if (!value.is_string()) throw InputError(where + ": " + type_name(value) + " must be a name");
  return value.get<std::string>();
}

Graph& services_from_json(Graph& g, const json& v) {
  if (!v.is_object())
    throw InputError("services: must be a mapping of service names to their keys");
  for (const auto& [name, body] : v.items()) {
    std::string where = "services." + name;
    GraphService service{name, {}, CallPattern::sequence};
    if (!body.is_object() && !body.is_null())
      throw InputError(where + ": must be a mapping of keys (server.* keys and pattern)");
    const json none = json::object();  // `name: {}` and `name:` alike
    for (const auto& [key, value] : (body.is_null() ? none : body).items()) {
      if (key == "pattern") {
        std::string p = value.is_string() ? value.get<std::string>() : "";
        if (p != "sequence" && p != "parallel")
          throw InputError(where + ".pattern: " + type_name(value) +
                           " is not allowed; choose sequence or parallel");
        service.pattern = p == "parallel" ? CallPattern::parallel : CallPattern::sequence;
      } else if (value.is_object()) {
        throw InputError(where + "." + key + ": a service's keys are the server.* keys, not " +
                         type_name(value));
      } else {
        add_service_key(service.server, where, key, key_value_from_json(where + "." + key, value));
      }
    }
    g.services.push_back(std::move(service));
  }
  return g;
}

GraphCall call_from_json(const json& v, size_t index) {
  std::string where = "calls[" + std::to_string(index) + "]";
  if (!v.is_object()) throw InputError(where + ": must be a mapping with from, to and keys");
  GraphCall call;
  for (const auto& [key, value] : v.items()) {
    std::string at = where + "." + key;
    if (key == "from") {
      call.from = text_field(at, value);
    } else if (key == "to") {
      call.to = text_field(at, value);
    } else if (key == "count") {
      if (!value.is_number() || value.get<double>() != std::floor(value.get<double>()) ||
          value.get<double>() < 1 || value.get<double>() > 100)
        throw InputError(at + ": " + type_name(value) + " must be a whole number from 1 to 100");
      call.count = value.get<int>();
    } else if (key == "optional" || key == "propagate_deadline") {
      if (!value.is_boolean())
        throw InputError(at + ": " + type_name(value) + " must be true or false");
      (key == "optional" ? call.optional : call.propagate_deadline) = value.get<bool>();
    } else if (value.is_object()) {
      add_settings(call.client, where, value, key, add_call_key);
    } else {
      add_call_key(call.client, where, key, key_value_from_json(at, value));
    }
  }
  if (call.from.empty() || call.to.empty()) throw InputError(where + ": needs from and to");
  return call;
}

Graph& calls_from_json(Graph& g, const json& v) {
  if (!v.is_array()) throw InputError("calls: must be a list of {from, to, ...}");
  for (size_t i = 0; i < v.size(); ++i) g.calls.push_back(call_from_json(v[i], i));
  return g;
}

json settings_json(const KeySettings& settings, const std::string& prefix) {
  json out = json::object();
  for (const auto& [path, value] : settings) {
    json* node = &out;
    std::string rest = path.substr(prefix.size());
    for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1))
      node = &(*node)[rest.substr(0, dot)];
    json v = key_value_to_json(value);
    if (key_or_throw(path).type == KeyType::integer) v = static_cast<long>(v.get<double>());
    (*node)[rest] = v;
  }
  return out;
}

// services and calls as the reader takes them; none for a scenario without.
void graph_to_json(const Graph& g, json& out) {
  if (g.empty()) return;
  json services = json::object();
  for (const GraphService& service : g.services) {
    json body = settings_json(service.server, "server.");
    if (service.pattern == CallPattern::parallel) body["pattern"] = "parallel";
    services[service.name] = body;
  }
  json calls = json::array();
  for (const GraphCall& call : g.calls) {
    json body = {{"from", call.from}, {"to", call.to}};
    if (call.count != 1) body["count"] = call.count;
    if (call.optional) body["optional"] = true;
    if (call.propagate_deadline) body["propagate_deadline"] = true;
    body.update(settings_json(call.client, "client."));
    calls.push_back(body);
  }
  out["services"] = services;
  out["calls"] = calls;
}

// A section of keys (client, client.backoff, ...): the start of some key's path.
bool is_section(const std::string& path) {
  const std::string prefix = path + ".";
  for (const KeySpec& k : scenario_keys())
    if (k.path.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// A key may be written flat (`client.retries: 1`) or nested (`client:
// {retries: 1}`); one written both ways is refused like any duplicate key (the
// reader's sorted keys would pick a winner silently).
void apply_once(std::set<std::string>& applied, const std::string& path) {
  if (!applied.insert(path).second)
    throw InputError(path + ": given twice (flat as '" + path +
                     "' and nested in its section); give it once");
}

void apply_object(Scenario& s, const json& object, const std::string& prefix,
                  std::vector<std::string>* given, std::set<std::string>& applied) {
  for (const auto& [key, value] : object.items()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (path == "ladder") {
      s.ladder = ladder_from_json(value);
    } else if (path == "services") {
      s.graph.services.clear();
      services_from_json(s.graph, value);
    } else if (path == "calls") {
      s.graph.calls.clear();
      calls_from_json(s.graph, value);
    } else if (value.is_object()) {
      // An unknown section is refused even when empty (`foo: {}` passed unread).
      if (!is_section(path)) key_or_throw(path);
      apply_object(s, value, path, given, applied);
    } else if (is_section(path)) {
      throw InputError(path + ": " + type_name(value) + " where a section of keys belongs; give " +
                       "a mapping, like " + path + ": {...} (`retrystorm keys` lists them)");
    } else {
      apply_once(applied, path);
      set_key_json(s, path, value);
      if (given) given->push_back(path);
    }
  }
}

std::vector<Preset> load_presets() {
  std::vector<Preset> out;
  for (const auto& [file, text] : preset_texts()) {
    Scenario s = scenario_from_text(text, file);
    out.push_back({s.name, s.description, s});
  }
  return out;
}

}  // namespace

KeyValue key_value_from_json(const std::string& path, const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  throw InputError(path + ": " + type_name(value) + " is not a value; expected " +
                   (find_key(path) ? "a number, true/false or a name" : "a known key"));
}

json key_value_to_json(const KeyValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const double* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

void set_key_json(Scenario& s, const std::string& path, const json& value) {
  if (!is_graph_path(path)) key_or_throw(path);  // unknown keys first: the clearer message
  set_key(s, path, key_value_from_json(path, value));
}

Scenario scenario_from_json(const json& object, Scenario base, std::vector<std::string>* given) {
  if (!object.is_object()) throw InputError("scenario: must be an object of keys");
  std::set<std::string> applied;
  apply_object(base, object, "", given, applied);
  return base;
}

json scenario_to_json(const Scenario& s) {
  json out = json::object();
  for (const KeySpec& k : scenario_keys()) {
    json* node = &out;
    std::string path = k.path;
    for (size_t dot; (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1))
      node = &(*node)[path.substr(0, dot)];
    json value = key_value_to_json(k.get(s));
    if (k.type == KeyType::integer) value = static_cast<long>(value.get<double>());
    (*node)[path] = value;
  }
  json rows = json::array();
  for (const LadderRow& r : s.ladder.rows) {
    json set = json::object();
    for (const auto& [path, v] : r.set) set[path] = key_value_to_json(v);
    rows.push_back({{"name", r.name}, {"change", r.change}, {"set", set}});
  }
  out["ladder"] = {{"mode", s.ladder.mode == LadderMode::single ? "single" : "cumulative"},
                   {"rows", rows}};
  graph_to_json(s.graph, out);
  return out;
}

namespace {

// Text that opens with '{': JSON, or (not in a .json file) YAML written as
// one flow mapping (`{horizon_s: 60}`); the JSON reader's message when it is
// neither.
json json_or_flow_yaml(const std::string& text, const std::string& source) {
  const bool json_file = source.size() >= 5 && source.compare(source.size() - 5, 5, ".json") == 0;
  try {
    return parse_json_text(text, source);
  } catch (const InputError& json_error) {
    if (json_file) throw;
    try {
      return parse_yaml_text(text, source);
    } catch (const InputError&) {
      throw json_error;
    }
  }
}

}  // namespace

Scenario scenario_from_text(const std::string& text, const std::string& source,
                            std::vector<std::string>* given) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError(source + ": the file is empty");
  json object =
      text[first] == '{' ? json_or_flow_yaml(text, source) : parse_yaml_text(text, source);
  if (!object.is_object())
    throw InputError(source + ": a scenario must be a mapping of keys, not " + type_name(object));
  try {
    return scenario_from_json(object, Scenario{}, given);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = load_presets();
  return all;
}

const Preset& preset_or_throw(const std::string& name) {
  std::string names;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw InputError("preset: '" + clip(name) + "' is not a preset; choose one of " + names);
}

json schema_json() {
  json keys = json::array();
  for (const KeySpec& k : scenario_keys()) {
    if (k.type == KeyType::text) continue;
    static const char* types[] = {"number", "integer", "boolean", "enum", "text"};
    json entry = {{"path", k.path},   {"type", types[static_cast<int>(k.type)]},
                  {"unit", k.unit},   {"group", k.group},
                  {"label", k.label}, {"help", k.help}};
    if (k.type == KeyType::number || k.type == KeyType::integer) {
      entry["min"] = k.min;
      entry["max"] = k.max;
      entry["min_exclusive"] = k.min_exclusive;
      entry["step"] = k.type == KeyType::integer ? 1.0 : 0.0;
      // Keys that validate() wants in whole steps: the page steps them by step_s.
      static const std::set<std::string> whole_steps = {
          "horizon_s", "client.timeout_s", "client.budget.window_s", "client.budget.ttl_s"};
      if (whole_steps.count(k.path)) entry["multiple_of"] = "step_s";
    }
    if (k.type == KeyType::choice) entry["values"] = k.choices;
    if (k.when_present)
      entry["when"] = {{"path", k.when_path}, {"present", true}};
    else if (!k.when_path.empty())
      entry["when"] = {{"path", k.when_path}, {"values", k.when_values}};
    keys.push_back(entry);
  }
  return {{"keys", keys}};
}

}  // namespace retrystorm
