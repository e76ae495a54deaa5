// Views of a session-model run (engine: sessions): the JSON answer of `run`
// and /api/run, the terminal report, the per-bucket CSV. The report is
// assembled in analysis/session_report.hpp; its logs (sessions.csv,
// events.jsonl) are written by logs/session_logs.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/session_calibration.hpp"
#include "analysis/session_report.hpp"

namespace retrystorm {

nlohmann::json session_json(const SessionReport& r);
std::string session_text(const SessionReport& r);
std::string session_series_csv(const sessions::SessionRun& run);

// docs/scheduler-calibration.md: the post-mortem's figures against the
// session model over `seeds` seeds (`retrystorm calibrate` prints it).
std::string calibration_page(const std::vector<CalibrationRow>& rows, int seeds);
std::vector<CalibrationRow> scheduler_calibration_of_presets(int seeds = 40);

}  // namespace retrystorm
