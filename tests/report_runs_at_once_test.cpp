// A report runs its tipping probes and its defenses' runs several at once
// (analysis/tipping.cpp, analysis/summary.cpp, docs/agent-engine.md,
// "Performance"): the answers must be those of one run at a time, whatever
// the number of cores, also where recovery is not monotone in the incident's
// length (a seeded agent run can recover after a longer incident and not
// after a shorter one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/report.hpp"
#include "analysis/summary.hpp"
#include "analysis/tipping.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

double tidy(double s) {
  return std::round(s * 1e9) / 1e9;
}

// tipping_point as it was written before its runs went side by side: one
// grid point, then one bisection probe, at a time.
TippingResult tipping_one_at_a_time(const Scenario& s) {
  TippingResult r;
  r.grid_s = default_grid_s(s);
  long points = static_cast<long>(std::floor((s.horizon_s - s.incident.start_s) / r.grid_s + 1e-9));
  double last_recovering = 0;
  for (long i = 1; i <= points; ++i) {
    double d = tidy(i * r.grid_s);
    if (!recovers_with_duration(s, d)) {
      r.on_grid_s = d;
      break;
    }
    last_recovering = d;
  }
  if (!r.on_grid_s) return r;
  long lo = std::lround(last_recovering / s.step_s), hi = std::lround(*r.on_grid_s / s.step_s);
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    (recovers_with_duration(s, tidy(mid * s.step_s)) ? lo : hi) = mid;
  }
  // The cases start on a step boundary: the steps found last hi whole steps,
  // never longer than the grid's answer (analysis/tipping.cpp).
  r.exact_s = std::min(*r.on_grid_s, tidy(hi * s.step_s));
  return r;
}

Scenario preset_with(const std::string& name, const std::vector<std::string>& sets) {
  Scenario s = preset_or_throw(name).scenario;
  for (const std::string& set : sets) {
    size_t eq = set.find('=');
    set_key_text(s, set.substr(0, eq), set.substr(eq + 1));
  }
  validate(s);
  return s;
}

// A grid with no incident length that ends before the horizon claims
// nothing: the tipping point refuses it, and a run's report leaves it out.
// An incident that runs to the horizon leaves no step to judge recovery in.
TEST(TippingGrid, AGridWithNoLengthToTryClaimsNothing) {
  Scenario s = preset_or_throw("order-status").scenario;
  const double room = s.horizon_s - s.incident.start_s;
  EXPECT_EQ(tipping_grid_points(s, room - s.step_s), 1);
  EXPECT_EQ(tipping_grid_points(s, room), 0);
  EXPECT_EQ(tipping_grid_points(s, room + 1), 0);
  EXPECT_EQ(tipping_grid_points(s, room / 24), 23) << "the 24th ends at the horizon";
  try {
    tipping_point(s, room);
    FAIL() << "a grid longer than the run was tried";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no incident length would be tried"), std::string::npos)
        << e.what();
  }
  s.tipping.grid_s = 0;  // the default grid: ten steps
  s.incident.start_s = s.horizon_s - 5 * s.step_s;
  s.incident.duration_s = 3 * s.step_s;
  ASSERT_EQ(tipping_grid_points(s), 0);
  RunReport r = make_report(s, ReportOptions{});
  EXPECT_FALSE(r.tipping.has_value());
}

// The bisection counts a grid point as the steps its incident covers: on a
// 2.8 s grid with 1 s steps, 11.2 s covers 12 steps, and 11 s (which
// recovers) is never the answer. Every length in (11 s, 12 s] covers those
// 12 steps; the exact answer is never longer than the grid's.
TEST(TippingGrid, AGridOffTheStepsBisectsTheStepsItCovers) {
  Scenario s = preset_or_throw("order-status").scenario;
  const TippingResult t = tipping_point(s, 2.8);
  ASSERT_TRUE(t.exact_s && t.on_grid_s);
  EXPECT_DOUBLE_EQ(*t.on_grid_s, 11.2);
  EXPECT_DOUBLE_EQ(*t.exact_s, 11.2);
  EXPECT_FALSE(recovers_with_duration(s, 11.2));
  EXPECT_TRUE(recovers_with_duration(s, 11));
  EXPECT_FALSE(recovers_with_duration(s, 12));
}

