// The cost estimates that refuse work (analysis/cost.hpp, docs/limits.md)
// held to measured runs: a request is refused for what it would cost, so an
// estimate far above the measured CPU time refuses work that is cheap, and
// one far below lets through work that is not. Times are this thread's CPU
// time (CLOCK_THREAD_CPUTIME_ID), the least of three tries, so other jobs on
// the machine move them little; a machine several times slower than the
// build machine would fail the lower bound, and says so.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "analysis/cost.hpp"
#include "analysis/sweep.hpp"
#include "engines/engine.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double least_cpu_s(const std::function<void()>& work) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    double start = thread_cpu_s();
    work();
    best = std::min(best, thread_cpu_s() - start);
  }
  return best;
}

// Within [0.25, 5] times the measured: conservative, never by an order of
// magnitude. The low end allows for a loaded machine: beside the rest of the
// suite (ctest -j 2), two-layer-stack's CPU time ran 3.5 times its quiet one.
void expect_calibrated(const char* what, double estimate_s, double measured_s) {
  double ratio = estimate_s / measured_s;
  std::printf("%s: estimated %.3g s, measured %.3g s of CPU (%.2fx)\n", what, estimate_s,
              measured_s, ratio);
  EXPECT_GE(ratio, 0.25) << what << ": estimated " << estimate_s << " s, measured " << measured_s
                         << " s of CPU; the estimate is too low, or this machine is much slower "
                            "than the one the constants were measured on";
  EXPECT_LE(ratio, 5.0) << what << ": estimated " << estimate_s << " s, measured " << measured_s
                        << " s of CPU";
}

// The grid of bench/dask_bench.py, thinned to 500 points: an agent run of
// 180 s at 16 to 24 requests a second against 25 of capacity, crossing from
// recovering to stuck (refused as 260 s of CPU for 10,000 points that took 10).
TEST(CostCalibration, AnAgentSweepAcrossTheTippingPoint) {
  Scenario s = testing::preset("order-status", {{"engine", "agent"},
                                                {"horizon_s", "180"},
                                                {"server.capacity_per_s", "25"},
                                                {"incident.start_s", "20"}});
  std::vector<SweepAxis> axes = {{"client.retries", 0, 4, 1},
                                 {"incident.duration_s", 1, 40, 4},
                                 {"client.timeout_s", 1, 10, 9},
                                 {"demand.rate_per_s", 16, 24, 2}};
  SweepOptions options;
  options.threads = 1;  // the calling thread runs every point
  double measured = least_cpu_s([&] { run_sweep(s, axes, options); });
  expect_calibrated("500-point agent sweep", sweep_cost(s, axes, options).seconds, measured);
}

TEST(CostCalibration, AnAgentRunStuckInItsBacklog) {
  Scenario s = testing::preset("partial-brownout", {{"engine", "agent"}});
  double measured = least_cpu_s([&] { run_engine(s); });
  expect_calibrated("partial-brownout, agent", engine_run_cost(s).seconds, measured);
}

// A stack of retrying layers: an outer retry starts a new inner ladder while
// the one it gave up on goes on, so the layers' ladders multiply. Priced as
// one ladder after another, four layers were estimated at 50 attempts a
// request and took 100 times that (six layers: 100 s and 5 GB, let through).
TEST(CostCalibration, AnAgentRunOfFourLayers) {
  Scenario s = testing::preset("primary-failover",
                               {{"engine", "agent"}, {"client.layers", "4"}, {"horizon_s", "60"}});
  double measured = least_cpu_s([&] { run_engine(s); });
  expect_calibrated("primary-failover, agent, 4 layers", engine_run_cost(s).seconds, measured);
}

TEST(CostCalibration, FluidRuns) {
  for (const char* name : {"primary-failover", "order-status", "two-layer-stack"}) {
    Scenario s = testing::preset(name);
    double measured = least_cpu_s([&] {
      for (int i = 0; i < 20; ++i) run_engine(s);
    });
    expect_calibrated(name, 20 * engine_run_cost(s).seconds, measured);
  }
}

}  // namespace
}  // namespace retrystorm
