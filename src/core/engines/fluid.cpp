// The fluid engine. Each numbered rule of "One step" in
// docs/fluid-model.md is one member function below, and step()
// calls them in that order.
#include "engines/fluid.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "engines/incident_window.hpp"
#include "engines/ring_queue.hpp"
#include "parallel/cancel.hpp"
#include "policies/backoff.hpp"
#include "policies/client_policy.hpp"
#include "policies/retry_state.hpp"

namespace retrystorm {

namespace {

// A group of attempts sent in the same step with the same attempt number.
struct Cohort {
  double amount;
  int sent_step;
  int16_t attempt;           // 1 = first attempt (validate: at most 10,000)
  bool after_error = false;  // its retry followed an error answer, not a timeout
};

// The server's FIFO queue of cohorts.
using CohortQueue = RingQueue<Cohort>;

// Where the retries of one attempt number land, relative to the failure
// instant, split exactly over steps (precomputed once per attempt number).
struct Landing {
  long offset_steps;
  double fraction;
};

// Where split_delay_over_steps puts a delay range from origin 0 with the
// horizon as beyond_step, without listing the steps: the first step, the
// last step inside the horizon (-1: none) and at most how many entries.
struct LandingSpan {
  long first;
  long last_inside;
  double count;
};

LandingSpan landing_span(DelayRange r, double step_s, long steps) {
  double lo = r.low_s / step_s, hi = r.high_s / step_s;
  auto holding = [&](double x) {
    return x >= static_cast<double>(steps) ? steps : std::max(0L, detail::step_holding(x));
  };
  long first = holding(lo);
  if (hi - lo <= detail::kLandEpsilon) return {first, first < steps ? first : -1, 1};
  long end = std::min(holding(hi - 2 * detail::kLandEpsilon) + 1, steps);  // exclusive
  double count = static_cast<double>(std::max(0L, end - first)) + (hi > steps ? 1 : 0);
  return {first, end > first ? end - 1 : -1, count};
}

class FluidEngine {
 public:
  explicit FluidEngine(const Scenario& s)
      : s_(s),
        steps_(s.steps()),
        timeout_steps_(s.timeout_steps()),
        policy_(ClientPolicy::of(s, Engine::fluid)),
        attempts_(policy_.attempts()),
        retry_(policy_, RetryBudget(policy_, s.demand.rate_per_s, s.step_s)),
        shape_(fluid_shape(s)),
        profiles_(s) {
    result_.scenario = s;
    result_.series.resize(static_cast<size_t>(steps_));
    incident_ = steps_of(s);
    // Landing tables only for attempts that can fail inside the horizon;
    // attempts with the same backoff range (past the cap) share one table.
    int tables = std::min(shape_.attempts, attempts_ - 1);
    landing_of_.assign(static_cast<size_t>(std::max(tables, 0)) + 1, 0);
    DelayRange previous{-1, -1};
    for (int a = 1; a <= tables; ++a) {
      DelayRange d = policy_.delay(a);
      if (landings_.empty() || d.low_s != previous.low_s || d.high_s != previous.high_s) {
        landings_.emplace_back();
        split_delay_over_steps(d, 0.0, s.step_s, 0, steps_, [&](long step, double fraction) {
          landings_.back().push_back({step, fraction});
        });
        previous = d;
      }
      landing_of_[a] = landings_.size() - 1;
    }
    // The ring holds every retry waiting in `due`: rows for the longest
    // backoff inside the horizon, columns for the attempt numbers reachable in
    // it (fluid_shape), so its size follows the work in flight, not the
    // horizon x attempts. Rows are a power of two: a step's row is a mask.
    ring_steps_ = shape_.ring_rows;
    columns_ = static_cast<size_t>(shape_.attempts) + 1;
    due_.assign(ring_steps_ * columns_, 0.0);
    // A budget that prices a retry by its cause keeps the retries after an
    // error answer apart (AWS: retry_cost vs timeout_cost).
    if (retry_.budget().prices_causes()) due_error_.assign(due_.size(), 0.0);
    // Requests whose backoff outlasts the deadline fail when it fires: a ring
    // over the longest wait, deadline_s.
    if (policy_.last_planned_attempt() < attempts_) {
      auto rows =
          static_cast<size_t>(std::min<double>(steps_, policy_.deadline_s() / s.step_s) + 2);
      deadline_due_.assign(std::bit_ceil(rows), 0.0);
    }
  }

