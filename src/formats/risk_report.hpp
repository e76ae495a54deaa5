// The views of `risk` (docs/risk.md): the text report and the JSON answer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/risk.hpp"

namespace retrystorm {

std::string risk_text(const RiskResult& r);
nlohmann::json risk_json(const RiskResult& r);
// A splitting walk as `run --walk` takes it: "0:SEED,EVENTS:SEED,...", each
// pair the events processed before the generator restarts and its seed.
std::string walk_text(const std::vector<Reseed>& path);
// InputError naming --walk, the part and what is allowed.
std::vector<Reseed> parse_walk(const std::string& text);
constexpr size_t kWalkReseeds = 1000;

// The stuck rule as risk and step-down state it.
nlohmann::json stuck_rule_json(const StuckRule& rule, const Scenario& s);
// The metastable region: one table of the chance of tipping within a day
// and one of the mean time to leave, knob values by loads, the operating
// point (the scenario's value at load 1) marked.
std::string risk_map_text(const RiskMap& map);
nlohmann::json risk_map_json(const RiskMap& map);

}  // namespace retrystorm
