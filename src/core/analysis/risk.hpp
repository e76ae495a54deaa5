// How likely and how long (docs/risk.md): at each load, the chance that
// ordinary randomness tips a service into the stuck state within a horizon,
// the mean time until it does, and once pushed there, the chance and mean
// time of leaving it on its own; estimated from replications of the agent
// engine, with the exact Markov chain beside them where the scenario is one.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/markov/retry_chain.hpp"
#include "analysis/markov/splitting.hpp"
#include "analysis/sweep.hpp"
#include "engines/agent/agent.hpp"
#include "engines/montecarlo.hpp"
#include "engines/run_result.hpp"
#include "model/scenario.hpp"
#include "parallel/cancel.hpp"

namespace retrystorm {

// Stuck: more than one timeout of work queued and goodput below the
// recovery fraction of demand over the last timeout; healthy again: both
// back. In between, the state stays what it was.
struct StuckRule {
  double backlog_above = 0;  // attempts queued at the end of a step
  double goodput_below = 0;  // share of new requests served in time
  int window_steps = 1;      // goodput is judged over this many steps (at most the run's)
  double timeout_s = 0;      // the timeout the rule counts in
};
StuckRule stuck_rule(const Scenario& s);
// The timeout of an attempt at the server as the scenario's engine reads the
// policy: the innermost layer's, client.layer_timeouts_s over
// client.timeout_s on the agent engine. The stuck rule and the step-down's
// holds count in it.
double stuck_timeout_s(const Scenario& s);
// A run that is no storm, whatever its recovery criterion reads at the end
// (the agent engine's goodput at a few requests a second falls short of
// demand by chance): no request failed, the backlog is not growing, and the
// queue at the end holds no more than the stuck rule's depth, one timeout of
// work, so new requests are served in time. A queue held full by retries
// that never run out (nobody fails, goodput 0) is a storm.
bool no_storm(const RunResult& run, const Metrics& m);
std::string describe(const StuckRule& rule, const Scenario& s);

// One run read with the rule: when it first became stuck, and when it was
// healthy again after `from_s` (its push's end) while stuck then.
struct Passage {
  std::optional<double> enter_s;
  bool stuck_at_from = false;
  std::optional<double> leave_s;             // after from_s, when stuck_at_from
  std::optional<double> left_after_enter_s;  // healthy again, from enter_s
  double end_s = 0;
};
Passage read_passage(const RunResult& run, const StuckRule& rule, double from_s = 0);

// The mean of an exponential waiting time from runs that saw it (events)
// or were cut off first, over the time all of them watched (exposure), with
// its exact 95% interval; no event: the mean is at least `low`.
struct WaitingTime {
  int events = 0;
  double exposure_s = 0;
  std::optional<double> mean_s;
  double low_s = 0;
  std::optional<double> high_s;  // none: not bounded above
  // It happened within the horizon every time (a chance of 1): no mean to
  // give, and without memory a chance of 1 within any time.
  bool certain = false;
  // P(it happens within t) = 1 - exp(-t / mean), with the interval's ends.
  Share within(double t_s) const;
};
WaitingTime waiting_time(int events, double exposure_s);
// The same from the chance of it happening within horizon_s (and that
// chance's 95% interval), assuming no memory: mean = horizon / -ln(1 - p);
// a chance of 1 gives no mean (certain).
WaitingTime waiting_time_from_chance(double p, double low, double high, double horizon_s);

// Tipping by chance, estimated by multilevel splitting on the agent engine
// (docs/risk.md, "Rare tipping"): stages up levels of attempts at the server
// to the stuck rule's backlog, then a last stage judged by the rule itself.
struct RareTip {
  double p = 0, low = 0, high = 0;  // the chance of tipping within the horizon, 95%
  WaitingTime enter;                // the mean time to tip, from that chance
  std::vector<int64_t> levels;      // attempts at the server, stage by stage
  std::vector<double> factors;      // per stage (and the rule's), the mean share that made it
  int effort = 0, runs = 0;         // walks per stage; independent splitting runs
  long engine_runs = 0;             // the work: walks run in all
  std::vector<Reseed> tipped_path;  // a walk that tipped: its reseeds (seed hashed from --seed)
  // Whether any walk passed every stage: without one, p and its interval
  // are 0 for want of evidence, not an estimate.
  bool reached = false;
  int stages_passed = 0;  // the stages some walk passed (levels, then the rule's)
};

struct RiskLevel {
  double load = 1;  // multiple of the scenario's demand
  double demand_per_s = 0;
  Share enter_within_horizon;  // from empty, no scripted incident
  WaitingTime enter;
  Share pushed;                // the scripted incident left it stuck
  Share leave_within_horizon;  // of those pushed, healthy again by the end
  WaitingTime leave;
  std::optional<double> tipped_seed;  // the first replication that tipped: replay it
  std::optional<markov::RetryChainFigures> exact;
  std::string exact_note;       // why there is no exact chain, or its assumptions
  std::optional<RareTip> rare;  // with RiskOptions::splitting
};

struct RiskOptions {
  std::vector<double> loads = {1.0};
  int runs = 0;          // 0: the scenario's runs when above 1, else 100
  double horizon_s = 0;  // 0: the scenario's horizon
  unsigned threads = 0;
  bool exact = true;  // the Markov chain beside, when the scenario is one
  // Multilevel splitting beside plain Monte Carlo, for tips too rare to see.
  bool splitting = false;
  int split_effort = 40;                  // walks per stage
  int split_runs = 8;                     // independent splitting runs (the interval's spread)
  int split_levels = 8;                   // stages up to the stuck backlog, before the rule's own
  int max_steps = RunLimits{}.max_steps;  // a run's steps at most (the server's are fewer)
  CancelCheck cancelled;
};

struct RiskResult {
  Scenario scenario;  // as run: agent engine, the horizon
  StuckRule rule;
  int runs = 0;
  // The scenario's own runs key (scenario has 1): a replay of one walk
  // (run --walk) needs runs 1 set where it is not.
  int scenario_runs = 1;
  std::vector<RiskLevel> levels;
};

// The hysteresis loop across the loads: going up, the lowest load at which
// at least half the runs tip by chance within the horizon; coming down
// after a push, the highest load at which at least half of those stuck are
// healthy again by the horizon. None when no load qualifies.
struct Hysteresis {
  std::optional<double> tipping_load;
  std::optional<double> recovery_load;
};
Hysteresis hysteresis_of(const RiskResult& r);

// What one load's replications saw, apart from the estimates, so that a
// range of replications can run anywhere (a shard, a Dask worker) and the
// estimates be taken once over all of them, in replication order: the same
// answer as one machine's.
// One splitting replica's findings (RiskOptions::splitting): its product of
// factors, the factors, its walks and, when it tipped, a walk that did.
struct SplitEvidence {
  double product = 0;
  std::vector<double> factors;
  long walks = 0;
  std::vector<Reseed> tipped_path;
};
struct RiskEvidence {
  std::vector<Passage> calm;         // per replication, no incident
  std::vector<Passage> pushed;       // per replication, with the incident (none without one)
  std::vector<SplitEvidence> split;  // with splitting: the range's splitting replicas
};
// The splitting replicas that go with replications [first, first + count)
// of `runs`: the same share of split_runs, so that ranges that cover the
// replications once cover the replicas once.
std::pair<int, int> split_range(size_t first, size_t count, size_t runs, int split_runs);
// Replications [first, first + count) at each load of o.loads, in order.
std::vector<RiskEvidence> gather_risk(const Scenario& base, const RiskOptions& o, size_t first,
                                      size_t count);
// The estimates from every replication's evidence (per load, replication 0
// first), with the exact chain and splitting as asked.
RiskResult summarize_risk(const Scenario& base, const RiskOptions& o,
                          const std::vector<RiskEvidence>& evidence);

// Whether a scripted incident pushes the runs (a second set of runs, with
// it, for leaving); incidents at random are part of the quiet runs instead.
bool scripted_push(const Scenario& s);

// The scenario the estimates run (InputError when nothing in it is random
// or it is not one open-loop population before one server).
Scenario risk_scenario(const Scenario& s, const RiskOptions& o);
RiskResult assess_risk(const Scenario& s, const RiskOptions& o);
int risk_runs(const Scenario& s, const RiskOptions& o);

// The chance that `quiet` (a risk scenario at one load, no incident) tips
// within its horizon, by fixed-effort splitting over replayed agent runs.
RareTip split_tipping(const Scenario& quiet, const StuckRule& rule, const RiskOptions& o);
// The same in parts: replicas [first, first + count), and the estimate over
// all of them (in replica order).
std::vector<SplitEvidence> split_tipping_replicas(const Scenario& quiet, const StuckRule& rule,
                                                  const RiskOptions& o, int first, int count);
RareTip rare_tip_of(const std::vector<SplitEvidence>& replicas, const StuckRule& rule,
                    const RiskOptions& o, double horizon_s);
// The chance that the attempts at the server reach levels.back() within
// the horizon, by the same splitting without the rule's stage: what the
// exact chain answers too (tests/rare_tipping_test.cpp).
RareTip split_backlog(const Scenario& quiet, const std::vector<int64_t>& levels,
                      const RiskOptions& o);
// The stages' levels of attempts at the server: `count` steps up to the
// first backlog the rule calls deep.
std::vector<int64_t> split_levels(const StuckRule& rule, int count);
// Agent runs one splitting estimate takes at most.
double split_engine_runs(const RiskOptions& o);

// Runs side by side, replications or a stage's walks: --threads (0: every
// core), at most as many as fit in one request's memory (the price is of
// one run).
unsigned risk_threads(const Scenario& s, const RiskOptions& o);
// The splitting plan on `quiet`: `levels` stages, and the rule's when judged.
markov::SplitPlan split_plan(const Scenario& quiet, size_t levels, bool judged,
                             const RiskOptions& o);

// The metastable region: risk at each value of one policy knob (a numeric
// key: client.retries, client.timeout_s, client.budget.ratio, ...) and each
// load; the results in the knob's order.
struct RiskMap {
  SweepAxis knob;
  double operating_value = 0;  // the scenario's own value of the knob
  std::vector<RiskResult> rows;
};
RiskMap assess_risk_map(const Scenario& s, const SweepAxis& knob, const RiskOptions& o);
// The same in parts, as gather_risk and summarize_risk: per knob value.
std::vector<std::vector<RiskEvidence>> gather_risk_map(const Scenario& s, const SweepAxis& knob,
                                                       const RiskOptions& o, size_t first,
                                                       size_t count);
RiskMap summarize_risk_map(const Scenario& s, const SweepAxis& knob, const RiskOptions& o,
                           const std::vector<std::vector<RiskEvidence>>& evidence);
// The knob's values, checked (at most kRiskMapValues; no splitting).
std::vector<double> risk_map_values(const SweepAxis& knob, const RiskOptions& o);
constexpr size_t kRiskMapValues = 50;

// The most states of the exact chain printed beside the estimates (a few
// seconds of solving).
constexpr double kRiskChainStates = 30000;

// The exact chain's parameters for this scenario at this load, or why it
// has none.
std::optional<markov::RetryChainParams> chain_params(const Scenario& s, double load,
                                                     std::string& why_not);

}  // namespace retrystorm
