// What one run of an engine produces: per-step series and the end state.
// The metrics, the trace, the terminal report, the JSON and the page are
// all views of this one type.
#pragma once

#include <span>
#include <vector>

#include "analysis/latency_histogram.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// Amounts per step (not per second), as contract.md "JSON result" lists them.
// All series share one allocation: a run allocates (and frees) one block,
// which keeps short runs cheap.
struct Series {
  std::span<double> t_s;
  std::span<double> capacity;
  std::span<double> first_attempts;
  std::span<double> retries;        // retries sent (passed the budget)
  std::span<double> goodput;        // served on time
  std::span<double> served_late;    // served after the caller gave up
  std::span<double> failed;         // user requests that failed in this step
  std::span<double> shed;           // given-up attempts dropped from the queue
  std::span<double> rejected;       // attempts refused by a full queue
  std::span<double> backlog;        // queued at the end of the step
  std::span<double> gave_up;        // attempts given up by their client
  std::span<double> budget_denied;  // retries the budget did not allow

  Series() = default;
  Series(const Series& other) { *this = other; }
  Series& operator=(const Series& other);
  Series(Series&&) = default;  // moving the storage keeps the spans valid
  Series& operator=(Series&&) = default;

  void resize(size_t steps);  // every series zero
  size_t size() const { return t_s.size(); }

 private:
  void bind(size_t steps);
  std::vector<double> storage_;
};

struct RunResult {
  Scenario scenario;
  Series series;
  // Where every user request stands at the end of the horizon.
  double user_requests = 0;
  double succeeded = 0;
  double failed = 0;
  double in_flight = 0;  // queued and not given up, or waiting to retry
  // Per-request engines only: arrival to success of each successful request.
  LatencyHistogram success_latency;
};

}  // namespace retrystorm
