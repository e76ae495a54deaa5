// AWS adaptive retry mode's client-side rate limiter (issue 26, part 4;
// docs/policies.md, "AWS adaptive mode"): AdaptiveRateLimiter as botocore's
// ClientRateLimiter (retries/adaptive.py on_sending_request,
// on_receiving_response; throttling.py CubicCalculator; bucket.py
// TokenBucket), the agent engine holding each client's attempts for its
// tokens, import and export. The real botocore classes are the oracle in
// tests/conformance/aws_conformance_test.cpp.
#include "policies/adaptive_limiter.hpp"

#include <gtest/gtest.h>

#include "analysis/metrics.hpp"
#include "configs_helpers.hpp"
#include "engines/agent/agent.hpp"
#include "engines/engine.hpp"
#include "preset_scenario.hpp"
#include "session_log/request_log.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"
#include "systems/lint.hpp"

namespace retrystorm {
namespace {

TEST(AdaptiveLimiter, OffUntilAThrottlingAnswerThenCutToBetaOfTheMeasuredRate) {
  AdaptiveRateLimiter l(0);
  // Off: every send goes at once, however many.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l.acquire(0.01 * i), 0.01 * i);
  // 20 answers per second for two seconds, then a throttling answer.
  double t = 0;
  for (int i = 0; i < 40; ++i, t += 0.05) l.on_response(t, false);
  EXPECT_FALSE(l.enabled());
  EXPECT_GT(l.measured_rate(), 15);
  l.on_response(t, true);  // measured too: the rate it had then is the one cut
  double measured = l.measured_rate();
  EXPECT_TRUE(l.enabled());
  EXPECT_NEAR(l.send_rate(), AdaptiveRateLimiter::kBeta * measured, 1e-9);
  // Sends now leave in turn, one token each at that rate.
  double first = l.acquire(t), second = l.acquire(t), third = l.acquire(t);
  EXPECT_LE(first, second);
  EXPECT_NEAR(third - second, 1 / l.send_rate(), 1e-9);
  // Throttled again and again: the rate falls to the floor, 0.5 per second.
  for (int i = 0; i < 50; ++i) l.on_response(t += 1, true);
  EXPECT_EQ(l.send_rate(), AdaptiveRateLimiter::kMinRate);
}

// primary-failover on the agent engine, the queue rejecting with 429 during
// the outage, one client: the adaptive client holds its attempts, first
// attempts too, and sends far fewer of them into the outage.
Scenario throttled(const std::string& limiter) {
  return testing::preset("primary-failover", {{"engine", "agent"},
                                              {"horizon_s", "60"},
                                              {"demand.rate_per_s", "50"},
                                              {"server.capacity_per_s", "100"},
                                              {"server.queue_limit", "20"},
                                              {"server.reject_status", "429"},
                                              {"client.budget.clients", "1"},
                                              {"client.rate_limiter", limiter}});
}

TEST(AdaptiveLimiter, TheAgentEngineHoldsEachClientsAttemptsForItsTokens) {
  Metrics free = compute_metrics(run_engine(throttled("none")));
  RunResult paced_run = run_engine(throttled("aws_adaptive"));
  Metrics paced = compute_metrics(paced_run);
  EXPECT_LT(paced.rejected, free.rejected / 3);
  EXPECT_LT(paced.retries, free.retries / 3);
  EXPECT_EQ(paced_run.user_requests, paced_run.succeeded + paced_run.failed + paced_run.in_flight);
  // With demand spread over many clients each sees few throttling answers:
  // the same incident, 100 clients, is paced far less.
  Scenario many = throttled("aws_adaptive");
  set_key_text(many, "client.budget.clients", "100");
  Metrics spread = compute_metrics(run_engine(many));
  EXPECT_GT(spread.rejected, paced.rejected);
}

TEST(AdaptiveLimiter, FluidRefusesItWhereItWouldTurnOnAndBadCombinationsAreRefused) {
  auto refuses = [](std::map<std::string, std::string> sets, const std::string& part) {
    try {
      testing::preset("primary-failover", std::move(sets));
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refuses({{"client.rate_limiter", "aws_adaptive"}, {"server.reject_status", "429"}},
          "runs with engine=agent");
  refuses({{"engine", "agent"},
           {"client.rate_limiter", "aws_adaptive"},
           {"client.budget.clients", "200000"}},
          "at most 100000");
  refuses(
      {{"engine", "agent"}, {"client.rate_limiter", "aws_adaptive"}, {"client.hedging", "grpc"}},
      "client.rate_limiter: aws_adaptive");
  // No 429 ever comes back: the fluid engine runs it, exactly.
  validate(testing::preset("primary-failover", {{"client.rate_limiter", "aws_adaptive"}}));
}

TEST(AdaptiveLimiter, ImportedFromAdaptiveModeExportedBackAndLintSaysWhereItRuns) {
  using configs::testing::has_key;
  using configs::testing::str;
  const std::string adaptive = "[default]\nretry_mode = adaptive\nmax_attempts = 3\n";
  auto r = configs::import_configs({{"aws.ini", adaptive}});
  EXPECT_EQ(str(r, "client.rate_limiter"), "aws_adaptive");
  EXPECT_FALSE(has_key(configs::import_configs({{"aws.ini", "[default]\nretry_mode = standard\n"}}),
                       "client.rate_limiter"));
  Scenario s = testing::preset("primary-failover", {{"client.rate_limiter", "aws_adaptive"}});
  EXPECT_NE(configs::export_config(s, configs::System::aws).text.find("retry_mode = adaptive"),
            std::string::npos);
  auto lint = configs::lint_configs({{"aws.ini", adaptive}});
  bool said = false;
  for (const auto& f : lint.findings) said = said || f.rule == "adaptive-rate-limiter";
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace retrystorm
