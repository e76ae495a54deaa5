// The client's retry policy as one value: how many retries at each layer, how
// long an attempt may take, the deadline, the backoff, the budget and what is
// retried; and everything derived from it, computed here and nowhere else:
// attempts per request, the backoff ladder as a distribution, and the decision
// after a failed attempt. The fluid, agent and session engines, import, export
// and lint all read it (docs/policies.md).
#pragma once

#include <string>
#include <vector>

#include "model/scenario.hpp"
#include "policies/backoff.hpp"

namespace retrystorm {

// The total of a backoff ladder: the sum of independent uniform delays (one
// DelayRange per retry) plus a fixed part (attempts x per-try timeout, or 0).
struct LadderStats {
  int retries = 0;
  double fixed_s = 0;  // the part that is not drawn (timeouts)
  double min_s = 0;    // every delay at its low end
  double mean_s = 0;   // sum of the range middles
  double max_s = 0;    // every delay at its high end (a supremum: draws are in [low, high))
  double p99_s = 0;    // 99th percentile of the total
};

// The distribution of a sum of uniform delays. Method: the CDF of the sum is
// built by convolving one uniform at a time on a grid of nodes (CDF values,
// piecewise linear between nodes, integrated exactly): after a convolution
// with U(0, w), F'(x) = (G(x) - G(x - w)) / w with G the integral of F. The
// result is exact at the nodes up to the piecewise-linear reading of F, an
// error of order (grid step)^2; ranges of zero width only shift the sum.
class LadderDistribution {
 public:
  explicit LadderDistribution(const std::vector<DelayRange>& delays, double fixed_s = 0);

  double min_s() const { return min_s_; }
  double mean_s() const { return mean_s_; }
  double max_s() const { return max_s_; }
  // P(total <= x).
  double cdf(double x_s) const;
  // P(total > deadline_s): the share of fully failing requests the ladder
  // carries past a deadline.
  double p_exceeds(double deadline_s) const { return 1 - cdf(deadline_s); }
  // The smallest x with P(total <= x) >= q (q in [0, 1]).
  double quantile(double q) const;

 private:
  double min_s_ = 0, mean_s_ = 0, max_s_ = 0;
  double h_ = 0;           // grid step over the drawn part [min, max]
  std::vector<double> f_;  // CDF of the drawn part above min_s_, at nodes j x h_
};

// Why a failed attempt was not retried.
enum class RetryVerdict {
  retry,                // back off, then send the next attempt
  exhausted,            // no attempts left at this layer
  timeout_not_retried,  // retry_on_timeout: false and the attempt timed out
  answer_not_retried,   // the attempt was answered with a class the policy does not retry
  past_deadline,        // the deadline rule (below) says the retry cannot fit
};

// How an engine's retry meets the deadline (client.deadline_s > 0). Each
// engine knows a different part of a request's past, so each reads the
// deadline the way it can; the rule is chosen in ClientPolicy::of, not by the
// engines.
enum class DeadlineRule {
  none,  // no deadline, or the engine ends the request when it fires (sessions)
  // fluid: cohorts carry no start time; retry a is sent only if a timeouts
  // plus the means of backoffs 1..a fit (last_planned_attempt()); one that
  // does not fit still backs off and its request fails when the deadline
  // fires, deadline_left_s() after the failure.
  planned_mean,
  // agent: as Envoy's route timeout and gRPC's deadline, the decision does not
  // look at the deadline; the engine ends the request when it fires, in
  // backoff or mid-attempt (docs/agent-engine.md).
  fires,
  // sessions with sessions.deadline_aware: the means of the rest of the
  // ladder must fit before start + deadline ("fail fast").
  rest_of_ladder_mean,
};

// A failed attempt, as an engine sees it.
struct Failure {
  int layer = kAllLayers;  // 0 = outermost; kAllLayers: the stack read as one ladder
  int attempt = 1;         // the attempt that failed, 1-based, at this layer
  bool timed_out = false;  // the client gave up on it (vs an error answer)
  double now_s = 0;        // the failure instant
  double start_s = 0;      // when the user request started (the deadline counts from it)
  FailureClass answer = FailureClass::http_503;  // the error answer, when not timed out
  double pushback_s = 0;  // the answer's pushback (Retry-After), seconds; 0 = none
  // How far waited pushbacks set the call's backoff ladder back: the retry
  // draws step attempt - ladder_offset (ClientPolicy::ladder_step). The
  // engine passes back the call's last RetryDecision::ladder_offset, 0 at first.
  int ladder_offset = 0;
  // A hedging layer's timeout passed: it hedges whatever it retries
  // (client.retry_on_timeout, retry_on), so the decision does not ask.
  bool hedge_due = false;
  static constexpr int kAllLayers = -1;
};

// What to do after a failure: fail, or retry after a delay from `delay`.
struct RetryDecision {
  RetryVerdict verdict = RetryVerdict::exhausted;
  int retry = 0;           // the retry number (1 sends attempt 2) when retrying
  DelayRange delay{0, 0};  // where the backoff is drawn from
  double delay_s = 0;      // the drawn delay (decide with a uniform source)
  int ladder_offset = 0;   // for the call's next failure (Failure::ladder_offset)
  bool retries() const { return verdict == RetryVerdict::retry; }
};

class ClientPolicy {
 public:
  // What the policy is made of. A ClientPolicy is built from its settings
  // once and never changes: what is derived from them (the backoff ranges,
  // the deadline plan) is computed in the constructor and always agrees.
  struct Settings {
    std::vector<int> layer_retries;        // retries of each layer, outermost first
    std::vector<double> layer_timeouts_s;  // per-attempt timeout of each layer (agent engine)
    // Layers that hedge (agent engine; empty = none): the timeout sends the
    // next attempt without giving up on the earlier ones (docs/policies.md, "Hedging").
    std::vector<Hedging> layer_hedging;
    // A rate limiter before the innermost layer's attempts (agent engine).
    RateLimiter rate_limiter = RateLimiter::none;
    double timeout_s = 5;                     // per-attempt timeout (client.timeout_s)
    double deadline_s = 0;                    // whole request; 0 = none
    bool retry_on_timeout = true;             // false: a timed-out attempt fails the request
    AnswerSet retried_answers = kAllAnswers;  // the error answers retried (client.retry_on)
    Pushback pushback = Pushback::ignore;     // how an answer's pushback is waited
    double pushback_max_s = 300;              // envoy: the longest pushback waited
    Backoff backoff;
    Budget budget;
    DeadlineRule deadline_rule = DeadlineRule::none;
  };