// An incident that takes 10% of the capacity from a server at 89% load
// harms nobody: no length tips it, whatever the criterion (the goodput
// criterion called the length that runs to the horizon a tipping point).
TEST(TippingGrid, AHarmlessIncidentHasNoTippingPoint) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.incident.capacity_factor = 0.9;
  for (auto criterion : {RecoveryCriterion::goodput, RecoveryCriterion::failures}) {
    s.recovery.criterion = criterion;
    const TippingResult t = tipping_point(s, 0);
    EXPECT_FALSE(t.on_grid_s);
    EXPECT_FALSE(t.exact_s);
  }
}

// An incident that starts off the steps and ends inside the last step leaves
// no whole step to judge in: that length is not tried (it read as a tipping
// point of a harmless incident, and a start half a step before the end as a
// tipping point of 0 s).
TEST(TippingGrid, AnIncidentLeavesAWholeStepToJudgeIn) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.incident.capacity_factor = 1;  // harmless
  s.incident.start_s = s.horizon_s - 9.5 * s.step_s;
  EXPECT_DOUBLE_EQ(tipping_room_s(s), 8.5 * s.step_s);
  EXPECT_EQ(tipping_grid_points(s, s.step_s), 8);
  const TippingResult t = tipping_point(s, s.step_s);
  EXPECT_FALSE(t.on_grid_s);
  EXPECT_FALSE(t.exact_s);
  s.incident.start_s = s.horizon_s - 0.5 * s.step_s;
  EXPECT_THROW(tipping_point(s, s.step_s / 4), InputError);
}

// A run in which no request failed is no storm: at a few requests a second
// the agent engine's goodput at the end falls short of demand by chance, and
// such lengths read as tipping points scattered below the real one, so the
// answer moved with the grid (1, 4 or 7 s; the first storm is at 9 s).
TEST(TippingGrid, ARunWithoutFailuresIsNoStormWhateverTheGrid) {
  const std::string path = std::string(RETRYSTORM_SOURCE_DIR) + "/examples/random-tipping.yaml";
  std::ifstream in(path);
  Scenario s = scenario_from_text(std::string(std::istreambuf_iterator<char>(in), {}), path);
  set_key(s, "demand.rate_per_s", KeyValue{6.0});
  set_key(s, "incident.capacity_factor", KeyValue{0.3});
  set_key(s, "horizon_s", KeyValue{300.0});
  validate(s);
  for (double grid : {1.0, 2.0, 5.0, 10.0}) {
    const TippingResult t = tipping_point(s, grid);
    ASSERT_TRUE(t.exact_s) << grid;
    EXPECT_DOUBLE_EQ(*t.exact_s, 9) << "grid " << grid;
  }
}

// A queue held full by retries that never run out is a storm though nobody
// failed yet: the tipping point finds it and the verdict says so (a "no
// request failed" exemption called it recovered and "too soon to tell").
TEST(TippingGrid, AQueueHeldFullByRetriesIsAStormThoughNobodyFailed) {
  Scenario s = preset_or_throw("order-status").scenario;
  set_key(s, "server.queue_limit", KeyValue{1000.0});
  set_key(s, "client.retries", KeyValue{100.0});
  validate(s);
  const RunReport r = make_report(s, ReportOptions{});
  ASSERT_EQ(r.metrics.failed, 0);
  EXPECT_FALSE(r.verdict.recovered);
  EXPECT_EQ(r.verdict.headline.find("Not judged"), std::string::npos) << r.verdict.headline;
  EXPECT_NE(r.verdict.detail.find("the queue stayed full"), std::string::npos) << r.verdict.detail;
  const TippingResult t = tipping_point(s, 0);
  ASSERT_TRUE(t.exact_s);
  EXPECT_LE(*t.exact_s, s.incident.duration_s);
}

