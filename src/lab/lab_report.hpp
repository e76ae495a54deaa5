// Views of a lab run: text (one chart holding the measured and predicted
// goodput, and a table measured | predicted | difference), JSON with
// `measured` and `predicted` blocks named as the `run` result, and CSV of
// both series.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lab/lab.hpp"

namespace retrystorm::lab {

std::string lab_text(const LabResult& r);
nlohmann::json lab_json(const LabResult& r);
std::string lab_csv(const LabResult& r);

}  // namespace retrystorm::lab
