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

#include "engines/sessions/clock.hpp"
#include "engines/sessions/session_engine.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"

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
  // The credential outage's 0.28 and peak 3, read over the morning that ends
  // with the recovery hour (the preset's focus window), both hold; over the
  // outage alone the peak cannot pass one failing session.
  EXPECT_EQ(row("credential.mean_in_flight").verdict, CalibrationVerdict::holds);
  EXPECT_EQ(row("credential.peak").verdict, CalibrationVerdict::holds);
  EXPECT_EQ(row("credential.peak_outage").verdict, CalibrationVerdict::conflict);
  EXPECT_LE(leading(row("credential.peak_outage").simulated), 2.0);
  // Day two: 73 failed sessions write at most 7 429 lines each, fewer than
  // the post's 590; the model keeps the 590, so its day two fails more.
  EXPECT_LT(73 * 7, 590);
  EXPECT_EQ(row("outage.day2.failed").verdict, CalibrationVerdict::conflict);
  EXPECT_GT(leading(row("outage.day2.failed").simulated), 590 / 7.5);
  EXPECT_EQ(row("outage.day2.lines_429").verdict, CalibrationVerdict::holds);
  EXPECT_EQ(row("outage.day2.pinned_share").verdict, CalibrationVerdict::holds);
  // The busiest hour, read per seed as the post measured one day, holds.
  EXPECT_EQ(row("normal.rho_busiest_hour").verdict, CalibrationVerdict::holds);
  // The 22:15 notifications: a crash alone caps them near 92 %, and the
  // chain cap and crashes break the backlog's 35-minute cycle that puts
  // the post's 22:15 session after the recovery; without both, every seed.
  const CalibrationRow& notifications = row("recovery.notifications_first_session");
  EXPECT_EQ(notifications.verdict, CalibrationVerdict::conflict);
  EXPECT_LT(leading(notifications.simulated), 0.9 * kSeeds);
  EXPECT_NE(notifications.note.find("no wake-up"), std::string::npos);
  EXPECT_NE(notifications.note.find("with neither in 40/40"), std::string::npos);
  EXPECT_EQ(row("outage.launched").verdict, CalibrationVerdict::holds);
}

// Why the chains stay capped: picking every given-back backlog up at the
// next tick (the 22:15 notifications' 'no wake-up' seeds) moves the two
// days' 210 launches past their 10 %.
TEST(SessionCalibration, UncappedChainsLaunchTooMany) {
  Scenario s = preset_or_throw("scheduler-429-outage").scenario;
  s.sessions.max_deliveries = 100;  // the key's maximum
  double launched = 0;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    s.seed = seed;
    for (const sessions::SessionRow& r : sessions::run_sessions(s).sessions)
      launched += r.start_s >= sessions::kDay && r.start_s < 3 * sessions::kDay;
  }
  EXPECT_GT(launched / kSeeds, 1.1 * 210);
}

TEST(SessionCalibration, EveryFigureIsNamedOnce) {
  std::set<std::string> seen;
  for (const CalibrationRow& r : rows()) EXPECT_TRUE(seen.insert(r.figure).second) << r.figure;
  for (const std::string& f : kKnownOff) EXPECT_TRUE(seen.count(f)) << f;
}

// The item costs the calibration settled on are the keys' defaults, so every
// scheduler preset and a replay scenario (analyze --emit-scenario, which
// sets no item costs) run with the same ones.
TEST(SessionCalibration, SchedulerPresetsRunOnTheKeysDefaultItemCosts) {
  const Scenario defaults;
  EXPECT_EQ(defaults.items.ping_work_median_s, 55);
  EXPECT_EQ(defaults.items.ping_work_sigma, 0.9);
  EXPECT_EQ(defaults.sessions.housekeeping_median_s, 420);
  EXPECT_EQ(defaults.sessions.housekeeping_sigma, 0.4);
  for (const char* name :
       {"scheduler-normal-day", "scheduler-429-outage", "scheduler-429-outage-deadline-aware",
        "scheduler-credential-outage", "scheduler-recovery-burst"}) {
    SCOPED_TRACE(name);
    const Scenario& s = preset_or_throw(name).scenario;
    EXPECT_EQ(s.items.ping_work_median_s, defaults.items.ping_work_median_s);
    EXPECT_EQ(s.items.ping_work_sigma, defaults.items.ping_work_sigma);
    EXPECT_EQ(s.sessions.housekeeping_median_s, defaults.sessions.housekeeping_median_s);
    EXPECT_EQ(s.sessions.housekeeping_sigma, defaults.sessions.housekeeping_sigma);
  }
}

// Issue 16: the credential preset's focus window covers the hour the
// credentials came back in (its headline peak and 4 for 4 are in it).
TEST(SessionCalibration, CredentialFocusCoversTheRecoveryHour) {
  const Scenario& s = preset_or_throw("scheduler-credential-outage").scenario;
  EXPECT_LE(s.sessions.focus_from_s, sessions::kDay + 6 * sessions::kHour);
  EXPECT_GE(s.sessions.focus_to_s, sessions::kDay + 9 * sessions::kHour);
}

TEST(SessionCalibration, DocsPageIsTheProgramsOutput) {
  EXPECT_EQ(read_source("docs/scheduler-calibration.md"), calibration_page(rows(), kSeeds))
      << "docs/scheduler-calibration.md is stale: regenerate it with "
         "`retrystorm calibrate > docs/scheduler-calibration.md`";
}

}  // namespace
}  // namespace retrystorm
