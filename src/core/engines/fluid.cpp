// The fluid engine. Each numbered rule of "One step t, in this order" in
// ../shared/spec/fluid-model.md is one member function below, and step()
// calls them in the spec's order.
#include "engines/fluid.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

#include "engines/ring_queue.hpp"
#include "policies/backoff.hpp"
#include "policies/budget.hpp"

namespace retrystorm {

namespace {
constexpr size_t kSeriesCount = 12;
}

void Series::bind(size_t steps) {
  double* p = storage_.data();
  for (auto* v : {&t_s, &capacity, &first_attempts, &retries, &goodput, &served_late, &failed,
                  &shed, &rejected, &backlog, &gave_up, &budget_denied}) {
    *v = std::span<double>(p, steps);
    p += steps;
  }
}

void Series::resize(size_t steps) {
  storage_.assign(kSeriesCount * steps, 0.0);
  bind(steps);
}

Series& Series::operator=(const Series& other) {
  if (this != &other) {
    storage_ = other.storage_;
    bind(other.size());
  }
  return *this;
}

namespace {

// A group of attempts sent in the same step with the same attempt number.
struct Cohort {
  double amount;
  int sent_step;
  int attempt;  // 1 = first attempt
};

// The server's FIFO queue of cohorts.
using CohortQueue = RingQueue<Cohort>;

// Where the retries of one attempt number land, relative to the failure
// instant, split exactly over steps (precomputed once per attempt number).
struct Landing {
  long offset_steps;
  double fraction;
};

class FluidEngine {
 public:
  explicit FluidEngine(const Scenario& s)
      : s_(s),
        steps_(s.steps()),
        timeout_steps_(s.timeout_steps()),
        attempts_(s.attempts()),
        budget_(s),
        landings_(static_cast<size_t>(attempts_) + 1) {
    result_.scenario = s;
    result_.series.resize(static_cast<size_t>(steps_));
    // The incident window as steps [first, end), the same steps in_incident() names.
    while (incident_first_step_ < steps_ && !s.in_incident(incident_first_step_))
      ++incident_first_step_;
    incident_end_step_ = incident_first_step_;
    while (incident_end_step_ < steps_ && s.in_incident(incident_end_step_)) ++incident_end_step_;
    long longest = 0;
    for (int a = 1; a < attempts_; ++a) {
      split_delay_over_steps(backoff_delay(s.client.backoff, a), 0.0, s.step_s, 0, steps_,
                             [&](long step, double fraction) {
                               landings_[a].push_back({step, fraction});
                               longest = std::max(longest, step);
                             });
    }
    // With a deadline, retry number a is sent only if the ladder up to it fits:
    // a timeouts plus the middle of each backoff range.
    // The ladder only grows, so the first retry that does not fit ends it.
    last_retrying_attempt_ = attempts_;
    double elapsed = 0;
    for (int a = 1; a < attempts_ && s.client.deadline_s > 0; ++a) {
      DelayRange d = backoff_delay(s.client.backoff, a);
      elapsed += s.client.timeout_s + (d.low_s + d.high_s) / 2;
      if (elapsed > s.client.deadline_s + 1e-9) {
        last_retrying_attempt_ = a;
        break;
      }
    }
    // Retries land at most `longest` steps after a failure, and never beyond
    // the horizon (those stay in flight), so a ring of that many steps holds
    // every retry waiting in `due`.
    // A power of two, so finding a step's row is a mask, not a division.
    ring_steps_ = std::bit_ceil(static_cast<size_t>(std::min<long>(longest, steps_) + 2));
    due_.assign(ring_steps_ * (static_cast<size_t>(attempts_) + 1), 0.0);
  }

  RunResult run() {
    for (int t = 0; t < steps_; ++t) step(t);
    finish();
    return std::move(result_);
  }

 private:
  void step(int t) {
    auto& series = result_.series;
    series.t_s[t] = t * s_.step_s;
    double capacity = capacity_and_demand(t);
    budget_.begin_step(series.first_attempts[t]);
    send_retries_due(t);
    enqueue(t);
    serve(t, capacity);
    give_up(t);
    series.backlog[t] = queued_;
  }

