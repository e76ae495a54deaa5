// The scenario: every input of a run. Keys and defaults follow
// ../shared/spec/contract.md ("Scenario"); semantics follow fluid-model.md.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace retrystorm {

enum class ServiceCompletes { start, end };
enum class Jitter { none, full, equal };
enum class BudgetKind { none, token_bucket, window };
// Which recovery time decides "recovered" (verdict, ladder, tipping point).
enum class RecoveryCriterion { failures, goodput };
enum class LadderMode { cumulative, single };

// A value set on a scenario key by path ("client.retries" = 0).
using KeyValue = std::variant<bool, double, std::string>;

struct LadderRow {
  std::string name;                                   // "+ 10% retry budget"
  std::string change;                                 // one line: what this row changes
  std::vector<std::pair<std::string, KeyValue>> set;  // path = value, in order
};

struct Ladder {
  LadderMode mode = LadderMode::cumulative;
  std::vector<LadderRow> rows;  // empty: the generic ladder is used
};

struct Backoff {
  double base_s = 1;
  double multiplier = 2;
  double cap_s = 0;  // 0 = no cap
  Jitter jitter = Jitter::none;
};

struct Budget {
  BudgetKind kind = BudgetKind::none;
  double ratio = 0.1;
  double window_s = 10;
};

struct Scenario {
  std::string name = "custom";
  std::string description;
  std::string engine = "fluid";
  double horizon_s = 300;
  double step_s = 1;
  ServiceCompletes service_completes = ServiceCompletes::start;

  struct {
    double rate_per_s = 80;
  } demand;

  struct {
    double capacity_per_s = 100;
    double queue_limit = 0;  // 0 = unbounded
    bool shed_abandoned = false;
  } server;

  struct {
    double start_s = 60;
    double duration_s = 20;
    double capacity_factor = 0.4;
    double demand_factor = 1.0;
  } incident;

  struct {
    double timeout_s = 5;
    int layers = 1;
    int retries = 3;
    Backoff backoff;
    Budget budget;
  } client;

  struct {
    double goodput_fraction = 0.9;
    RecoveryCriterion criterion = RecoveryCriterion::failures;
  } recovery;

  struct {
    double grid_s = 0;  // 0 = automatic (ten steps)
  } tipping;

  Ladder ladder;

  // Derived quantities, named as the spec names them.
  int steps() const;              // horizon_s / step_s
  int timeout_steps() const;      // K = timeout_s / step_s
  int attempts() const;           // (retries + 1)^layers
  double incident_end_s() const;  // start_s + duration_s
  bool in_incident(int step) const;
};

// Limits that protect a run (and the server) from inputs too large to run.
struct RunLimits {
  int max_steps = 1'000'000;
  int max_attempts = 10'000;
};

}  // namespace retrystorm
