#include "analysis/session_report.hpp"

#include "analysis/session_calibration.hpp"
#include "engines/sessions/session_engine.hpp"

namespace retrystorm {

using sessions::SessionRun;

SessionReport make_session_report(const Scenario& s, sessions::SessionSink* log) {
  SessionReport r;
  // The reported run is replication 0 (the scenario's seed), logged if asked.
  if (s.runs > 1) {
    auto claim = [](const SessionRun& run, const SessionMetrics& m) {
      return session_verdict(run, m).claim;
    };
    r.montecarlo = run_session_montecarlo(s, 0, 0, log, claim);
    r.run = r.montecarlo->first;
  } else {
    r.run = sessions::run_sessions(s, {log});
  }
  r.metrics = session_metrics(r.run);
  r.hours = session_hours(r.run);
  SessionVerdict v = session_verdict(r.run, r.metrics);
  r.verdict = v.headline;
  r.claim = v.claim;
  r.advice = advise_sessions(r.run, r.metrics);
  return r;
}

}  // namespace retrystorm
