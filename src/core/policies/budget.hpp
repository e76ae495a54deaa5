// Retry budgets, shared by every engine. fluid-model.md rules 2 and 3 define
// token_bucket and window; docs/policies.md defines the others, which follow
// docs/configs.md ("Sources").
//   token_bucket:      holds ratio x base demand x window_s, starts full, each
//                      step deposits ratio x new requests (capped).
//   window:            retries in the last window_s may reach ratio_eff x first
//                      attempts in it, ratio_eff = (1 + ratio)^layers - 1.
//   envoy_concurrency: retries held (admitted at their failure, through the
//                      backoff and the retried attempt, until its outcome) may
//                      reach clients x max(floor(ratio x requests in flight /
//                      clients), min_concurrency).
//   grpc_throttling:   clients x max_tokens tokens; each retryable failed
//                      attempt -1 (the last one too), each success
//                      +token_ratio; a retry only while above half after it.
//   aws_quota:         clients x quota_tokens; a retry after a timeout costs
//                      timeout_cost, after an error answer retry_cost (AWS
//                      standard mode: 10 and 5); a successful retry refunds
//                      what it cost, a first-attempt success adds
//                      success_reward; a retry whose cost is above the
//                      tokens left fails and takes none (of a cohort, the
//                      share the tokens pay for goes).
//   ratio_ttl:         Linkerd's proxy: retries in the last ttl_s may reach
//                      clients x min_retries_per_s x floor(ttl_s) + ratio_eff x
//                      deposits in it; deposits are the outcomes that are not
//                      retried by kind (successes of any attempt, a timeout with
//                      retry_on_timeout off); ratio_eff = 1/floor(1/ratio)
//                      (1000/floor(1000/ratio) above 1).
#pragma once

#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

class ClientPolicy;

// What failed before a retry: the client gave up on the attempt (timeout) or
// it was answered with an error (rejected, or failed below). AWS standard
// mode prices the two differently (docs/policies.md).
enum class RetryCause { timeout, error };

// What an engine tells the budget about requests in flight at the dependency.
// Only envoy_concurrency reads it.
struct InFlight {
  double attempts = 0;  // attempts whose caller still waits, retries included
  // Retries holding a slot: for a budget that admits at the failure, those
  // admitted and not yet resolved (in backoff or in flight).
  double retries = 0;

  InFlight& operator+=(const InFlight& o) {
    attempts += o.attempts;
    retries += o.retries;
    return *this;
  }
  InFlight& operator-=(const InFlight& o) {
    attempts -= o.attempts;
    retries -= o.retries;
    return *this;
  }
};

class RetryBudget {
 public:
  // The budget of `policy` (its budget keys and layers); token_bucket is
  // sized from the base demand, rolling windows count steps of step_s.
  RetryBudget(const ClientPolicy& policy, double base_demand_per_s, double step_s);
  // The same for the scenario's policy.
  explicit RetryBudget(const Scenario& s);

  // Rule 2: called once at the start of every step with its first attempts.
  void begin_step(double first_attempts);
  // Rule 3: how much of a retry amount may be sent now; records what it takes.
  // `cause` prices the retry (aws_quota). A budget that admits at the failure
  // is asked at the failure instant instead, before the backoff.
  double take(double wanted, const InFlight& in_flight = {},
              RetryCause cause = RetryCause::timeout);
  // One request's retry from a budget that prices a retry whole (aws_quota):
  // granted only when its whole cost is there, and a refused one takes
  // nothing, as botocore's RetryQuota.acquire does. The other kinds grant
  // amounts through take().
  bool whole_retries() const { return kind_ == BudgetKind::aws_quota; }
  bool take_one(RetryCause cause);
  // The budgets of real systems decide when the failure arrives, before the
  // backoff; a refused retry fails at once (docs/policies.md, "When a budget
  // decides"). The spec'd token_bucket and window decide when the retry is due
  // (fluid-model.md rule 3).
  bool admits_at_failure() const {
    return kind_ != BudgetKind::none && kind_ != BudgetKind::token_bucket &&
           kind_ != BudgetKind::window;
  }
  // Envoy's limit on retries held by `b.clients` instances sharing `requests`
  // in flight: each instance allows max(floor(ratio x its requests),
  // min_concurrency), the product truncated to a whole number as Envoy's
  // RetryBudgetImpl::max does.
  static double envoy_limit(const Budget& b, double requests);
  // Feedback for the budgets that learn from outcomes; `cause` is what the
  // successful attempt's retry was charged for (attempt > 1).
  void on_success(double amount, int attempt, RetryCause cause = RetryCause::timeout);
  // Retries cost differently by cause: engines keep the causes apart.
  bool prices_causes() const {
    return kind_ == BudgetKind::aws_quota && b_.retry_cost != b_.timeout_cost;
  }
  // A failed attempt. `retryable`: the policy retries this kind of failure
  // (ClientPolicy::retryable); gRPC counts only those, Linkerd deposits only
  // the others.
  void on_attempt_failed(double amount, bool retryable = true);
  // Whether on_attempt_failed does anything: gRPC's throttling and Linkerd's
  // budget hear failures; the others only retries.
  bool hears_failures() const {
    return kind_ == BudgetKind::grpc_throttling || kind_ == BudgetKind::ratio_ttl;
  }
  // Linkerd's effective ratio: retries per deposit (tower TpsBudget::new).
  static double linkerd_ratio(double ratio);
  bool enabled() const { return kind_ != BudgetKind::none; }

 private:
  double available(const InFlight& in_flight, RetryCause cause) const;
  double cost(RetryCause cause) const {
    return cause == RetryCause::timeout ? b_.timeout_cost : b_.retry_cost;
  }
  void add_tokens(double delta);
  bool rolling() const { return kind_ == BudgetKind::window || kind_ == BudgetKind::ratio_ttl; }

  BudgetKind kind_;
  Budget b_;
  double ratio_eff_;  // window: allowed retries per first attempt
  double tokens_ = 0;
  double bucket_size_ = 0;
  double floor_ = 0;  // ratio_ttl: retries always allowed in the window
  void deposit(double amount);
  // window: per-step first attempts and retries, a ring of steps; ratio_ttl:
  // deposits in place of first attempts.
  std::vector<double> first_ring_, retry_ring_;
  size_t slot_ = 0;
  double first_in_window_ = 0, retries_in_window_ = 0;
};

}  // namespace retrystorm
