// The table of scenario keys: one entry per dotted path of docs/scenario-keys.md, with
// its type, range, unit and help. Reading files, --set, sweeps, the HTTP API
// and the page's controls all go through this one table.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.hpp"
#include "text/number.hpp"

namespace retrystorm {

// Bad input: the message names the key, the value and what is allowed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class KeyType { number, integer, boolean, choice, text };

struct KeySpec {
  std::string path;  // "client.backoff.base_s"
  KeyType type;
  double min = 0;  // numbers and integers: inclusive range
  double max = 0;
  bool min_exclusive = false;
  std::vector<std::string> choices;              // KeyType::choice
  std::string unit;                              // "s", "/s", "" ...
  std::string group;                             // "run", "demand_server", "incident", "client"
  std::string label;                             // short label for controls
  std::string help;                              // one line
  std::function<KeyValue(const Scenario&)> get;  // (members after get/put are optional)
  std::function<void(Scenario&, const KeyValue&)> put;
  // The key matters only when the key at when_path has one of when_values
  // (the page hides it otherwise); empty: always.
  std::string when_path;
  std::vector<std::string> when_values;
  // Instead of values: the key matters only when the part of the scenario at
  // when_path is not empty ("services": a graph of services).
  bool when_present = false;
  // The condition in words for messages ("server.hosts is above 1"); empty:
  // "<when_path> is <when_values>".
  std::string when_text = {};
};

const std::vector<KeySpec>& scenario_keys();
const KeySpec* find_key(const std::string& path);
const KeySpec& key_or_throw(const std::string& path);

// Sets one key, checking type and range. Throws InputError.
void set_key(Scenario& s, const std::string& path, const KeyValue& value);
// Parses VALUE as the key's type ("true", "12.5", "full") and sets it.
void set_key_text(Scenario& s, const std::string& path, const std::string& text);
// Reads a numeric key (integer, number); throws for other types.
double get_number(const Scenario& s, const std::string& path);

// The keys among `given` that this scenario does not use (a key of another
// engine, a budget number of another budget kind) and that differ from their
// default: one warning line each, naming the key and what it applies to.
std::vector<std::string> ignored_keys(const Scenario& s, const std::vector<std::string>& given);

// Checks the rules that tie keys together (step divides the horizon, timeout
// is a whole number of steps, run size within limits). Throws InputError.
// Defined in engines/engine.cpp: the model's rules below, then the checks of
// the scenario's engine from the engine table (the model knows no engine).
void validate(const Scenario& s, const RunLimits& limits = {});
// The model's rules for every engine: the horizon is whole steps, within limits.
void validate_horizon(const Scenario& s, const RunLimits& limits);
// The model's rules for the per-step engines (fluid, agent): timeouts and
// windows in whole steps, attempts per request within limits.
void validate_step_keys(const Scenario& s, const RunLimits& limits);

std::string to_string(const KeyValue& v);

// A comma-separated list of numbers ("3, 1.5"). At the first item that is not
// a finite number, returns false with that item in `bad`.
bool parse_number_list(const std::string& text, std::vector<double>& out, std::string& bad);

}  // namespace retrystorm
