// A scenario for `engine: sessions` that replays an analyzed incident: its
// demand profile, dependency timeline, deadline and retry policy, read from
// the log (docs/sessions.md names the keys). `analyze --emit-scenario`
// writes it as YAML.
#pragma once

#include <string>
#include <vector>

#include "analysis/incident/report.hpp"
#include "model/scenario.hpp"

namespace retrystorm::incident {

struct ReplayKey {
  std::string path;   // "client.backoff.base_s"
  std::string value;  // as YAML writes it
  bool text = false;  // a text key: quoted
  std::string note;   // where the value came from
};

// Where the retry policy comes from when the log does not show it: a
// scheduler preset's client (the session engine's own defaults are those of
// every engine, not of the scheduler incident).
struct ReplayFallback {
  std::string name;   // "the scheduler-normal-day preset", for the notes
  Scenario scenario;  // its client keys are the ones used
};

// The keys in the order a scenario file lists them (grouped by section).
std::vector<ReplayKey> replay_keys(const Report& r, const ReplayFallback& fallback);

// The dependency's state hour by hour, as api.timeline text:
// "0d19:00 dead, 1d09:00 429:0.55, 2d22:00 healthy".
std::string replay_timeline(const Report& r);

}  // namespace retrystorm::incident
