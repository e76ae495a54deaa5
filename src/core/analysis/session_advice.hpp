// What a session-model run says to change: the two fixes of the post-mortem
// when the run shows their disease, each tried as one change, and the
// occupancy that only looks like overload.
#pragma once

#include <vector>

#include "analysis/session_metrics.hpp"
#include "analysis/summary.hpp"

namespace retrystorm {

// A one-line reading of the run ("Slots full of sleeping sessions ..."), and
// the claim it makes as a short name ("batch_cut_by_deadline"), so Monte
// Carlo can count the seeds in which the same claim holds.
struct SessionVerdict {
  std::string claim;
  std::string headline;
};
SessionVerdict session_verdict(const sessions::SessionRun& run, const SessionMetrics& m);

// Ranked advice; each change is tried on the same seed, and its failed
// share (failed / launched in the focus window) reported.
std::vector<Advice> advise_sessions(const sessions::SessionRun& run, const SessionMetrics& m);

// The sum of the retry ladder and whether it is longer than the deadline.
// With deadline-aware backoff on, a longer ladder is cut by the rule (a
// session fails fast rather than sleep past its deadline): `longer` holds,
// `exceeds` (a session can sleep into its deadline) does not.
struct LadderCheck {
  std::vector<double> ladder_s;
  double total_s = 0;
  double deadline_s = 0;
  bool longer = false;
  bool deadline_aware = false;
  bool exceeds = false;
};
LadderCheck check_ladder(const Scenario& s);

// The first steps of the ladder (at their middles) that end before the
// deadline, counting the boot and every call answered at its quickest error
// answer (a 401 takes minutes): the retries a session whose calls keep
// failing really makes. Every step with no deadline.
int retries_that_fit(const Scenario& s);

}  // namespace retrystorm
