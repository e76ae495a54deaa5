// What a session-model run says to change: the two fixes of the post-mortem
// when the run shows their disease, each tried as one change, and the
// occupancy that only looks like overload.
#pragma once

#include <vector>

#include "analysis/session_metrics.hpp"
#include "analysis/summary.hpp"

namespace retrystorm {

// A one-line reading of the run ("Slots full of sleeping sessions ...").
std::string session_verdict(const SessionMetrics& m);

// Ranked advice; each change is tried on the same seed, and its failed
// share (failed / launched in the focus window) reported.
std::vector<Advice> advise_sessions(const sessions::SessionRun& run, const SessionMetrics& m);

// The sum of the retry ladder and whether it is longer than the deadline.
struct LadderCheck {
  std::vector<double> ladder_s;
  double total_s = 0;
  double deadline_s = 0;
  bool exceeds = false;
};
LadderCheck check_ladder(const Scenario& s);

}  // namespace retrystorm