  // One attempt, no retries, the default timeout.
  ClientPolicy() : ClientPolicy(Settings{}) {}
  explicit ClientPolicy(Settings settings);
  // The scenario's client policy (parses client.stack_retries and
  // client.layer_timeouts_s; throws InputError on a malformed list).
  static ClientPolicy of(const Scenario& s) { return of(s, s.engine); }
  // The same as read by engine `runs_with` (which deadline rule applies; the
  // session model's single ladder), for an engine run on any scenario.
  static ClientPolicy of(const Scenario& s, Engine runs_with);
  // client.layer_timeouts_s read for `layers` layers ("" = timeout_s at each);
  // InputError when malformed or of the wrong length.
  static std::vector<double> parse_layer_timeouts(const std::string& text, int layers,
                                                  double timeout_s);

  // --- the policy ---
  const Settings& settings() const { return settings_; }
  const std::vector<int>& layer_retries() const { return settings_.layer_retries; }
  const std::vector<double>& layer_timeouts_s() const { return settings_.layer_timeouts_s; }
  RateLimiter rate_limiter() const { return settings_.rate_limiter; }
  // How the layer hedges (Hedging::none: it retries).
  Hedging hedging(int layer) const {
    auto i = static_cast<size_t>(layer);
    return i < settings_.layer_hedging.size() ? settings_.layer_hedging[i] : Hedging::none;
  }
  double timeout_s() const { return settings_.timeout_s; }
  double deadline_s() const { return settings_.deadline_s; }
  bool retry_on_timeout() const { return settings_.retry_on_timeout; }
  AnswerSet retried_answers() const { return settings_.retried_answers; }
  Pushback pushback() const { return settings_.pushback; }
  const Backoff& backoff() const { return settings_.backoff; }
  const Budget& budget() const { return settings_.budget; }
  DeadlineRule deadline_rule() const { return settings_.deadline_rule; }

  // --- derived ---
  int layers() const { return static_cast<int>(settings_.layer_retries.size()); }
  // Retries of a layer (kAllLayers: attempts() - 1, the stack as one ladder).
  // Inline, from what the constructor worked out: asked after every failure.
  int retries(int layer = Failure::kAllLayers) const {
    if (layer == Failure::kAllLayers) return attempts_ - 1;
    return settings_.layer_retries.at(static_cast<size_t>(layer));
  }
  // Attempts per user request at the bottom of the stack: the product of
  // (retries + 1) over the layers, capped at 1e9.
  int attempts() const { return attempts_; }
  // The attempts of one layer: its retries + 1.
  int layer_attempts(int layer) const { return retries(layer) + 1; }

