// The Monte Carlo summaries (engines/montecarlo.hpp): a figure that cannot
// exceed 1 (a flag counted as 1 or 0, a share of a whole) has its interval
// stopped at 1 as one that cannot be negative has it stopped at 0, and the
// mean of equal values is that value, with an interval of zero width.
#include "engines/montecarlo.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "analysis/run_montecarlo.hpp"
#include "analysis/session_metrics.hpp"
#include "analysis/sweep.hpp"
#include "preset_scenario.hpp"
#include "random_server.hpp"

namespace retrystorm {
namespace {

constexpr double kNoCeiling = std::numeric_limits<double>::infinity();

// One recovered run of three: Student's t gave 0.33, from 0 to 1.77.
TEST(MonteCarloSummary, AFlagsIntervalStopsAt1) {
  const MetricSummary open = summarize({0, 0, 1}, 0);
  EXPECT_GT(open.high, 1.7);  // what the ceiling is for
  const MetricSummary flag = summarize({0, 0, 1}, 0, 1);
  EXPECT_DOUBLE_EQ(flag.mean, 1.0 / 3);
  EXPECT_EQ(flag.low, 0);
  EXPECT_EQ(flag.high, 1);
  // An interval inside [0, 1] is left as it was.
  const MetricSummary narrow = summarize({0.4, 0.5, 0.6}, 0, 1);
  EXPECT_EQ(narrow.high, summarize({0.4, 0.5, 0.6}, 0).high);
  EXPECT_LT(narrow.high, 1);
}

// Three replications of one value: the sum's rounding put the mean an ulp
// off the value, outside [min, max], with an interval of non-zero width.
TEST(MonteCarloSummary, TheMeanOfEqualValuesIsThatValue) {
  const double v = 0.1;
  ASSERT_NE((v + v + v) / 3, v);  // the rounding this is about
  const MetricSummary m = summarize({v, v, v}, 0);
  EXPECT_EQ(m.mean, v);
  EXPECT_EQ(m.min, v);
  EXPECT_EQ(m.max, v);
  EXPECT_EQ(m.low, v);
  EXPECT_EQ(m.high, v);
  for (double x : {0.7, 1.1, 2.3, 1e-9, 123456.789}) {
    const MetricSummary same = summarize(std::vector<double>(7, x));
    EXPECT_EQ(same.mean, x) << x;
    EXPECT_EQ(same.high - same.low, 0) << x;
  }
  // Values that differ keep the mean of their sum.
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4}).mean, 2.5);
}

// Every flag of Metrics and every share (a _fraction, a _share) is at most
// 1; counts, durations and ratios that can pass 1 have no ceiling.
TEST(MonteCarloSummary, FlagsAndSharesHaveTheCeiling) {
  for (const MetricField& field : metric_fields()) {
    if (field.kind != FigureKind::flag) continue;
    EXPECT_EQ(ceiling_of(field.name), 1) << field.name;
    if (!field.montecarlo_name.empty()) {
      EXPECT_EQ(ceiling_of(field.montecarlo_name), 1) << field.montecarlo_name;
    }
  }
  for (const char* share : {"failed_fraction", "wasted_fraction", "pinned_share", "asleep_share"})
    EXPECT_EQ(ceiling_of(share), 1) << share;
  for (const char* open : {"failed", "user_requests", "peak_amplification", "goodput_recovery_s",
                           "last_window_attempts_per_request", "lines_429_per_session",
                           "launches_429_correlation", "peak_step_t_s"})
    EXPECT_EQ(ceiling_of(open), kNoCeiling) << open;
  // The session model's shares keep the names the ceiling knows them by.
  int shares = 0;
  for (const auto& [name, value] : session_metric_values(SessionMetrics{}))
    shares += name == "pinned_share" || name == "asleep_share";
  EXPECT_EQ(shares, 2);
}

// Through replicate, as `run --runs N` summarises: the flag and the share
// stop at 1, the count does not.
TEST(MonteCarloSummary, ReplicationsOfAFlagStopAt1) {
  const Scenario s = testing::preset("order-status");
  const Replicated r = replicate(s, 3, 1, [](size_t i, const Scenario&) {
    const double one = i == 2 ? 1 : 0;
    return Replication{{{"recovered", one}, {"failed_fraction", one}, {"failed", one}}, {}};
  });
  ASSERT_EQ(r.metrics.size(), 3u);
  EXPECT_EQ(r.metrics[0].second.high, 1);
  EXPECT_EQ(r.metrics[1].second.high, 1);
  EXPECT_GT(r.metrics[2].second.high, 1.7);
}

// A sweep's rows with replications: the random server with an incident of
// 80% capacity recovered in one run of three, an interval up to 1.77; every
// flag and share of every row now stops at 1.
TEST(MonteCarloSummary, ASweepsFlagsAndSharesStopAt1) {
  std::map<std::string, std::string> keys = testing::random_server_keys();
  keys.erase("incident.duration_s");  // order-status's incident
  keys["demand.rate_per_s"] = "8";
  keys["horizon_s"] = "300";
  const Scenario s = testing::preset("order-status", keys);
  SweepOptions options;
  options.runs = 3;
  options.seed = 1;
  const std::vector<SweepRow> rows =
      run_sweep(s, {{"incident.capacity_factor", 0.3, 0.9, 0.1}}, options);
  bool mixed = false;
  for (const SweepRow& row : rows)
    for (const auto& [name, summary] : row.montecarlo) {
      if (ceiling_of(name) != 1) continue;
      EXPECT_LE(summary.high, 1) << name << " at " << row.values[0];
      EXPECT_GE(summary.low, 0) << name << " at " << row.values[0];
      mixed |= name == "recovered" && summary.mean > 0 && summary.mean < 1;
    }
  EXPECT_TRUE(mixed) << "no row recovered in some runs only: the ceiling was not tried";
}

}  // namespace
}  // namespace retrystorm
