// Every preset validates and shows what its description promises.
#include <gtest/gtest.h>

#include <set>

#include "analysis/metrics.hpp"
#include "analysis/tipping.hpp"
#include "engines/fluid.hpp"
#include "formats/scenario_io.hpp"

namespace retrystorm {
namespace {

Metrics run_preset(const std::string& name) {
  Scenario s = preset_or_throw(name).scenario;
  validate(s);
  return compute_metrics(run_fluid(s));
}

TEST(Presets, AllValidateWithDescriptionsAndUniqueNames) {
  std::set<std::string> names;
  ASSERT_GE(presets().size(), 5u);
  for (const Preset& p : presets()) {
    EXPECT_NO_THROW(validate(p.scenario)) << p.name;
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
  }
  EXPECT_EQ(presets().front().name, "order-status");  // the default scenario
}

TEST(Presets, BriefOutageShorterThanTheTippingPointRecovers) {
  Scenario s = preset_or_throw("brief-outage").scenario;
  Metrics m = run_preset("brief-outage");
  EXPECT_TRUE(m.recovered);
  EXPECT_EQ(m.failed, 0);
  auto t = tipping_point(s);
  ASSERT_TRUE(t.exact_s.has_value());
  EXPECT_LT(s.incident.duration_s, *t.exact_s);
}

TEST(Presets, PartialBrownoutStaysStuck) {
  Metrics m = run_preset("partial-brownout");
  EXPECT_FALSE(m.recovered);
  EXPECT_TRUE(m.backlog_growing);
}

TEST(Presets, LoadSurgeTipsWithoutAnyCapacityLoss) {
  Scenario s = preset_or_throw("load-surge").scenario;
  EXPECT_EQ(s.incident.capacity_factor, 1);
  EXPECT_GT(s.incident.demand_factor, 1);
  EXPECT_FALSE(run_preset("load-surge").recovered);
}

TEST(Presets, TwoLayerStackCompoundsToNineAttemptsAndTipsAt30PercentLoad) {
  Metrics m = run_preset("two-layer-stack");
  EXPECT_EQ(m.bound.max_amplification, 9);
  EXPECT_DOUBLE_EQ(m.bound.load, 0.3);
  EXPECT_FALSE(m.recovered);
}

}  // namespace
}  // namespace retrystorm
