// Records described once (Series, Metrics, session buckets: one descriptor
// table each) and the one thread pool every many-runs request uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/run_montecarlo.hpp"
#include "analysis/sweep.hpp"
#include "engines/engine.hpp"
#include "engines/sessions/bucket_fields.hpp"
#include "formats/result_json.hpp"
#include "formats/session_report.hpp"
#include "formats/text_report.hpp"
#include "parallel/thread_pool.hpp"
#include "preset_scenario.hpp"

namespace retrystorm {
namespace {

TEST(ThreadPool, EveryItemRunsOnceWhateverTheThreads) {
  for (unsigned threads : {1u, 2u, 7u}) {
    std::vector<std::atomic<int>> runs(50);
    PoolOptions options;
    options.threads = threads;
    EXPECT_TRUE(for_each_index(
        runs.size(), [&](size_t i) { ++runs[i]; }, options));
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  }
}

TEST(ThreadPool, AWorkersErrorReachesTheCaller) {
  // With and without a progress watcher (the sweep's way): the error of a
  // worker thread is rethrown in the caller once every worker has stopped.
  for (bool watch : {false, true}) {
    PoolOptions options;
    options.threads = 3;
    if (watch) options.progress = [](size_t, size_t) {};
    auto work = [](size_t i) {
      if (i == 5) throw std::runtime_error("point 5 failed");
    };
    try {
      for_each_index(40, work, options);
      ADD_FAILURE() << "no error reached the caller";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "point 5 failed");
    }
  }
}

TEST(ThreadPool, NoItemStartsAfterAnError) {
  int started = 0;
  PoolOptions one_thread;
  one_thread.threads = 1;
  auto work = [&](size_t i) {
    ++started;
    if (i == 5) throw std::runtime_error("point 5 failed");
  };
  EXPECT_THROW(for_each_index(40, work, one_thread), std::runtime_error);
  EXPECT_EQ(started, 6);
}

TEST(ThreadPool, StopEndsTheWorkEarly) {
  std::atomic<int> ran{0};
  PoolOptions options;
  options.threads = 2;
  options.stop = [&] { return ran.load() >= 3; };
  EXPECT_FALSE(for_each_index(
      1000, [&](size_t) { ++ran; }, options));
  EXPECT_LT(ran.load(), 1000);
}

TEST(ThreadPool, ProgressEndsWithEveryItemDone) {
  PoolOptions options;
  options.threads = 2;
  size_t last_done = 0, last_total = 0;
  options.progress = [&](size_t done, size_t total) { last_done = done, last_total = total; };
  EXPECT_TRUE(for_each_index(
      6, [](size_t) {}, options));
  EXPECT_EQ(last_done, 6u);
  EXPECT_EQ(last_total, 6u);
}

TEST(ThreadPool, ASweepWorkersErrorReachesTheCaller) {
  // The check polled by the sweep's workers fails on the third point: the
  // sweep throws that error (before the pool, a worker's error ended the program).
  Scenario s = testing::preset("brief-outage");
  SweepOptions options;
  options.threads = 2;
  options.progress = [](size_t, size_t) {};
  std::atomic<int> polls{0};
  options.cancelled = [&]() -> bool {
    if (++polls == 3) throw std::runtime_error("the third point failed");
    return false;
  };
  std::vector<SweepAxis> axes = {parse_axis("incident.duration_s=1:8:1")};
  EXPECT_THROW(
      {
        try {
          run_sweep(s, axes, options);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "the third point failed");
          throw;
        }
      },
      std::runtime_error);
}

// Flattens {"a": 1, "b": {"c": 2}} to a.b-style leaf names.
void leaves(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : j.items()) {
    if (value.is_object())
      leaves(value, prefix + key + ".", out);
    else
      out.push_back(prefix + key);
  }
}

TEST(Records, MetricFieldsAreEveryFigureOfTheJson) {
  Scenario s = testing::preset("order-status");
  nlohmann::json j = metrics_json(compute_metrics(run_engine(s)));
  std::vector<std::string> sent, described;
  leaves(j, "", sent);
  for (const MetricField& f : metric_fields())
    described.push_back(f.group.empty() ? std::string(f.name)
                                        : std::string(f.group) + "." + std::string(f.name));
  std::sort(sent.begin(), sent.end());
  std::sort(described.begin(), described.end());
  EXPECT_EQ(sent, described);
}

TEST(Records, SeriesTableDrivesTheCsvAndTheJson) {
  Scenario s = testing::preset("brief-outage");
  RunResult run = run_engine(s);
  std::string csv = series_csv(run.series);
  std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header,
            "t_s,capacity,first_attempts,retries,goodput,served_late,failed,shed,rejected,backlog,"
            "gave_up,budget_denied,refused_locally,pooled");
  nlohmann::json j = series_json(run.series);
  EXPECT_EQ(j.size(), kSeriesFields.size());
  for (const SeriesField& f : kSeriesFields) {
    ASSERT_TRUE(j.contains(std::string(f.name)));
    EXPECT_EQ(j[std::string(f.name)].size(), run.series.size());
  }
  // A copy binds its own spans to its own storage.
  Series copy = run.series;
  copy.goodput[0] += 1;
  EXPECT_NE(copy.goodput[0], run.series.goodput[0]);
  EXPECT_EQ(copy.backlog.data(), copy.goodput.data() + 5 * copy.size());
}

TEST(Records, MonteCarloFiguresComeFromTheMetricTable) {
  Scenario s = testing::preset("brief-outage");
  std::vector<std::string> names;
  for (const Figure& f : montecarlo_figures(compute_metrics(run_engine(s))))
    names.push_back(f.name);
  std::vector<std::string> expected = {"user_requests",      "failed",
                                       "failed_fraction",    "succeeded",
                                       "in_flight",          "served",
                                       "served_late",        "shed",
                                       "rejected",           "budget_denied",
                                       "wasted_fraction",    "peak_amplification",
                                       "recovered",          "goodput_recovery_s",
                                       "failure_recovery_s", "last_window_goodput_per_s",
                                       "latency_p50_s",      "latency_p90_s",
                                       "latency_p99_s",      "last_window_attempts_per_request"};
  EXPECT_EQ(names, expected);
}

TEST(Records, SessionBucketTableDrivesTheCsvAndTheJson) {
  Scenario s = testing::preset("scheduler-recovery-burst");
  SessionReport r = make_session_report(s);
  std::string csv = session_series_csv(r.run);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "t_s,working,blocked,asleep,launches,completions,failures,errors_429,errors_401,"
            "items_done,arrivals,queue_unread,peak_in_flight");
  nlohmann::json series = session_json(r)["series"];
  EXPECT_EQ(series.size(), std::size(sessions::kBucketFields));
  for (const sessions::BucketField& f : sessions::kBucketFields)
    EXPECT_EQ(series[std::string(f.name)], f.get(r.run.series));
}

}  // namespace
}  // namespace retrystorm
