// A session-model run's report (engine: sessions): the run, its metrics, the
// hour table, the verdict and advice, and the Monte Carlo claim when runs > 1.
// Assembled here once; src/formats shows it, src/logs writes its logs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/session_advice.hpp"
#include "analysis/session_metrics.hpp"

namespace retrystorm {

struct SessionReport {
  sessions::SessionRun run;
  SessionMetrics metrics;
  std::vector<SessionHourRow> hours;
  std::string verdict;
  std::string claim;  // what the verdict claims, counted over Monte Carlo seeds
  std::vector<Advice> advice;
  std::optional<SessionMonteCarlo> montecarlo;  // when runs > 1
};

// Runs a validated scenario (Monte Carlo when its runs > 1); `log`, when
// given, receives the events of the reported run (replication 0).
SessionReport make_session_report(const Scenario& s, sessions::SessionSink* log = nullptr);

}  // namespace retrystorm
