// Policies read against the systems that run them: AWS's retry quota grants a
// retry whole or not at all, gRPC C-core reads a tokenRatio without a decimal
// point in thousandths, and Envoy's backoff with an odd max_interval.
// Each test cites the upstream file and function it pins.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "configs_helpers.hpp"
#include "policies/backoff.hpp"
#include "policies/retry_state.hpp"
#include "systems/import.hpp"

namespace retrystorm {
namespace {

// ---- AWS retry quota -------------------------------------------------------

ClientPolicy aws_policy() {
  ClientPolicy::Settings s;
  s.layer_retries = {2};
  s.layer_timeouts_s = {s.timeout_s};
  s.backoff = {1, 2, 0, Jitter::none};
  s.budget.kind = BudgetKind::aws_quota;
  s.budget.quota_tokens = 500;
  s.budget.retry_cost = 5;
  s.budget.timeout_cost = 10;
  s.budget.success_reward = 1;
  s.budget.clients = 1;
  return ClientPolicy(std::move(s));
}

double no_draw(double, double) {
  ADD_FAILURE() << "a backoff without jitter draws nothing";
  return 0;
}

// The agent engine's one-request path (RetryState::on_failure, as the lab's
// client and the graph engine's) against botocore 1.29: botocore/retries/
// quota.py RetryQuota.acquire ("if capacity_amount > self._available_capacity:
// return False", nothing taken) and standard.py RetryQuotaChecker
// (acquire_retry_quota: 10 after a timeout, else 5; release_retry_quota: +1
// for a success without retry). The numbers in the comments are botocore's,
// replayed through those two classes. A part granted used to be banked: the
// timeout below took the 4 tokens it was refused, and the later error retry
// was refused with 1 token where botocore grants it with 5.
TEST(AwsQuotaReview, ARefusedRetryTakesNothing) {
  ClientPolicy p = aws_policy();
  RetryState state(p, RetryBudget(p, 100, 1));
  const Failure error{.layer = 0, .attempt = 1, .timed_out = false};
  const Failure timeout{.layer = 0, .attempt = 1, .timed_out = true};
  auto retried = [&](const Failure& f) {
    return state.on_failure(f, InFlight{}, no_draw).action == RetryAction::retry;
  };
  int granted = 0;
  for (int i = 0; i < 100; ++i) granted += retried(error) ? 1 : 0;
  EXPECT_EQ(granted, 100);                                      // 500 -> 0
  EXPECT_FALSE(retried(error));                                 // 0: refused
  for (int i = 0; i < 4; ++i) state.budget().on_success(1, 1);  // 4
  RetryOutcome t = state.on_failure(timeout, InFlight{}, no_draw);
  EXPECT_EQ(t.action, RetryAction::denied);  // 10 > 4: refused, 4 kept
  EXPECT_EQ(t.admitted, 0);
  EXPECT_EQ(t.denied, 1);
  state.budget().on_success(1, 1);  // 5
  EXPECT_TRUE(retried(error));      // 5 <= 5: granted, 0
  EXPECT_FALSE(retried(error));     // 0: refused
}

// A successful retry refunds what it cost (release_retry_quota gives back
// retry_quota_capacity), and a timeout's retry costs 10: with 10 tokens one
// timeout retry goes, its success brings the 10 back, and it goes again.
TEST(AwsQuotaReview, WholeCostsAfterTimeoutsAndRefunds) {
  ClientPolicy p = aws_policy();
  RetryState state(p, RetryBudget(p, 100, 1));
  const Failure error{.layer = 0, .attempt = 1, .timed_out = false};
  const Failure timeout{.layer = 0, .attempt = 1, .timed_out = true};
  for (int i = 0; i < 98; ++i) state.on_failure(error, InFlight{}, no_draw);             // 10 left
  EXPECT_EQ(state.on_failure(timeout, InFlight{}, no_draw).action, RetryAction::retry);  // 0
  EXPECT_EQ(state.on_failure(error, InFlight{}, no_draw).action, RetryAction::denied);
  state.budget().on_success(1, 2, RetryCause::timeout);  // the retry succeeded: 10
  EXPECT_EQ(state.on_failure(timeout, InFlight{}, no_draw).action, RetryAction::retry);
}

// The fluid engine's cohorts still take amounts: 4 tokens admit 0.4 of a
// retry after a timeout (a share of the cohort, whose tokens it pays), and
// nothing is taken for the share refused.
TEST(AwsQuotaReview, TheFluidEngineStillAdmitsAShareOfACohort) {
  ClientPolicy p = aws_policy();
  RetryState state(p, RetryBudget(p, 100, 1));
  const Failure error{.layer = 0, .attempt = 1, .timed_out = false};
  const Failure timeout{.layer = 0, .attempt = 1, .timed_out = true};
  EXPECT_DOUBLE_EQ(state.on_failure(error, 100, InFlight{}).admitted, 100);  // 0
  state.budget().on_success(4, 1);                                           // 4
  RetryOutcome t = state.on_failure(timeout, 1, InFlight{});
  EXPECT_DOUBLE_EQ(t.admitted, 0.4);
  EXPECT_DOUBLE_EQ(t.denied, 0.6);
  EXPECT_DOUBLE_EQ(state.on_failure(error, 1, InFlight{}).admitted, 0);  // 0 left
}

// ---- gRPC tokenRatio -------------------------------------------------------

using configs::ImportResult;
using configs::testing::num;

ImportResult import_throttling(const std::string& ratio) {
  // A method that retries, and tokenRatio on line 5.
  const std::string text =
      "{\n  \"methodConfig\": [{\"name\": [{\"service\": \"s\"}], \"retryPolicy\": "
      "{\"maxAttempts\": 3, \"initialBackoff\": \"0.1s\", \"maxBackoff\": \"1s\", "
      "\"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}],\n"
      "  \"retryThrottling\": {\n    \"maxTokens\": 10,\n    \"tokenRatio\": " +
      ratio + "\n  }\n}\n";
  return configs::import_configs({{"t.json", text}});
}

bool warned(const ImportResult& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// grpc/grpc src/core/client_channel/retry_service_config.cc
// RetryGlobalConfig::JsonPostLoad reads tokenRatio's text: multiplier 1, and
// 1000 only when the text has a '.'; milli_token_ratio = whole x multiplier +
// decimal. So `1` is 1 milli-token (0.001 tokens) per success and `1.0` is
// 1000 (1 token). grpc-go (service_config.go, retryThrottlingPolicy.TokenRatio
// a float64) and grpc-java (ServiceConfigUtil.getThrottlePolicy,
// JsonUtil.getDouble) read 1 as 1. The import models C-core and says so.
TEST(GrpcTokenRatioReview, WithoutADecimalPointCCoreReadsThousandths) {
  ImportResult one = import_throttling("1");
  EXPECT_DOUBLE_EQ(num(one, "client.budget.token_ratio"), 0.001);
  EXPECT_TRUE(warned(one, "t.json:5: retryThrottling.tokenRatio: 1 has no decimal point"));
  EXPECT_TRUE(warned(one, "grpc-go and grpc-java read 1"));
  ImportResult ten = import_throttling("10");
  EXPECT_DOUBLE_EQ(num(ten, "client.budget.token_ratio"), 0.01);
  ImportResult written = import_throttling("1.0");
  EXPECT_DOUBLE_EQ(num(written, "client.budget.token_ratio"), 1);
  EXPECT_FALSE(warned(written, "tokenRatio"));
  ImportResult tenth = import_throttling("0.1");
  EXPECT_DOUBLE_EQ(num(tenth, "client.budget.token_ratio"), 0.1);
  EXPECT_FALSE(warned(tenth, "tokenRatio"));
}

// ---- Envoy backoff ---------------------------------------------------------

// envoyproxy/envoy source/common/common/backoff_strategy.cc
// JitteredExponentialBackOffStrategy::nextBackOffMs doubles next_interval_
// while it is below max_interval_ / 2 (integer ms), else takes max_interval_:
// base 25 ms and max 51 ms give 25, then 51. The model keeps the one rule of
// docs/policies.md for every backoff, min(base x 2^(k-1), cap): 25, 50, 51.
// The difference (docs/policies.md, "Backoff and jitter") is under 1 ms and
// one window long, and only for an odd max_interval.
TEST(EnvoyBackoffReview, TheModelsWindowsForAnOddMaxInterval) {
  Backoff envoy{0.025, 2, 0.051, Jitter::full};
  EXPECT_DOUBLE_EQ(backoff_window_s(envoy, 1), 0.025);
  EXPECT_DOUBLE_EQ(backoff_window_s(envoy, 2), 0.05);
  EXPECT_DOUBLE_EQ(backoff_window_s(envoy, 3), 0.051);
}

}  // namespace
}  // namespace retrystorm