// The decision trace's wait is at the step's own capacity: in order-status's
// incident (40/s) 240 queued is 6 s of work, longer than the 5 s timeout, and
// the next requests do give up (it said 2.4 s, at normal capacity, and
// nothing of lateness); with no capacity at all nothing drains.
TEST(TippingGrid, TheTraceWaitsAtTheStepsCapacity) {
  Scenario s = preset_or_throw("order-status").scenario;
  const std::vector<TraceEntry> trace = decision_trace(run_engine(s));
  auto at = [&](double t) {
    for (const TraceEntry& e : trace)
      if (e.t_s == t) return e.text;
    return std::string();
  };
  EXPECT_NE(at(65).find("backlog 240 (~6 s of work, longer than the timeout"), std::string::npos)
      << at(65);
  s.incident.capacity_factor = 0;
  const std::vector<TraceEntry> outage = decision_trace(run_engine(s));
  bool said = false;
  for (const TraceEntry& e : outage)
    said = said || e.text.find("nothing is served while capacity is 0") != std::string::npos;
  EXPECT_TRUE(said);
}

// The verdict's detail says what happened: a run that ends inside its
// incident said "Users were still failing" with none failed.
TEST(TippingGrid, TheVerdictSaysWhyFromTheFacts) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.horizon_s = 1, s.incident.start_s = 0, s.incident.duration_s = 1;
  RunReport inside = make_report(s, ReportOptions{});
  EXPECT_EQ(inside.verdict.detail.find("still failing"), std::string::npos)
      << inside.verdict.detail;
  EXPECT_EQ(inside.verdict.detail.rfind("The run ended inside the incident.", 0), 0u)
      << inside.verdict.detail;
  Scenario stuck = preset_or_throw("order-status").scenario;
  RunReport report = make_report(stuck, ReportOptions{});
  EXPECT_NE(report.verdict.detail.find("went to callers who had already given up"),
            std::string::npos)
      << report.verdict.detail;
}

TEST(ReportRunsAtOnce, TippingPointIsTheOneAtATimeAnswer) {
  std::vector<Scenario> cases = {
      preset_with("primary-failover", {}),
      preset_with("order-status", {}),
      preset_with("brief-outage", {"engine=agent", "seed=3"}),
      preset_with("brief-outage", {"engine=agent", "seed=11", "tipping.grid_s=0.7"}),
      preset_with("order-status", {"engine=agent", "horizon_s=200", "tipping.grid_s=7"}),
  };
  for (const Scenario& s : cases) {
    TippingResult expected = tipping_one_at_a_time(s), got = tipping_point(s);
    EXPECT_EQ(got.grid_s, expected.grid_s) << s.name;
    EXPECT_EQ(got.on_grid_s, expected.on_grid_s) << s.name;
    EXPECT_EQ(got.exact_s, expected.exact_s) << s.name;
  }
}

// The report's run and its defenses' runs start together; the advice lists
// the same defenses, in the same order, with the same figures as the report
// built from a run made first.
TEST(ReportRunsAtOnce, AdviceIsTheSameWhenTheRunGoesBesideTheDefenses) {
  for (const char* name : {"order-status", "two-layer-stack", "three-tier-chain"}) {
    Scenario s = preset_or_throw(name).scenario;
    ReportOptions o;
    o.trace = false;
    o.tipping = false;
    RunReport together = make_report(s, o);
    RunReport after = report_of_run(s, run_engine(s), o);
    ASSERT_EQ(together.advice.size(), after.advice.size()) << name;
    for (size_t i = 0; i < after.advice.size(); ++i) {
      EXPECT_EQ(together.advice[i].title, after.advice[i].title) << name;
      EXPECT_EQ(together.advice[i].why, after.advice[i].why) << name;
      EXPECT_EQ(together.advice[i].failed_fraction, after.advice[i].failed_fraction) << name;
    }
    EXPECT_EQ(together.metrics.failed, after.metrics.failed) << name;
  }
}

// Side by side only as many runs as fit together in one request's memory.
TEST(ReportRunsAtOnce, RunsAtOnceFitInOneRequestsMemory) {
  Scenario small = preset_or_throw("order-status").scenario;
  EXPECT_GE(runs_at_once(small), 1u);
  Scenario big = preset_with(
      "order-status", {"engine=agent", "demand.rate_per_s=100000", "server.capacity_per_s=150000"});
  EXPECT_EQ(runs_at_once(big), 1u);
  EXPECT_LE(runs_at_once(small) * engine_run_cost(small).bytes, CostLimits{}.max_bytes);
}

}  // namespace
}  // namespace retrystorm
