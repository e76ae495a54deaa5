// A continuous-time Markov chain over a finite set of states and the exact
// answers docs/risk.md reports from it: the stationary distribution, the
// expected time to reach a set of states, the probability of reaching it
// within a horizon, and the relaxation time (how long the chain remembers
// where it started). Sparse throughout: retry chains have tens of
// thousands of states and a handful of moves out of each.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "random/rng.hpp"

namespace retrystorm::markov {

// About 30,000 years: longer expected times are reported as never.
constexpr double kNever_s = 1e12;

struct Move {
  int from = 0;
  int to = 0;
  double rate = 0;  // per second
};

class Chain {
 public:
  explicit Chain(int states);

  // Adds `rate` to the move from -> to; self-moves and zero rates are
  // ignored (they do not change the state).
  void add(int from, int to, double rate);
  int states() const { return states_; }
  const std::vector<Move>& moves() const { return moves_; }
  // Total rate out of each state.
  std::vector<double> exit_rates() const;

  // The distribution the chain settles into (pi Q = 0, sum 1). The chain
  // must be irreducible; InputError otherwise.
  std::vector<double> stationary() const;

  // Expected time to first reach a state of `target`, from each state
  // (0 in the target). Infinite where the target cannot be reached or
  // only after more than kNever_s.
  std::vector<double> hitting_times(const std::vector<bool>& target) const;

  // Probability of reaching `target` within `horizon_s`, from each state,
  // by uniformization; `max_terms` bounds the work (InputError above it).
  std::vector<double> reach_within(const std::vector<bool>& target, double horizon_s,
                                   double max_terms = 2e6) const;

  // 1 / |lambda_2|: the slowest decay of the generator, by inverse
  // iteration on the complement of the stationary direction. NaN when the
  // iteration does not settle (complex second eigenvalue).
  double relaxation_time_s(const std::vector<double>& stationary) const;

 private:
  int states_;
  std::vector<Move> moves_;
};

// Walks the chain at random (the next move by its rate, the time to it
// exponential): what the estimators of docs/risk.md are checked against.
class Walker {
 public:
  explicit Walker(const Chain& chain);
  // The time of the first visit to `target` from `start`, if before horizon_s.
  std::optional<double> first_passage(int start, const std::vector<bool>& target, double horizon_s,
                                      Rng& rng) const;
  // One move from `state`: the new state, and the time spent before it
  // added to `t_s` (a state without moves stays forever: t_s infinite).
  int step(int state, double& t_s, Rng& rng) const;

 private:
  std::vector<int> first_;  // moves of state s: first_[s] .. first_[s + 1] - 1
  std::vector<int> to_;
  std::vector<double> rate_, exit_;
};

// sum over states of weight[i] * value[i]
double expect(const std::vector<double>& weight, const std::vector<double>& value);

}  // namespace retrystorm::markov