  // retry_ points at policy_: an engine stays where it was built.
  FluidEngine(const FluidEngine&) = delete;
  FluidEngine& operator=(const FluidEngine&) = delete;

  RunResult run() {
    CancelPoll poll;  // the server's deadline (parallel/cancel.hpp)
    for (int t = 0; t < steps_; ++t) {
      poll();
      step(t);
    }
    finish();
    return std::move(result_);
  }

 private:
  void step(int t) {
    auto& series = result_.series;
    series.t_s[t] = t * s_.step_s;
    double capacity = capacity_and_demand(t);
    retry_.budget().begin_step(series.first_attempts[t]);
    fail_at_deadline_due(t);
    send_retries_due(t);
    enqueue(t);
    serve(t, capacity);
    give_up(t);
    series.backlog[t] = queued_;
  }

  // Rule 1. Capacity of the step; first attempts of the step.
  double capacity_and_demand(int t) {
    bool incident = incident_.contains(t);
    double capacity =
        s_.server.capacity_per_s * s_.step_s * (incident ? s_.incident.capacity_factor : 1.0);
    double first = s_.demand.rate_per_s * s_.step_s * (incident ? s_.incident.demand_factor : 1.0);
    if (profiles_.any) {
      const StepSpan span = step_span(s_, t, steps_);
      capacity *= profiles_.capacity_at(span);
      first *= profiles_.demand_at(span);
    }
    result_.series.capacity[t] = capacity;
    result_.series.first_attempts[t] = first;
    result_.user_requests += first;
    return capacity;
  }

  // Rule 3. Retries due now, lowest attempt first, each through the budget.
  // The part the budget does not allow fails its user request at once.
  void send_retries_due(int t) {
    sending_.clear();
    double* due = due_row(t);
    double* due_error = due_error_.empty() ? nullptr : due_error_row(t);
    for (int a = 2; a <= shape_.attempts; ++a) {  // no later attempt is ever due
      send_retry(t, a, std::exchange(due[a], 0.0), RetryCause::timeout);
      if (due_error) send_retry(t, a, std::exchange(due_error[a], 0.0), RetryCause::error);
    }
    sending_.push_back({result_.series.first_attempts[t], t, 1});
  }

  void send_retry(int t, int attempt, double amount, RetryCause cause) {
    if (amount <= 0) return;
    release_held(amount);  // admitted at the failure: now in flight (live_retries_)
    double sent = retry_.on_due(
        amount, {live_attempts_ + result_.series.first_attempts[t], live_retries_}, cause);
    double denied = amount - sent;
    if (denied > 0) {
      result_.series.budget_denied[t] += denied;
      fail_users(t, denied);
    }
    if (sent > 0) {
      result_.series.retries[t] += sent;
      sending_.push_back({sent, t, static_cast<int16_t>(attempt), cause == RetryCause::error});
    }
  }

  // Rule 4. Retries first (ascending attempt), then first attempts; with a
  // queue limit, what does not fit is rejected and fails at instant t.
  void enqueue(int t) {
    for (const Cohort& c : sending_) {
      double admitted = c.amount;
      if (s_.server.queue_limit > 0)
        admitted = std::min(c.amount, std::max(0.0, s_.server.queue_limit - queued_));
      if (admitted > 0) {
        queue_.push_back({admitted, t, c.attempt, c.after_error});
        queued_ += admitted;
        track_live(c.attempt, admitted);
      }
      double rejected = c.amount - admitted;
      if (rejected > 0) {
        result_.series.rejected[t] += rejected;
        attempt_failed(t, c.attempt, rejected, static_cast<double>(t), false,
                       s_.server.reject_status);
      }
    }
  }

  // Rule 5. Serve from the head of the queue; on time when the completion
  // instant is within the timeout of the send instant.
  void serve(int t, double capacity) {
    long completion_step = s_.service_completes == ServiceCompletes::start ? t : t + 1;
    double left = capacity;
    while (left > 0 && !queue_.empty()) {
      Cohort& head = queue_.front();
      double served = std::min(left, head.amount);
      bool on_time = completion_step - head.sent_step <= timeout_steps_;
      (on_time ? result_.series.goodput : result_.series.served_late)[t] += served;
      if (on_time) {
        result_.succeeded += served;
        retry_.budget().on_success(served, head.attempt,
                                   head.after_error ? RetryCause::error : RetryCause::timeout);
      }
      if (abandoned_at_head_ == 0) track_live(head.attempt, -served);
      left -= served;
      queued_ -= served;
      if (served < head.amount) {
        head.amount -= served;  // capacity ran out in the middle of the cohort
        break;
      }
      if (abandoned_at_head_ > 0) --abandoned_at_head_;
      queue_.pop_front();
    }
    if (queue_.empty()) queued_ = 0;  // no drift from subtracting split amounts
  }

