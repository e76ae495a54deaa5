// The agent (per-request, discrete-event) engine: every user request, every
// call of a retrying layer and every attempt at the server is an entity.
// Same scenario keys as the fluid engine plus the agent keys, the same policy
// code (backoff, jitter, budgets, shedding), and the same Series, so every
// view of a RunResult works unchanged. See docs/agent-engine.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engines/run_result.hpp"
#include "model/scenario.hpp"
#include "session_log/request_log.hpp"

namespace retrystorm {

// One row of requests.csv (docs/log-formats.md): one attempt.
struct AttemptRow {
  uint64_t request_id;
  int attempt;  // at its layer, 1 = first
  double sent_s;
  double done_s;  // NaN: never answered
  request_log::AttemptOutcome outcome;
  int layer;      // 1 = outermost retrying layer; the last layer calls the server
  int call = -1;  // a graph's call (its index in calls); -1 without a graph
};

class AttemptSink {
 public:
  virtual ~AttemptSink() = default;
  virtual void row(const AttemptRow& r) = 0;
};

// What the engine measured beyond the Series (theory tests, benchmarks).
struct AgentStats {
  uint64_t events = 0;           // events processed (stale timers not counted)
  uint64_t server_arrivals = 0;  // attempts that reached the server (rejected ones too)
  uint64_t completed = 0;        // attempts served
  double sojourn_sum_s = 0;      // served: completion - arrival at the server
  double wait_sum_s = 0;         // served: service start - arrival at the server
  double area_in_system = 0;     // integral over [0, horizon] of attempts at the server
  uint64_t peak_calls = 0;       // pool high-water marks: memory is bounded by these
  uint64_t peak_jobs = 0;
};

// Multilevel splitting on the agent engine (docs/risk.md, "Rare tipping"):
// a walk is its scenario's seed plus reseeds, each restarting the generator
// after a given number of events, so that any point of any walk can be
// reached again by replaying it, and continued with fresh randomness.
struct Reseed {
  uint64_t after_events = 0;  // events processed before the generator restarts
  uint64_t seed = 0;
};
struct SplitControl {
  std::vector<Reseed> reseeds;  // in event order
  int64_t stop_at_backlog = 0;  // stop after the first event that leaves this many attempts
                                // at the server (once past the last reseed); 0 = never
  // Filled in when the run stopped there.
  std::optional<uint64_t> stopped_after_events;
  double stopped_s = 0;
};

struct AgentOptions {
  AttemptSink* log = nullptr;     // requests.csv rows, when wanted
  AgentStats* stats = nullptr;    // filled in when the run ends
  SplitControl* split = nullptr;  // a splitting walk: its reseeds and where it stops
  // A plain run (one layer, none of the rarer features) runs on the engine
  // compiled for it; false runs it on the general one (the same numbers:
  // AgentEngine.PlainRunsGiveTheGeneralEnginesNumbers).
  bool plain_engine = true;
};

// Runs a validated scenario (validate()) with the agent engine.
RunResult run_agent(const Scenario& s, const AgentOptions& options = {});

// The agent keys' own checks (called by validate() when engine is agent).
void validate_agent(const Scenario& s, const RunLimits& limits);

// client.rate_limiter's own checks: at most 100,000 limiters (one per client
// instance), on a layer that does not hedge. The graph engine checks each call.
void validate_rate_limiter(const Scenario& s);

// client.layer_timeouts_s as numbers, one per retrying layer (outermost
// first); client.timeout_s for every layer when the key is empty.
std::vector<double> layer_timeouts(const Scenario& s);

}  // namespace retrystorm
