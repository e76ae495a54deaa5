// The session model of the scheduler incident (engine: sessions): a
// discrete-event simulation in which every session and every item is an
// entity. Rules and calibrated defaults: docs/sessions.md;
// the code follows its sections in order. See docs/sessions.md.
#pragma once

#include "engines/sessions/session_run.hpp"
#include "model/scenario.hpp"

namespace retrystorm::sessions {

struct SessionOptions {
  SessionSink* log = nullptr;  // events.jsonl lines, when wanted
};

// Runs a validated scenario (validate()) with the session model.
SessionRun run_sessions(const Scenario& s, const SessionOptions& options = {});

// The session keys' own checks (called by validate() for engine: sessions).
void validate_sessions(const Scenario& s, const RunLimits& limits);

// The sleeps of the retry ladder (client.retries steps of client.backoff),
// each at the middle of its range: what "the ladder" adds up to.
std::vector<double> ladder_s(const Scenario& s);

}  // namespace retrystorm::sessions