  // Rule 1. Capacity of the step; first attempts of the step.
  double capacity_and_demand(int t) {
    bool incident = incident_first_step_ <= t && t < incident_end_step_;
    double capacity =
        s_.server.capacity_per_s * s_.step_s * (incident ? s_.incident.capacity_factor : 1.0);
    double first = s_.demand.rate_per_s * s_.step_s * (incident ? s_.incident.demand_factor : 1.0);
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
    for (int a = 2; a <= attempts_; ++a) {
      double amount = std::exchange(due[a], 0.0);
      if (amount <= 0) continue;
      double sent = budget_.enabled()
                        ? budget_.take(amount, {live_attempts_ + result_.series.first_attempts[t],
                                                live_retries_})
                        : amount;
      double denied = amount - sent;
      if (denied > 0) {
        result_.series.budget_denied[t] += denied;
        fail_users(t, denied);
      }
      if (sent > 0) {
        result_.series.retries[t] += sent;
        sending_.push_back({sent, t, a});
      }
    }
    sending_.push_back({result_.series.first_attempts[t], t, 1});
  }

  // Rule 4. Retries first (ascending attempt), then first attempts; with a
  // queue limit, what does not fit is rejected and fails at instant t.
  void enqueue(int t) {
    for (const Cohort& c : sending_) {
      double admitted = c.amount;
      if (s_.server.queue_limit > 0)
        admitted = std::min(c.amount, std::max(0.0, s_.server.queue_limit - queued_));
      if (admitted > 0) {
        queue_.push_back({admitted, t, c.attempt});
        queued_ += admitted;
        track_live(c.attempt, admitted);
      }
      double rejected = c.amount - admitted;
      if (rejected > 0) {
        result_.series.rejected[t] += rejected;
        budget_.on_attempt_failed(rejected);
        attempt_failed(t, c.attempt, rejected, static_cast<double>(t), false);
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
        budget_.on_success(served, head.attempt);
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
      budget_.on_attempt_failed(c.amount);
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
  // attempts left (or none that fit the deadline, or a timeout the client does
  // not retry), the user request fails.
  void attempt_failed(int t, int attempt, double amount, double failure_instant_steps,
                      bool timed_out) {
    if (attempt >= last_retrying_attempt_ || (timed_out && !s_.client.retry_on_timeout)) {
      fail_users(t, amount);
      return;
    }
    long origin = std::lround(failure_instant_steps);
    for (const Landing& l : landings_[attempt]) {
      long step = std::max<long>(t + 1, origin + l.offset_steps);
      if (step >= steps_) {
        beyond_horizon_ += amount * l.fraction;  // still in flight at the end
        continue;
      }
      due_row(static_cast<int>(step))[attempt + 1] += amount * l.fraction;
    }
  }

  void fail_users(int t, double amount) {
    result_.series.failed[t] += amount;
    result_.failed += amount;
  }

  double* due_row(int step) {
    return &due_[(static_cast<size_t>(step) & (ring_steps_ - 1)) * (attempts_ + 1)];
  }

  // Rule 7 at the end of the horizon: who is still in flight.
  void finish() {
    double in_flight = beyond_horizon_;
    for (double d : due_) in_flight += d;
    for (size_t i = abandoned_at_head_; i < queue_.size(); ++i) in_flight += queue_[i].amount;
    result_.in_flight = in_flight;
  }

  const Scenario& s_;
  int steps_;
  int timeout_steps_;
  int attempts_;
  RetryBudget budget_;
  std::vector<std::vector<Landing>> landings_;  // by attempt number
  size_t ring_steps_ = 0;
  std::vector<double> due_;  // due[step % ring][attempt]
  double beyond_horizon_ = 0;
  int last_retrying_attempt_ = 1;  // attempts from here on fail instead of retrying
  double live_attempts_ = 0, live_retries_ = 0;
  CohortQueue queue_;
  size_t abandoned_at_head_ = 0;  // given-up cohorts still queued (no shedding)
  int incident_first_step_ = 0, incident_end_step_ = 0;  // [first, end)
  double queued_ = 0;
  std::vector<Cohort> sending_;  // this step's sends, in enqueue order
  RunResult result_;
};

}  // namespace

RunResult run_fluid(const Scenario& scenario) {
  return FluidEngine(scenario).run();
}

}  // namespace retrystorm
