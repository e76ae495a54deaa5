// The verdict's headline says what the run shows (issue 30, "wrong words"):
// a run that ends inside its incident, or too soon after it to tell, is not
// called unrecovered.
#include <gtest/gtest.h>

#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"
#include "engines/engine.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

std::string headline(std::map<std::string, std::string> sets) {
  const Scenario s = testing::preset("order-status", sets);
  const RunResult run = run_engine(s);
  return verdict(run, compute_metrics(run)).headline;
}

TEST(VerdictWords, AnIncidentPastTheEndIsStillOn) {
  const std::string h = headline({{"incident.start_s", "290"}, {"incident.duration_s", "270"}});
  EXPECT_EQ(h.find("Not recovered"), std::string::npos) << h;
  EXPECT_NE(h.find("Still in the incident when the run ends at 300 s: it would end at 560 s"),
            std::string::npos)
      << h;
}

// Metrics that saw no failure, a backlog not growing and yet no recovery
// (the recovery criterion's window did not fit in the run's last seconds).
TEST(VerdictWords, TooSoonAfterTheIncidentWithoutFailuresIsNotJudged) {
  const Scenario s =
      testing::preset("order-status", {{"incident.start_s", "290"}, {"incident.duration_s", "5"}});
  const RunResult run = run_engine(s);
  Metrics m = compute_metrics(run);
  m.recovered = false;
  m.goodput_recovery_s.reset();
  m.failure_recovery_s.reset();
  m.failed = 0;
  m.backlog_growing = false;
  const std::string h = verdict(run, m).headline;
  EXPECT_EQ(h,
            "Not judged by 300 s: the run ends 5 s after the incident, too soon to tell, and "
            "no request failed");
}

TEST(VerdictWords, AStuckRunIsStillNotRecovered) {
  EXPECT_EQ(headline({}).rfind("Not recovered by 300 s: the incident ended at 80 s", 0), 0u);
}

}  // namespace
}  // namespace retrystorm
