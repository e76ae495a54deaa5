// The views of `step-down` (docs/risk.md, "The hysteresis loop"): the text
// report and the JSON answer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/step_down.hpp"

namespace retrystorm {

std::string step_down_text(const StepDown& d);
nlohmann::json step_down_json(const StepDown& d);

}  // namespace retrystorm