  // Rule 6. Attempts sent at `sent` are given up at instant sent + timeout,
  // processed after the service of the step holding that instant.
  void give_up(int t) {
    int sent = s_.service_completes == ServiceCompletes::start ? t - timeout_steps_
                                                               : t - timeout_steps_ + 1;
    if (sent < 0) return;
    // Given-up cohorts sit at the head (FIFO); the oldest live ones follow
    // them. A step sends one cohort per attempt number, so each attempt
    // number gives up at most once here.
    double failure_instant = sent + timeout_steps_;
    size_t i = abandoned_at_head_;
    while (i < queue_.size() && queue_[i].sent_step == sent) {
      const Cohort& c = queue_[i];
      result_.series.gave_up[t] += c.amount;
      track_live(c.attempt, -c.amount);
      attempt_failed(t, c.attempt, c.amount, failure_instant, true);
      ++i;
    }
    if (s_.server.shed_abandoned) {
      // Shed at no capacity cost. Nothing abandoned stays queued when shedding,
      // so the given-up cohorts are exactly the head of the queue.
      for (size_t n = abandoned_at_head_; n < i; ++n) {
        result_.series.shed[t] += queue_.front().amount;
        queued_ -= queue_.front().amount;
        queue_.pop_front();
      }
      if (queue_.empty()) queued_ = 0;
    } else {
      abandoned_at_head_ = i;  // they stay, and will be served late
    }
  }

  // Requests in flight at the dependency (queued, caller still waiting).
  void track_live(int attempt, double amount) {
    live_attempts_ += amount;
    if (attempt > 1) live_retries_ += amount;
  }

  // A failed attempt (given up or rejected): retry after the backoff of
  // retry number `attempt`, never earlier than the next step; or, with no
  // attempts left (or a timeout the client does not retry), the user request
  // fails. A budget of a real system admits the retry now; a retry whose
  // backoff outlasts the deadline fails its request when the deadline fires.
  void attempt_failed(int t, int attempt, double amount, double failure_instant_steps,
                      bool timed_out, FailureClass answer = FailureClass::timeout) {
    // The stack as one ladder; cohorts carry no start time (the planned deadline rule).
    Failure f{.attempt = attempt, .timed_out = timed_out, .answer = answer};
    RetryOutcome o = retry_.on_failure(f, amount, {live_attempts_, held_retries_ + live_retries_});
    if (o.action == RetryAction::fail) {
      fail_users(t, amount);
      return;
    }
    settle_admission(t, o);
    amount = o.admitted;
    if (o.action == RetryAction::fail_at_deadline) {
      fail_at_deadline(t, amount,
                       failure_instant_steps + policy_.deadline_left_s(attempt) / s_.step_s);
      return;
    }
    if (o.action != RetryAction::retry) return;
    long origin = std::lround(failure_instant_steps);
    bool apart = !timed_out && !due_error_.empty();
    for (const Landing& l : landings_[landing_of_[attempt]]) {
      long step = std::max<long>(t + 1, origin + l.offset_steps);
      if (step >= steps_) {
        beyond_horizon_ += amount * l.fraction;  // still in flight at the end
        continue;
      }
      assert(attempt + 1 <= shape_.attempts);  // fluid_shape: later ones land beyond
      double* row = apart ? due_error_row(static_cast<int>(step)) : due_row(static_cast<int>(step));
      row[attempt + 1] += amount * l.fraction;
    }
  }

  void fail_users(int t, double amount) {
    result_.series.failed[t] += amount;
    result_.failed += amount;
  }

  // Every real system's budget decides at the failure, before the backoff;
  // what it refuses fails its user request at once. An admitted retry holds
  // its slot (Envoy) through the backoff until its outcome: held_retries_
  // while it waits, live_retries_ once sent.
  void settle_admission(int t, const RetryOutcome& o) {
    if (!retry_.admits_at_failure()) return;
    if (o.denied > 0) {
      result_.series.budget_denied[t] += o.denied;
      fail_users(t, o.denied);
    }
    held_retries_ += o.admitted;
  }

