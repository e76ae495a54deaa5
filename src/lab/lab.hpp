// `retrystorm lab` (docs/lab.md): a scenario run for real on 127.0.0.1 — the
// backend process, optionally a real proxy that retries, the load generator —
// and the same scaled scenario predicted by the agent and fluid engines.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/metrics.hpp"
#include "analysis/summary.hpp"
#include "engines/run_result.hpp"
#include "lab/clock.hpp"

namespace retrystorm::lab {

// What this machine sustains: the generator falls behind between 5,000 and
// 8,000 attempts/s on reused connections (docs/lab.md, "Capacity of this
// machine"); half that leaves room for new connections in an outage and a
// proxy on the same cores. Scenarios whose peak attempt rate is above it are
// refused with a suggested --scale.
inline constexpr double kMaxAttemptsPerS = 2500;

// A bin is disturbed by a stall of the machine when a timer of the generator
// or the backend due in it fired more than this share of a bin late: that
// moves as large a share of the bin's completions into a later bin (docs/lab.md,
// "Stalls of the machine").
inline constexpr double kStallBinFraction = 0.05;

// The machine kept time (docs/lab.md, "Could the machine keep time?") when
// the p99 of each process's timer lateness is below this and no timer fired
// later than worst_lateness_allowed_s.
inline constexpr double kMaxTimingErrorP99S = 0.05;

inline constexpr const char* kThroughNames[] = {"direct", "haproxy", "nginx", "grpc"};

struct LabOptions {
  Scenario scenario;  // validated, not scaled
  std::string through = "direct";
  std::string config_path;  // --config: the layer's retry settings instead of the export
  double scale = 1;
  double bin_s = 0.5;   // the measurement's step (seconds per bin)
  std::string program;  // the retrystorm binary that serves as the backend
  // A line of progress (about once a second).
  std::function<void(const std::string&)> progress;
};

struct LabRun {
  RunResult run;
  Metrics metrics;
  Verdict verdict;
};

// A chain of services (docs/lab.md, "A chain of services"): one backend
// process per service, at most this many.
inline constexpr int kMaxChainServices = 5;

// One service of a chain, measured beside predicted: attempts per user
// request within 25 % (or 0.1), and with a server the share of its arrivals
// served while their caller waited within 5 points.
struct HopAgreement {
  std::string service;
  bool serves = false;
  double measured_per_request = 0, predicted_per_request = 0;
  double measured_served_share = 0, predicted_served_share = 0;
  bool attempts = false, served = false;
};
std::vector<HopAgreement> hop_agreement(const RunResult& measured, const RunResult& predicted);

struct LabResult {
  std::string through;
  double scale = 1;
  double bin_s = 0.5;
  Scenario scaled;                 // what ran: rates and capacities x scale
  LabRun measured;                 // the processes
  LabRun predicted;                // the agent engine, same scaled scenario and seed, step bin_s
  LabRun fluid;                    // the fluid engine on the scaled scenario
  bool fluid_ran = true;           // false where the fluid engine refuses (a graph, a breaker)
  std::vector<HopAgreement> hops;  // a chain: per service
  TimingError generator_error, backend_error;
  // --through grpc: from the generator starting a call to the backend
  // receiving its first attempt (C-core's per-attempt timer runs meanwhile).
  TimingError grpc_transit;
  // How long before the backend's give-up instant for an attempt (its
  // caller's, or arrival + the attempt's timeout) the caller's leaving
  // reached the backend: a closed connection, a gRPC cancellation. Signed.
  TimingError give_up_lead;
  // From the backend sending an answer to the generator receiving it.
  TimingError answer_transit;
  // The delays between caller and backend, from the measurement (see
  // delays_of in lab_run.cpp): how long after the caller gave up the backend
  // learns it (signed: below zero, the caller gives up after the backend's
  // instant), and an answer's way back. The prediction runs with them as
  // server.shed_lag_s and server.answer_delay_s (docs/lab.md).
  double give_up_gap_s = 0, answer_way_back_s = 0;
  // Attempts the backend finished before its give-up instant for them, after
  // the caller had closed or cancelled: served late, not goodput.
  double served_in_time_after_caller_left = 0;
  double connection_errors = 0;
  // Stalls: the start of each disturbed bin, and the measured goodput recovery
  // with those bins counted like any other (the measured metrics leave them out).
  std::vector<double> disturbed_t_s;
  std::optional<double> goodput_recovery_counting_stalls_s;
  std::string layer_config;     // the proxy's configuration, as run
  std::string imported_policy;  // its retry settings read back as scenario keys
  bool interrupted = false;
  double interrupted_at_s = 0;  // where the measurement stopped (interrupted)
  // The latest any timer of any process fired, and the most the comparison
  // allows (worst_lateness_allowed_s).
  double worst_lateness_s = 0, worst_lateness_limit_s = 0;
  // The processes it started (all stopped and reaped before run_lab returns).
  std::vector<int> pids;
};

// Rates and capacities x k; every time as it is (so queues keep their shape).
Scenario scale_scenario(const Scenario& s, double k);
// The attempts per second the scaled scenario can ask for at its worst:
// peak demand x attempts per request.
double peak_attempt_rate(const Scenario& scaled);
// The connections the scaled scenario can hold open at once: every attempt
// in flight for at most its timeout, and a hundred for the lab's own files
// and listening sockets. A proxy holds two a request (caller and backend):
// its limits (HAProxy's maxconn, nginx's worker_connections) are sized from it.
double connections_in_flight(const Scenario& scaled);
// The open files this process may have, after raising its soft limit to the
// hard one (RLIMIT_NOFILE).
double open_files_allowed();
// Removes the work directories of labs that are gone (killed, crashed): each
// names its owner's pid (owner.pid); a directory whose owner lives stays.
void remove_stale_work_dirs();
// InputError (exit 2) naming a --scale that fits when the scenario asks more
// than kMaxAttemptsPerS, or when --through/--config do not fit.
void check_lab(const LabOptions& o);

// Runs it (blocks for the horizon plus a few seconds of setup). Every process
// it starts is stopped by pid before it returns or throws.
// The measured delays between caller and backend (give_up_gap_s,
// answer_way_back_s) from the run's timing figures, and the scenario keys
// that give the model the same delays (docs/lab.md).
void measure_delays(LabResult& r);
void apply_delays(const LabResult& r, Scenario& s);

LabResult run_lab(const LabOptions& o);
// The checks of a server the backend runs (`where` names its block:
// "server." or "services.NAME.").
void check_backend_server(const decltype(Scenario::server)& server, const std::string& where);
// A scenario with services: the chain's processes (lab_chain.cpp).
void check_chain(const LabOptions& o);
LabResult run_lab_chain(const LabOptions& o);

// Bins where either process's worst timer lateness is above kStallBinFraction
// of a bin.
std::vector<bool> disturbed_bins(const std::vector<double>& generator_late_s,
                                 const std::vector<double>& backend_late_s, double bin_s);
// The goodput recovery of `run` (the same definition as `run`'s metrics:
// from the incident's end on, every bin at or above the share of demand),
// where a disturbed bin below it does not count as not recovered.
std::optional<double> goodput_recovery_between_stalls(const RunResult& run,
                                                      const std::vector<bool>& disturbed);

// A quarter of the run's shortest timeout or one bin, whichever is less: a
// pause that long makes attempts time out that would not have, or holds a
// whole bin's work back, which the model (and a rare late timer) does not.
double worst_lateness_allowed_s(const Scenario& scaled, double bin_s);
struct TimeKeeping {
  bool kept = true;
  std::string why;  // when not kept: which figure broke which bound
};
// The one judgement, for the report and for the tests that judge a lab run.
TimeKeeping time_keeping(double generator_p99_s, double backend_p99_s, double worst_late_s,
                         double worst_allowed_s);
TimeKeeping time_keeping(const LabResult& r);
// Why the measured verdict, recovery or agreement are not judged (empty when
// they are): an interrupted run measured only part of the scenario, and a
// machine that could not keep time ran another one.
std::string not_judged_why(const LabResult& r);
// An interrupted run: the measured series cut after the bin the interrupt
// came in (the bins after it hold nothing measured), its horizon with them.
void keep_until_interrupt(RunResult& run, double at_s, double bin_s);

// Tolerances of docs/lab.md: verdicts equal, failed share within 5 points,
// recovery within 2 s or 10 %.
struct Agreement {
  bool verdict = false;
  bool failed_share = false;
  bool recovery = false;
};
Agreement agreement(const Metrics& measured, const Metrics& predicted, const Scenario& s);

}  // namespace retrystorm::lab
