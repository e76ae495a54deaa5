// What `risk` writes (docs/risk.md, docs/cli.md): the runs' incidents in
// words, and the exact chain's figures beside the estimates.
#include "formats/risk_report.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/risk.hpp"
#include "preset_scenario.hpp"
#include "quick_risk.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

Scenario small_server(std::map<std::string, std::string> sets) {
  auto keys = testing::random_server_keys();
  keys["server.queue_limit"] = "10";
  keys["horizon_s"] = "120";
  for (auto& [k, v] : sets) keys[k] = v;
  return testing::preset("order-status", keys);
}

TEST(RiskReport, TheChainsMixingIsWrittenAsMetaforCountsIt) {
  RiskOptions o = testing::quick_risk({0.8}, 4);
  o.exact = true;
  const RiskResult r = assess_risk(small_server({}), o);
  ASSERT_TRUE(r.levels[0].exact);
  const nlohmann::json answer = risk_json(r);
  const nlohmann::json& exact = answer["levels"][0]["exact"];
  EXPECT_NEAR(exact["mixing_metafor_s"].get<double>(),
              std::log2(100.0) * exact["relaxation_s"].get<double>(), 1e-9);
  EXPECT_NE(risk_text(r).find("(mixing, as metafor counts it: "), std::string::npos);
}

TEST(RiskReport, IncidentsAtRandomAreSaidWithTheirRateAndSize) {
  const RiskResult r = assess_risk(small_server({{"incident.random_per_h", "6"},
                                                 {"incident.duration_s", "20"},
                                                 {"incident.capacity_factor", "0.3"}}),
                                   testing::quick_risk({0.5}, 4));
  const std::string text = risk_text(r);
  EXPECT_NE(text.find("starting empty, with incidents at random: 6 per hour on average, each 20 s "
                      "at 0.3x capacity and 1x demand"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("incident.duration_s=0"), std::string::npos) << "a replay keeps them";
  EXPECT_EQ(text.find("stuck when the incident ended"), std::string::npos);
}

}  // namespace
}  // namespace retrystorm