  // The request backs off past its deadline: it fails when the deadline
  // fires (the step holding `instant_steps`), its budget slot held until then.
  void fail_at_deadline(int t, double amount, double instant_steps) {
    if (amount <= 0) return;
    long step = std::max<long>(t, detail::step_holding(instant_steps));
    if (step >= steps_) {
      beyond_horizon_ += amount;  // still waiting at the end
    } else if (step == t) {
      release_held(amount);
      fail_users(t, amount);
    } else {
      deadline_due_[static_cast<size_t>(step) & (deadline_due_.size() - 1)] += amount;
    }
  }

  // The deadlines that fire in step t, before this step's retries are sent.
  void fail_at_deadline_due(int t) {
    if (deadline_due_.empty()) return;
    double amount =
        std::exchange(deadline_due_[static_cast<size_t>(t) & (deadline_due_.size() - 1)], 0.0);
    if (amount <= 0) return;
    release_held(amount);
    fail_users(t, amount);
  }

  void release_held(double amount) {
    if (retry_.admits_at_failure()) held_retries_ = std::max(0.0, held_retries_ - amount);
  }

  double* due_row(int step) {
    return &due_[(static_cast<size_t>(step) & (ring_steps_ - 1)) * columns_];
  }
  double* due_error_row(int step) {
    return &due_error_[(static_cast<size_t>(step) & (ring_steps_ - 1)) * columns_];
  }

  // Rule 7 at the end of the horizon: who is still in flight.
  void finish() {
    double in_flight = beyond_horizon_;
    for (double d : due_) in_flight += d;
    for (double d : due_error_) in_flight += d;
    for (double d : deadline_due_) in_flight += d;
    for (size_t i = abandoned_at_head_; i < queue_.size(); ++i) in_flight += queue_[i].amount;
    result_.in_flight = in_flight;
  }

  const Scenario& s_;
  int steps_;
  int timeout_steps_;
  ClientPolicy policy_;
  int attempts_;
  RetryState retry_;  // the budget's admission with the policy's decision
  FluidShape shape_;
  std::vector<std::vector<Landing>> landings_;  // distinct tables
  std::vector<size_t> landing_of_;              // by attempt number: its table
  size_t ring_steps_ = 0, columns_ = 0;
  std::vector<double> due_;        // due[step % ring][attempt]
  std::vector<double> due_error_;  // the same, retries after an error (prices_causes())
  double beyond_horizon_ = 0;
  double live_attempts_ = 0, live_retries_ = 0;
  double held_retries_ = 0;           // admitted at the failure, still in backoff
  std::vector<double> deadline_due_;  // by step (a ring): requests failing at their deadline
  CohortQueue queue_;
  size_t abandoned_at_head_ = 0;  // given-up cohorts still queued (no shedding)
  IncidentWindow incident_;       // the incident as steps
  StepProfiles profiles_;         // demand and capacity over time
  double queued_ = 0;
  std::vector<Cohort> sending_;  // this step's sends, in enqueue order
  RunResult result_;
};

}  // namespace

RunResult run_fluid(const Scenario& scenario) {
  return FluidEngine(scenario).run();
}

FluidShape fluid_shape(const Scenario& s) {
  FluidShape f;
  f.steps = s.steps();
  ClientPolicy policy = ClientPolicy::of(s, Engine::fluid);
  int attempts = policy.attempts();
  f.last_retrying = policy.last_planned_attempt();
  // A retry is sent at least max(1, shortest backoff) steps after a rejected
  // attempt was sent, or a timeout plus the shortest backoff after a given-up
  // one; rejections happen only with a queue limit.
  long fail_steps = s.server.queue_limit > 0 ? 0 : s.timeout_steps();
  long sent = 0, longest = 0;
  DelayRange previous{-1, -1};
  for (int a = 1; a < attempts; ++a) {  // retry number a sends attempt a + 1
    DelayRange d = policy.delay(a);
    LandingSpan span = landing_span(d, s.step_s, f.steps);
    f.landing_walk += span.count;
    if (a == 1 || d.low_s != previous.low_s || d.high_s != previous.high_s)
      f.landings += span.count;
    previous = d;
    longest = std::max(longest, span.last_inside);
    if (a >= f.last_retrying) break;
    sent += std::max(1L, fail_steps + span.first);
    if (sent >= f.steps) break;
    f.attempts = a + 1;
  }
  f.ring_rows = std::bit_ceil(static_cast<size_t>(std::min(longest, f.steps) + 2));
  return f;
}

}  // namespace retrystorm
