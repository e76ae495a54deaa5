// What one run of an engine produces: per-step series and the end state.
// The metrics, the trace, the terminal report, the JSON and the page are
// all views of this one type.
#pragma once

#include <vector>

#include "model/scenario.hpp"

namespace retrystorm {

// Amounts per step (not per second), as contract.md "JSON result" lists them.
struct Series {
  std::vector<double> t_s;
  std::vector<double> capacity;
  std::vector<double> first_attempts;
  std::vector<double> retries;        // retries sent (passed the budget)
  std::vector<double> goodput;        // served on time
  std::vector<double> served_late;    // served after the caller gave up
  std::vector<double> failed;         // user requests that failed in this step
  std::vector<double> shed;           // given-up attempts dropped from the queue
  std::vector<double> rejected;       // attempts refused by a full queue
  std::vector<double> backlog;        // queued at the end of the step
  std::vector<double> gave_up;        // attempts given up by their client
  std::vector<double> budget_denied;  // retries the budget did not allow

  void resize(size_t steps);
  size_t size() const { return t_s.size(); }
};

struct RunResult {
  Scenario scenario;
  Series series;
  // Where every user request stands at the end of the horizon.
  double user_requests = 0;
  double succeeded = 0;
  double failed = 0;
  double in_flight = 0;  // queued and not given up, or waiting to retry
};

}  // namespace retrystorm
