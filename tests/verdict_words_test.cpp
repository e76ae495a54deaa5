// The verdict's headline says what the run shows (issue 30, "wrong words"):
// a run that ends inside its incident, or too soon after it to tell, is not
// called unrecovered.
#include <gtest/gtest.h>

#include "analysis/metrics.hpp"
#include "analysis/report.hpp"
#include "analysis/summary.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "formats/text_report.hpp"
#include "preset_scenario.hpp"
#include "random_server.hpp"

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

// The run's metrics, made to say it did not recover, with `failed` failures.
Metrics unrecovered(const RunResult& run, double failed) {
  Metrics m = compute_metrics(run);
  m.recovered = false;
  m.goodput_recovery_s.reset();
  m.failure_recovery_s.reset();
  m.failed = failed;
  return m;
}

// An incident of no length is none, even where it starts at the end: the
// headline does not say the run is still in it.
TEST(VerdictWords, AnIncidentOfNoLengthAtTheEndIsNone) {
  const Scenario s = testing::preset(
      "order-status",
      {{"incident.start_s", "300"}, {"incident.duration_s", "0"}, {"demand.rate_per_s", "2000"}});
  const RunResult run = run_engine(s);
  Metrics m = unrecovered(run, 1);
  const std::string h = verdict(run, m).headline;
  EXPECT_EQ(h.find("Still in the incident"), std::string::npos) << h;
  EXPECT_NE(h.find("no incident was scripted"), std::string::npos) << h;
}

// Metrics that saw no failure, a backlog not growing and yet no recovery
// (the recovery criterion's window did not fit in the run's last seconds).
TEST(VerdictWords, TooSoonAfterTheIncidentWithoutFailuresIsNotJudged) {
  const Scenario s =
      testing::preset("order-status", {{"incident.start_s", "290"}, {"incident.duration_s", "5"}});
  const RunResult run = run_engine(s);
  Metrics m = unrecovered(run, 0);
  m.backlog_growing = false;
  const std::string h = verdict(run, m).headline;
  EXPECT_EQ(h,
            "Not judged by 300 s: the run ends 5 s after the incident, too soon to tell, and "
            "no request failed");
}

// A ratio is printed as one: "1.00 attempts per request", never "1 attempts".
TEST(VerdictWords, AttemptsPerRequestIsARatio) {
  const Scenario s = testing::preset("brief-outage");
  const std::string text = run_text(make_report(s, {.advice = false, .tipping = false}));
  EXPECT_NE(text.find(".00 attempts per request"), std::string::npos) << text;
  EXPECT_EQ(text.find(" 1 attempts"), std::string::npos) << text;
}

// Each incident key changed: the report no longer tells the preset's
// incident ("A 20 s slowdown to 40% capacity ...") but the keys as they are.
TEST(VerdictWords, AChangedIncidentIsNotDescribedByThePresetsWords) {
  const Preset& preset = preset_or_throw("order-status");
  for (const auto& [path, value] :
       std::map<std::string, std::string>{{"incident.start_s", "40"},
                                          {"incident.duration_s", "25"},
                                          {"incident.capacity_factor", "0.5"},
                                          {"incident.demand_factor", "1.5"},
                                          {"demand.rate_per_s", "70"}}) {
    const Scenario s = testing::preset("order-status", {{path, value}});
    const std::string text = run_text(make_report(s, {.advice = false, .tipping = false}));
    EXPECT_EQ(text.find(preset.description), std::string::npos) << path << "\n" << text;
    EXPECT_NE(text.find(path + " = " + value), std::string::npos) << path << "\n" << text;
  }
  const std::string same =
      run_text(make_report(testing::preset("order-status"), {.advice = false, .tipping = false}));
  EXPECT_NE(same.find(preset.description), std::string::npos);
}

TEST(VerdictWords, AStuckRunIsStillNotRecovered) {
  EXPECT_EQ(headline({}).rfind("Not recovered by 300 s: the incident ended at 80 s", 0), 0u);
}

// No incident at all (a run that chance tips, as `risk` replays one): no
// sentence about an incident that never happened.
TEST(VerdictWords, WithoutAnIncidentNoneIsSaidToHaveEnded) {
  const std::string h = headline(testing::random_server_keys());
  EXPECT_EQ(h.find("the incident ended"), std::string::npos) << h;
  EXPECT_EQ(h.rfind("Not recovered by 1200 s: no incident was scripted", 0), 0u) << h;
}

}  // namespace
}  // namespace retrystorm
