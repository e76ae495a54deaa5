// What happens after a failed attempt, as one answer: the policy's decision
// (attempts left, retry_on_timeout, the deadline rule, the backoff) and the
// budget's admission folded together. Envoy splits a route's retry policy
// from the state a request's retries read (RetryStateImpl); here the policy
// is ClientPolicy, immutable, and RetryState is the rest: the budget the
// requests of one layer share and the parts of a retry it granted so far.
// The fluid engine asks for cohorts, the agent engine and the lab's direct
// client for one request each; all three make the same calls in the same
// order (docs/policies.md, "When a budget decides").
#pragma once

#include <utility>

#include "policies/budget.hpp"
#include "policies/client_policy.hpp"

namespace retrystorm {

// What to do with the requests whose attempt failed.
enum class RetryAction {
  fail,    // the policy does not retry (RetryDecision::verdict says why)
  denied,  // the policy would retry; the budget refused: the request fails now
  retry,   // back off (RetryDecision::delay), then send the next attempt
  // the planned deadline rule (fluid engine): the retry cannot fit, the
  // request fails when its deadline fires, holding its budget admission
  fail_at_deadline,
};

struct RetryOutcome {
  RetryAction action = RetryAction::fail;
  RetryDecision decision;
  double admitted = 0;  // how much goes on (retry, fail_at_deadline): 1 or 0 for one request
  double denied = 0;    // how much the budget refused: fails at once
  RetryCause cause = RetryCause::timeout;
  bool retries() const { return action == RetryAction::retry; }
};

class RetryState {
 public:
  // `policy` decides (for every layer, by Failure::layer) and must outlive
  // this state; `budget` is the one the requests asking here share.
  RetryState(const ClientPolicy& policy, RetryBudget budget)
      : policy_(&policy), budget_(std::move(budget)) {}

  RetryBudget& budget() { return budget_; }
  const RetryBudget& budget() const { return budget_; }
  // The budgets of real systems decide at the failure; a refused retry fails
  // at once. The spec'd token_bucket and window decide when the retry is due.
  bool admits_at_failure() const { return budget_.admits_at_failure(); }

  // One request's failed attempt: tells the budget, decides, draws the delay
  // with `uniform(low, high)` (only for a range with a width) and, for a
  // budget that admits at the failure, asks it for one whole retry.
  template <typename Uniform>
  RetryOutcome on_failure(const Failure& f, const InFlight& in_flight, Uniform&& uniform) {
    RetryOutcome out;
    judge(f, policy_->decide(f, std::forward<Uniform>(uniform)), 1, out);
    if (out.action != RetryAction::fail)
      settle(admits_at_failure() && !take_whole(in_flight, out.cause) ? 0 : 1, 1, out);
    return out;
  }
  // A cohort of `amount` requests whose attempt failed (fluid engine): the
  // delay is not drawn (the engine spreads the range over steps) and the
  // budget admits a part.
  RetryOutcome on_failure(const Failure& f, double amount, const InFlight& in_flight) {
    RetryOutcome out;
    judge(f, policy_->decide(f), amount, out);
    if (out.action != RetryAction::fail)
      settle(admits_at_failure() ? budget_.take(amount, in_flight, out.cause) : amount, amount,
             out);
    return out;
  }

