// The session model against the post-mortem's figures (issue 16): for every
// quantitative claim of the scheduler outage's post-mortem, the claim, the simulated value over 40
// seeds, the tolerance and the verdict, printed; docs/scheduler-calibration.md is that table.
#include "analysis/session_calibration.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/session_report.hpp"

namespace retrystorm {
namespace {

constexpr int kSeeds = 40;

// One 40-seed run of every scheduler preset for the whole suite.
const std::vector<CalibrationRow>& rows() {
  static const std::vector<CalibrationRow> r = scheduler_calibration_of_presets(kSeeds);
  return r;
}

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Figures the model does not reach yet, each explained on the docs page.
// A figure leaving this list (it now holds) fails the test: take it out.
const std::set<std::string> kKnownOff = {
    "outage.quiet.hours_1_to_4",
    "outage.quiet.peak",
    "outage.day2.failed",
    "outage.day2.pinned",
    "recovery.notifications_first_session",
    "outage.busy.rho",
    "outage.busy.launches_per_hour",
};

const CalibrationRow& row(const std::string& figure) {
  for (const CalibrationRow& r : rows())
    if (r.figure == figure) return r;
  throw std::runtime_error("no calibration row " + figure);
}

// The leading number of a simulated value: the mean, or the seeds a yes/no claim holds in.
double leading(const std::string& simulated) {
  return std::stod(simulated);
}

TEST(SessionCalibration, EveryClaimAgainstTheModel) {
  for (const CalibrationRow& r : rows()) {
    std::cout << "  " << r.figure << "\n    claim:     " << r.claim
              << "\n    simulated: " << r.simulated << "\n    tolerance: " << r.tolerance
              << "\n    verdict:   " << calibration_verdict_name(r.verdict) << "\n";
    SCOPED_TRACE(r.figure + ": " + r.simulated + " against " + r.claim);
    if (r.verdict == CalibrationVerdict::conflict) {
      EXPECT_FALSE(r.note.empty());  // the page says which reading the model takes
      continue;
    }
    bool known_off = kKnownOff.count(r.figure) > 0;
    EXPECT_EQ(r.verdict == CalibrationVerdict::off, known_off);
  }
}

// Issue 16's targets that conflict with a published figure stay conflicts,
// with the numbers that make them so.
TEST(SessionCalibration, IssueTargetsThatConflictArePinned) {
  // 08:00 goes 4 for 4 in at most (83/90)^4 of days: below 90 % of seeds.
  EXPECT_EQ(row("credential.0800_all_done").verdict, CalibrationVerdict::conflict);
  EXPECT_LT(leading(row("credential.0800_all_done").simulated), 0.9 * kSeeds);
  // ... but nothing other than a crash keeps a session of that hour from completing.
  EXPECT_EQ(row("credential.0800_none_cut").verdict, CalibrationVerdict::holds);
  // Over 06:00-09:00 the average in flight leaves the published 0.3 +- 0.1
  // (tests/sessions_test.cpp); over the focus window, the outage, it holds.
  EXPECT_EQ(row("credential.mean_in_flight_0600_0900").verdict, CalibrationVerdict::conflict);
  EXPECT_GT(leading(row("credential.mean_in_flight_0600_0900").simulated), 0.4);
  EXPECT_EQ(row("credential.mean_in_flight").verdict, CalibrationVerdict::holds);
  // The busiest hour, read per seed as the post measured one day, holds.
  EXPECT_EQ(row("normal.rho_busiest_hour").verdict, CalibrationVerdict::holds);
}

TEST(SessionCalibration, EveryFigureIsNamedOnce) {
  std::set<std::string> seen;
  for (const CalibrationRow& r : rows()) EXPECT_TRUE(seen.insert(r.figure).second) << r.figure;
  for (const std::string& f : kKnownOff) EXPECT_TRUE(seen.count(f)) << f;
}

TEST(SessionCalibration, DocsPageIsTheProgramsOutput) {
  EXPECT_EQ(read_source("docs/scheduler-calibration.md"), calibration_page(rows(), kSeeds))
      << "docs/scheduler-calibration.md is stale: regenerate it with "
         "`retrystorm calibrate > docs/scheduler-calibration.md`";
}

}  // namespace
}  // namespace retrystorm
