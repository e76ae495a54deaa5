// One server with retrying clients as a Markov chain (docs/risk.md, "The
// exact chain"), under two sets of rules:
// - metafor: the published single-server model of the metafor tool, move
//   for move, so that its figures can be reproduced and compared;
// - retrystorm: the project's own semantics where they are Markov: an
//   attempt that times out stays in the queue and is still served (wasted
//   work), its request retries after an exponential delay, a full queue
//   refuses at once.
// Both report the same figures: the bad mode's share of time, the expected
// time to enter it from an empty system and to leave it, and the
// relaxation and mixing times.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "analysis/markov/chain.hpp"

namespace retrystorm::markov {

enum class Rules { metafor, retrystorm };

struct RetryChainParams {
  Rules rules = Rules::retrystorm;
  double arrival_per_s = 9.5;  // new requests (Poisson)
  double service_per_s = 10;   // one slot's completions per second (exponential)
  int slots = 1;
  // retrystorm: places at the server (in service and waiting); metafor: its
  // qsize, the queue holds 0 .. queue - 1.
  int queue = 100;
  double timeout_s = 3;
  int retries = 4;
  // retrystorm: the mean of the exponential delay before a retry (> 0);
  // metafor has none (a retry leaves its orbit at rate 1 / timeout).
  double retry_delay_s = 1;
  // Requests waiting to retry: retrystorm 0 .. orbit, metafor 0 .. orbit - 1.
  int orbit = 20;
  // The bad mode: at least this many attempts at the server; 0 = one
  // timeout of work (timeout x slots x service rate).
  int bad_from = 0;
  double alpha = 0.25;  // metafor's weight of its timed-out-arrival stream
};

struct RetryChainFigures {
  int states = 0;
  int bad_from = 0;             // the bad mode's threshold (attempts at the server)
  double mean_backlog = 0;      // stationary mean of attempts at the server
  double mean_retrying = 0;     // stationary mean of requests waiting to retry
  double bad_share = 0;         // stationary probability of the bad mode
  double orbit_full_share = 0;  // stationary probability that the orbit is full
  double enter_bad_s = 0;       // from an empty system to the bad mode
  // From the bad mode (as the chain sits in it) to empty; NaN when the chain
  // never reaches the bad mode (bad_share 0): there is no stay to leave.
  double leave_bad_s = std::numeric_limits<double>::quiet_NaN();
  // (nothing at the server, nobody waiting to retry)
  double relaxation_s = 0;      // 1 / |lambda_2|
  double mixing_metafor_s = 0;  // metafor's mixing time: log2(100) x relaxation
};

struct RetryChain {
  Chain chain;
  std::vector<int> backlog;   // attempts at the server, by state
  std::vector<int> retrying;  // requests waiting to retry, by state
  int empty_state = 0;
};

// InputError names the parameter when it is out of range or the chain
// would have more than `max_states` states.
RetryChain build_retry_chain(const RetryChainParams& p, int max_states = 400000);
RetryChainFigures solve_retry_chain(const RetryChainParams& p, int max_states = 400000);

// metafor's bound on the chance that an attempt which finds `waiting`
// attempts at the server times out (Chebyshev's inequality).
double metafor_timeout_bound(int waiting, int slots, double service_per_s, double timeout_s);

// The number of states the chain has under its rules.
double chain_states(const RetryChainParams& p);

// The bad mode's threshold the figures use.
int bad_threshold(const RetryChainParams& p);

}  // namespace retrystorm::markov