  // A hedge of a hedging layer failed (docs/policies.md, "Hedging"): the
  // failure is told to the budget as any; retry = send the next hedge now (an
  // answer the layer retries, attempts left, the budget admits), denied = the
  // budget refused it, fail = an answer not retried or no attempts left. The
  // engine waits for the other hedges in flight before failing the call.
  // The delay is drawn as after any failure (an Envoy hedge waits its
  // backoff); gRPC's next hedge goes at once, or after the pushback it waits
  // (grpc-js RetryingCall.handleProcessedStatus: no backoff when hedging).
  template <typename Uniform>
  RetryOutcome on_hedge_failure(const Failure& f, const InFlight& in_flight, Uniform&& uniform) {
    RetryOutcome out;
    if (policy_->hedging(f.layer) != Hedging::grpc) {
      judge(f, policy_->decide(f, std::forward<Uniform>(uniform)), 1, out);
    } else {
      RetryDecision d = policy_->decide(f);
      if (d.retries()) {
        d.delay = policy_->pushback_delay(f, {0, 0});
        d.delay_s =
            d.delay.high_s > d.delay.low_s ? uniform(d.delay.low_s, d.delay.high_s) : d.delay.low_s;
      }
      judge(f, d, 1, out);
    }
    if (out.action != RetryAction::fail) settle(admits_hedge(in_flight) ? 1 : 0, 1, out);
    return out;
  }
  // A hedge of the call failed: whether the answer is asked for the next
  // hedge (gRPC: after any hedge's failure; Envoy: only after the latest's,
  // the others were hedged already; `latest`: it is the latest sent and no
  // hedge waits its backoff), what that gives (on_hedge_failure), and whether
  // the answer is one the layer never retries (then the call fails at once;
  // otherwise it waits for the hedges still out).
  struct HedgeFailure {
    RetryOutcome outcome;  // action fail when not asked
    bool fatal = false;
  };
  template <typename Uniform>
  HedgeFailure on_hedge_failed(const Failure& f, bool latest, const InFlight& in_flight,
                               Uniform&& uniform) {
    HedgeFailure out;
    out.fatal = !policy_->retryable(f);
    if (policy_->hedging(f.layer) == Hedging::grpc || latest)
      out.outcome = on_hedge_failure(f, in_flight, std::forward<Uniform>(uniform));
    return out;
  }
  // The layer's timeout passed with no answer (hedging): the next hedge as
  // decided for a timed-out attempt, without telling the budget of a failure
  // (nothing failed); gRPC's throttling admits hedges as it admits retries.
  template <typename Uniform>
  RetryOutcome on_hedge_due(const Failure& f, const InFlight& in_flight, Uniform&& uniform) {
    RetryOutcome out;
    Failure due = f;
    due.hedge_due = true;
    out.decision = policy_->decide(due, std::forward<Uniform>(uniform));
    out.cause = RetryCause::timeout;
    if (!out.decision.retries()) return out;
    out.action = RetryAction::retry;
    settle(admits_hedge(in_flight) ? 1 : 0, 1, out);
    return out;
  }

  // One request's retry is due after its backoff: a budget that decides at
  // the send decides now (true: send it).
  bool on_due(const InFlight& in_flight, RetryCause cause) {
    return !budget_.enabled() || admits_at_failure() || take_whole(in_flight, cause);
  }
  // A cohort's retries are due: the amount that may be sent.
  double on_due(double amount, const InFlight& in_flight, RetryCause cause) {
    if (!budget_.enabled() || admits_at_failure()) return amount;
    return budget_.take(amount, in_flight, cause);
  }

 private:
  // The failure of `amount` told to the budget and the decision read: fail,
  // or on to the admission (cause set). In place, and inline: the engines
  // call this for every failed attempt or cohort, and an answer passed
  // through memory in parts stalls the loads that read it back.
  void judge(const Failure& f, const RetryDecision& d, double amount, RetryOutcome& out) {
    // gRPC's throttling counts the failure whatever the decision; Linkerd
    // deposits the failures that are not retried by kind.
    if (budget_.hears_failures()) budget_.on_attempt_failed(amount, policy_->retryable(f));
    out.decision = d;
    out.cause = f.timed_out ? RetryCause::timeout : RetryCause::error;
    if (d.retries()) {
      out.action = RetryAction::retry;
    } else if (d.verdict == RetryVerdict::past_deadline &&
               policy_->deadline_rule() == DeadlineRule::planned_mean) {
      // The request still backs off, as a real client would, and is admitted
      // by the budget like any retry; its deadline fires first.
      out.action = RetryAction::fail_at_deadline;
    }
  }
  bool admits_hedge(const InFlight& in_flight) {
    return !budget_.enabled() || take_whole(in_flight, RetryCause::timeout);
  }
  static void settle(double admitted, double amount, RetryOutcome& out) {
    out.admitted = admitted;
    out.denied = amount - admitted;
    if (admitted <= 0) out.action = RetryAction::denied;
  }
  // One whole retry from a budget that deals in amounts: parts it grants
  // are banked until they make a whole retry. AWS's quota is not banked: a
  // part would take tokens for a retry it refuses.
  bool take_whole(const InFlight& in_flight, RetryCause cause) {
    if (budget_.whole_retries()) return budget_.take_one(cause);
    double taken = budget_.take(1.0, in_flight, cause);
    if (taken >= 1) return true;
    if (taken <= 0) return false;
    credit_ += taken;
    if (credit_ < 1 - 1e-9) return false;
    credit_ = credit_ - 1 > 0 ? credit_ - 1 : 0;
    return true;
  }

  const ClientPolicy* policy_;
  RetryBudget budget_;
  double credit_ = 0;
};

}  // namespace retrystorm
