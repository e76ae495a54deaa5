// Load profiles (model/profile.hpp; docs/scenario-keys.md, demand.profile
// and server.capacity_profile): the points read as written, a profile that
// draws the scripted incident gives the incident's run byte for byte on both
// engines, repeated faults repeat, and bad points are refused by name.
#include "model/profile.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "analysis/risk.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

TEST(Profile, PointsJoinedByLinesWithStepsAndPeriods) {
  const Profile p = parse_profile("0:1,100:2,100:4,200:4", 0, "demand.profile");
  EXPECT_EQ(p.at(0), 1);
  EXPECT_EQ(p.at(50), 1.5);  // a ramp
  EXPECT_EQ(p.at(100), 4);   // a step takes its later factor from its time
  EXPECT_EQ(p.at(99.5), 1.995);
  EXPECT_EQ(p.at(1000), 4);  // flat after the last point
  EXPECT_EQ(p.highest(), 4);
  const Profile daily = parse_profile("0:0.5,43200:1.5,86400:0.5", 86400, "demand.profile");
  EXPECT_EQ(daily.at(21600), 1);
  EXPECT_EQ(daily.at(86400 + 21600), 1);  // the next day
  EXPECT_EQ(parse_profile("", 0, "x").at(7), 1);
  EXPECT_EQ(parse_profile("", 0, "x").highest(), 1);
}

TEST(Profile, BadPointsAreRefusedByName) {
  for (const char* text : {"0:1,abc", "0:1,50", "-1:1", "0:-2", "0:1001", "100:1,50:2", "0:nan"})
    EXPECT_THROW(parse_profile(text, 0, "demand.profile"), InputError) << text;
  try {
    parse_profile("0:1,50:2,40:1", 0, "server.capacity_profile");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "server.capacity_profile: '40:1' comes before the point ahead of it: points go "
              "forward in time");
  }
  EXPECT_THROW(parse_profile("0:1,200:2", 100, "demand.profile"), InputError);
  Scenario s = testing::preset("order-status");
  s.demand.profile = "0:1,x";
  EXPECT_THROW(validate(s), InputError);
}

// order-status's incident (60 s to 80 s at 40% capacity) as a capacity
// profile instead, the scripted incident switched off.
Scenario as_profile(const std::string& preset, const std::string& engine) {
  Scenario with_incident = testing::preset(preset, {{"engine", engine}});
  const double start = with_incident.incident.start_s, end = with_incident.incident_end_s();
  const double f = with_incident.incident.capacity_factor;
  Scenario s = with_incident;
  s.incident.capacity_factor = 1;
  s.server.capacity_profile = number_text(start) + ":1," + number_text(start) + ":" +
                              number_text(f) + "," + number_text(end) + ":" + number_text(f) + "," +
                              number_text(end) + ":1";
  validate(s);
  return s;
}

void expect_same_series(const RunResult& a, const RunResult& b) {
  for (const SeriesField& f : kSeriesFields) {
    const auto& x = a.series.*f.member;
    const auto& y = b.series.*f.member;
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << f.name << " step " << i;
  }
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.succeeded, b.succeeded);
}

TEST(Profile, ACapacityProfileIsTheIncidentByteForByte) {
  for (const char* engine : {"fluid", "agent"})
    for (const char* preset : {"order-status", "partial-brownout"}) {
      SCOPED_TRACE(std::string(engine) + " " + preset);
      expect_same_series(run_engine(testing::preset(preset, {{"engine", engine}})),
                         run_engine(as_profile(preset, engine)));
    }
}

TEST(Profile, ADemandProfileScalesTheArrivals) {
  for (const char* engine : {"fluid", "agent"}) {
    Scenario s = testing::preset("order-status", {{"engine", engine},
                                                  {"incident.capacity_factor", "1"},
                                                  {"demand.profile", "0:1,100:1,100:0.5"}});
    const RunResult r = run_engine(s);
    double before = 0, after = 0;
    for (size_t i = 0; i < r.series.size(); ++i)
      (r.series.t_s[i] < 100 ? before : after) += r.series.first_attempts[i];
    EXPECT_NEAR(after / (s.horizon_s - 100), 0.5 * before / 100, 0.5) << engine;
  }
}

TEST(Profile, RepeatedFaultsRepeat) {
  // 10 s at half capacity every 100 s.
  Scenario s =
      testing::preset("order-status", {{"incident.capacity_factor", "1"},
                                       {"server.capacity_profile", "50:1,50:0.5,60:0.5,60:1"},
                                       {"server.capacity_profile_period_s", "100"}});
  const RunResult r = run_engine(s);
  const double full = s.server.capacity_per_s * s.step_s;
  for (size_t i = 0; i < r.series.size(); ++i) {
    const double in_period = std::fmod(r.series.t_s[i], 100);
    EXPECT_EQ(r.series.capacity[i], in_period >= 50 && in_period < 60 ? full / 2 : full) << i;
  }
}

// examples/step-down.yaml: stuck after a capacity drop at 80% load, the
// demand lowered by a tenth every 150 s. Read with risk's stuck rule, every
// seed comes back only once the demand is down to 40% or less: far below
// the 90% at which chance alone tips it (docs/risk.md, "The hysteresis
// loop").
TEST(Profile, TheStepDownRecoversFarBelowWhereItTipped) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/examples/step-down.yaml");
  std::stringstream text;
  text << in.rdbuf();
  for (int seed = 1; seed <= 5; ++seed) {
    Scenario s = scenario_from_text(text.str(), "step-down.yaml");
    s.seed = seed;
    validate(s);
    const RunResult run = run_engine(s);
    const Passage p = read_passage(run, stuck_rule(s), s.incident_end_s());
    ASSERT_TRUE(p.stuck_at_from) << seed;
    ASSERT_TRUE(p.leave_s) << seed;
    const double load = s.demand_profile().at(s.incident_end_s() + *p.leave_s - 0.5);
    EXPECT_LE(load, 0.4) << seed;
    EXPECT_GE(load, 0.1) << seed;
  }
}

TEST(Profile, NotWithServicesYet) {
  EXPECT_THROW(testing::preset("three-tier-chain", {{"demand.profile", "0:1,10:2"}}), InputError);
}

}  // namespace
}  // namespace retrystorm