  // The range the backoff of retry k (1-based) is drawn from (backoff_delay).
  DelayRange delay(int retry) const {
    return retry > 0 && static_cast<size_t>(retry) < ranges_.size()
               ? ranges_[retry]
               : backoff_delay(backoff(), retry);
  }
  // Every retry's range, retries 1..n.
  std::vector<DelayRange> ladder_of(int retries) const;
  // The ladder of a layer (kAllLayers: the stack as one ladder of attempts() - 1).
  std::vector<DelayRange> ladder(int layer = Failure::kAllLayers) const {
    return ladder_of(retries(layer));
  }
  // The middle of each range of the layer's ladder (what a deterministic run sleeps).
  std::vector<double> mean_ladder(int layer = Failure::kAllLayers) const;
  // The ladder total of a layer as a distribution; per_try_s > 0 adds
  // (retries + 1) x per_try_s (every attempt timing out).
  LadderDistribution ladder_distribution(int layer = Failure::kAllLayers,
                                         double per_try_s = 0) const;
  // Min, mean, max and 99th percentile of that total.
  LadderStats ladder_stats(int layer = Failure::kAllLayers, double per_try_s = 0) const;
  // P(ladder total (+ attempts x per_try_s) > deadline_s).
  double p_exceeds(double deadline_s, int layer = Failure::kAllLayers, double per_try_s = 0) const;

  // The fluid engine's deadline plan: attempts from this number on fail
  // instead of retrying (attempts() when no deadline cuts the ladder).
  int last_planned_attempt() const { return last_planned_attempt_; }
  // The planned rule: the time from the failure of `attempt` to the deadline,
  // the request having spent `attempt` timeouts and the middles of backoffs
  // 1..attempt-1 (0 when that is past the deadline already).
  double deadline_left_s(int attempt) const;
  // Whether the failure is one the policy retries by kind (a timeout with
  // retry_on_timeout off is not, nor an answer outside retried_answers).
  // gRPC's throttling counts only those, and counts them even on the last attempt.
  bool retryable(const Failure& f) const {
    return f.timed_out ? settings_.retry_on_timeout
                       : (settings_.retried_answers & answer_bit(f.answer)) != 0;
  }

  // The decision after a failure, without drawing the delay (the fluid
  // engine splits the range over steps). Rules, in order: attempts left at
  // the layer, retry_on_timeout or the retried answers, then the deadline rule (planned_mean,
  // rest_of_ladder_mean; `fires` leaves the deadline to the engine's timer).
  // An answer's pushback replaces the backoff's range as `pushback` says.
  RetryDecision decide(const Failure& f) const;
  // The wait before the retry of `f`: its pushback where the client waits
  // one (client.pushback), else `backoff`.
  DelayRange pushback_delay(const Failure& f, DelayRange backoff) const;
  // Whether the retry of `f` waits its pushback instead of the backoff.
  bool waits_pushback(const Failure& f) const;
  // The ladder step the backoff of f's retry is drawn from: its retry
  // number less the retries that did not step the ladder on.
  static int ladder_step(const Failure& f) { return f.attempt - f.ladder_offset; }
  // The range of a waited pushback (waits_pushback(f)): gRPC's exact wait,
  // Envoy's [p, 1.5 p).
  DelayRange pushback_range(const Failure& f) const;
  // The same as decide(f), drawing the delay with `uniform(low, high)` (called
  // only when the range has a width, so a fixed ladder consumes no random numbers).
  template <typename Uniform>
  RetryDecision decide(const Failure& f, Uniform&& uniform) const {
    RetryDecision d = decide(f);
    if (!d.retries()) return d;
    d.delay_s =
        d.delay.high_s > d.delay.low_s ? uniform(d.delay.low_s, d.delay.high_s) : d.delay.low_s;
    return d;
  }

 private:
  int plan_deadline() const;
  Settings settings_;
  int attempts_ = 1;
  int last_planned_attempt_ = 1;
  std::vector<DelayRange> ranges_;   // by retry number (index 0 unused), for the engines' speed
  std::vector<double> mean_ladder_;  // deadline_rule rest_of_ladder_mean: middles, layer 0
};

}  // namespace retrystorm
