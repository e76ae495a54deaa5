// The session model against the post-mortem's own figures (issue 16): for
// every quantitative claim of the scheduler post-mortem (docs/sessions.md)
// that a preset can reproduce, the claim, the simulated value over seeds
// 1..N (mean, and min / median / max per seed, or the share of seeds a claim
// holds in), the tolerance and the verdict. docs/scheduler-calibration.md is
// this table from a 40-seed run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

enum class CalibrationVerdict {
  holds,     // within the tolerance
  off,       // outside it
  conflict,  // the post-mortem's own figures cannot all hold; the row says why
};
const char* calibration_verdict_name(CalibrationVerdict v);

struct CalibrationRow {
  std::string figure;     // a stable short name ("outage.launched_two_days")
  std::string preset;     // the preset it runs
  std::string claim;      // the post-mortem's words and number
  std::string simulated;  // what the model gives over the seeds
  std::string tolerance;  // how close counts as holding
  CalibrationVerdict verdict = CalibrationVerdict::off;
  std::string note;  // how the figure is measured; for a conflict, which reading wins
};

// Runs the scheduler presets (named through `preset`: core reads no files)
// over seeds 1..seeds on every core and measures each claim.
using PresetLookup = std::function<Scenario(const std::string& name)>;
std::vector<CalibrationRow> scheduler_calibration(const PresetLookup& preset, int seeds = 40);

}  // namespace retrystorm
