#include "analysis/markov/chain.hpp"

#include <fmt/format.h>

#include <Eigen/IterativeLinearSolvers>
#include <Eigen/Sparse>
#include <Eigen/SparseLU>
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>

#include "model/keys.hpp"

namespace retrystorm::markov {

namespace {

using Sparse = Eigen::SparseMatrix<double>;
using Triplets = std::vector<Eigen::Triplet<double>>;
using Vector = Eigen::VectorXd;

// Solves a x = b, many times for one a. A complete sparse LU on small
// systems; on large ones it fills in (the orbit couples states a whole
// queue apart) and BiCGSTAB preconditioned by an incomplete LU settles a
// hundred times sooner, with the complete LU as the fallback while it is
// affordable.
class Solver {
 public:
  Solver(const Sparse& a, const char* what) : a_(a), what_(what) {
    if (a.rows() <= kExactUpTo) {
      exact();
      return;
    }
    iterative_.preconditioner().setDroptol(1e-12);
    iterative_.setTolerance(1e-15);
    iterative_.setMaxIterations(1000);
    iterative_.compute(a_);
  }
  Vector solve(const Vector& b) {
    if (!exact_) {
      Vector x = iterative_.solve(b);
      // 1e-15 is asked for; 1e-10 of the right-hand side is still far
      // below what the figures are printed to.
      const bool settled = iterative_.info() == Eigen::Success || iterative_.error() < 1e-10;
      if (settled && x.allFinite()) return x;
      if (a_.rows() > kExactFallbackUpTo)
        throw InputError(fmt::format("the Markov chain's {} system did not settle in {} steps",
                                     what_, iterative_.maxIterations()));
      exact();
    }
    return exact_->solve(b);
  }

 private:
  static constexpr Eigen::Index kExactUpTo = 8000, kExactFallbackUpTo = 30000;
  void exact() {
    exact_ = std::make_unique<Eigen::SparseLU<Sparse>>(a_);
    if (exact_->info() != Eigen::Success)
      throw InputError(fmt::format("the Markov chain's {} system is singular", what_));
  }
  const Sparse& a_;
  const char* what_;
  Eigen::BiCGSTAB<Sparse, Eigen::IncompleteLUT<double>> iterative_;
  std::unique_ptr<Eigen::SparseLU<Sparse>> exact_;
};

// States from which some state of `target` can be reached.
std::vector<bool> can_reach(const Chain& chain, const std::vector<bool>& target) {
  std::vector<std::vector<int>> into(chain.states());
  for (const Move& m : chain.moves()) into[m.to].push_back(m.from);
  std::vector<bool> seen = target;
  std::deque<int> todo;
  for (int i = 0; i < chain.states(); ++i)
    if (target[i]) todo.push_back(i);
  while (!todo.empty()) {
    int s = todo.front();
    todo.pop_front();
    for (int f : into[s])
      if (!seen[f]) seen[f] = true, todo.push_back(f);
  }
  return seen;
}

// The state a walk of 200,000 moves from state 0 visits longest (seed 1:
// the same anchor every time).
int busiest_state(const Chain& chain) {
  const Walker walker(chain);
  Rng rng(1);
  std::vector<double> held(chain.states(), 0.0);
  int s = 0;
  double t = 0;
  for (int move = 0; move < 200000; ++move) {
    const double before = t;
    const int next = walker.step(s, t, rng);
    if (!std::isfinite(t)) break;
    held[s] += t - before;
    s = next;
  }
  return static_cast<int>(std::max_element(held.begin(), held.end()) - held.begin());
}

}  // namespace

Chain::Chain(int states) : states_(states) {
  if (states < 1) throw InputError("a Markov chain needs at least one state");
}

void Chain::add(int from, int to, double rate) {
  if (from == to || !(rate > 0)) return;
  moves_.push_back({from, to, rate});
}

std::vector<double> Chain::exit_rates() const {
  std::vector<double> out(states_, 0.0);
  for (const Move& m : moves_) out[m.from] += m.rate;
  return out;
}

std::vector<double> Chain::stationary() const {
  if (states_ == 1) return {1.0};
  // pi Q = 0 with pi[anchor] = 1 (then scaled to sum 1): for every other
  // state j, sum over i != anchor of pi[i] Q[i][j] = -Q[anchor][j]. The
  // system is best conditioned when the anchor is a state the chain visits
  // often: the most visited state of a short walk.
  const int anchor = busiest_state(*this);
  auto reduced = [anchor](int s) { return s < anchor ? s : s - 1; };
  const int n = states_ - 1;
  Triplets t;
  t.reserve(moves_.size() * 2);
  Vector b = Vector::Zero(n);
  for (const Move& m : moves_) {
    if (m.from != anchor) {
      t.emplace_back(reduced(m.from), reduced(m.from), -m.rate);
      if (m.to != anchor) t.emplace_back(reduced(m.to), reduced(m.from), m.rate);
    } else {
      b[reduced(m.to)] -= m.rate;
    }
  }
  Sparse a(n, n);
  a.setFromTriplets(t.begin(), t.end());
  Vector x = Solver(a, "stationary").solve(b);
  std::vector<double> pi(states_);
  double sum = 0;
  for (int i = 0; i < states_; ++i) sum += pi[i] = i == anchor ? 1.0 : std::max(0.0, x[reduced(i)]);
  if (!std::isfinite(sum)) throw InputError("the Markov chain has no stationary distribution");
  for (double& p : pi) p /= sum;
  return pi;
}

std::vector<double> Chain::hitting_times(const std::vector<bool>& target) const {
  const std::vector<bool> live = can_reach(*this, target);
  std::vector<int> index(states_, -1);
  int n = 0;
  for (int i = 0; i < states_; ++i)
    if (live[i] && !target[i]) index[i] = n++;
  std::vector<double> out(states_, 0.0);
  for (int i = 0; i < states_; ++i)
    if (!live[i]) out[i] = std::numeric_limits<double>::infinity();
  if (n == 0) return out;
  // Q restricted to the states outside the target: Q h = -1.
  Triplets t;
  for (const Move& m : moves_) {
    if (index[m.from] < 0) continue;
    t.emplace_back(index[m.from], index[m.from], -m.rate);
    if (index[m.to] >= 0) t.emplace_back(index[m.from], index[m.to], m.rate);
  }
  Sparse a(n, n);
  a.setFromTriplets(t.begin(), t.end());
  Vector h = Solver(a, "hitting-time").solve(Vector::Constant(n, -1.0));
  // Beyond kNever the system is too ill-conditioned for its digits to mean
  // anything (a negative answer is the usual sign): the state is left forever.
  for (int i = 0; i < states_; ++i)
    if (index[i] >= 0)
      out[i] = h[index[i]] >= 0 && h[index[i]] < kNever_s ? h[index[i]]
                                                          : std::numeric_limits<double>::infinity();
  return out;
}

std::vector<double> Chain::reach_within(const std::vector<bool>& target, double horizon_s,
                                        double max_terms) const {
  std::vector<double> exits = exit_rates();
  double fastest = 0;
  for (int i = 0; i < states_; ++i)
    if (!target[i]) fastest = std::max(fastest, exits[i]);
  std::vector<double> value(states_);
  for (int i = 0; i < states_; ++i) value[i] = target[i] ? 1.0 : 0.0;
  if (fastest == 0 || horizon_s <= 0) return value;
  // Uniformization: P = I + Q / rate with the target absorbing; the answer
  // is sum_k Poisson(k; rate t) (P^k 1_target).
  const double rate = fastest * 1.02, mean = rate * horizon_s;
  const double terms = mean + 10 * std::sqrt(mean) + 20;
  if (terms > max_terms)
    throw InputError(fmt::format(
        "reaching within {} s takes {:.0f} uniformization steps, more than the {:.0f} allowed",
        horizon_s, terms, max_terms));
  std::vector<double> sum(states_, 0.0), next(states_);
  double mass = 0;
  for (long k = 0; k < static_cast<long>(terms); ++k) {
    const double w = std::exp(-mean + k * std::log(mean) - std::lgamma(k + 1.0));
    mass += w;
    for (int i = 0; i < states_; ++i) sum[i] += w * value[i];
    if (mass > 1 - 1e-13) break;
    for (int i = 0; i < states_; ++i) next[i] = target[i] ? 1.0 : value[i] * (1 - exits[i] / rate);
    for (const Move& m : moves_)
      if (!target[m.from]) next[m.from] += m.rate / rate * value[m.to];
    value.swap(next);
  }
  for (int i = 0; i < states_; ++i) sum[i] = target[i] ? 1.0 : std::min(1.0, sum[i]);
  return sum;
}

namespace {

// A complex pair lambda_2, conj(lambda_2): one real vector turns in the
// pair's plane and never settles, two span it. Subspace iteration on (u, v),
// the pair from the 2 x 2 projection of the inverse: mu = 1 / lambda, and
// the slowest decay is exp(Re lambda_2 t), so the time is 1 / |Re lambda_2|
// = |mu|^2 / |Re mu|. NaN when it does not settle either.
template <typename Inverse, typename Center, typename Deflate>
double pair_relaxation_s(Vector u, Inverse inverse, Center center, Deflate deflate) {
  Vector v = inverse(u);
  double previous = 0;
  for (int round = 0; round < 500; ++round) {
    center(v);
    v -= u.dot(v) * u;
    if (!(v.norm() > 0)) break;
    v /= v.norm();
    const Vector iu = inverse(u), iv = inverse(v);
    const double h11 = u.dot(iu), h12 = u.dot(iv), h21 = v.dot(iu), h22 = v.dot(iv);
    const double half = (h11 + h22) / 2, det = h11 * h22 - h12 * h21;
    const double gap = half * half - det;
    double estimate;
    if (gap < 0)  // the complex pair half +- i sqrt(-gap): |mu|^2 is det
      estimate = det / std::abs(half);
    else  // two real ones: the slower, 1 / |lambda| = |mu|
      estimate = std::abs(half) + std::sqrt(gap);
    if (!std::isfinite(estimate) || !(estimate > 0)) break;
    if (round > 3 && std::abs(estimate - previous) <= 1e-9 * estimate) return estimate;
    previous = estimate;
    u = iu;
    deflate(u);
    v = iv;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double Chain::relaxation_time_s(const std::vector<double>& pi) const {
  if (states_ < 2) return 0;
  // Q y = x for x with pi.x = 0 has solutions y + c 1; fixing y at 0 in one
  // state leaves the generator without that state, which is invertible.
  // The skipped equation holds only as well as pi is known, divided by
  // pi[anchor]: hence the state the chain visits most.
  const int anchor = static_cast<int>(std::max_element(pi.begin(), pi.end()) - pi.begin());
  auto reduced = [anchor](int s) { return s < anchor ? s : s - 1; };
  const int n = states_ - 1;
  Triplets t;
  for (const Move& m : moves_) {
    if (m.from == anchor) continue;
    t.emplace_back(reduced(m.from), reduced(m.from), -m.rate);
    if (m.to != anchor) t.emplace_back(reduced(m.from), reduced(m.to), m.rate);
  }
  Sparse a(n, n);
  a.setFromTriplets(t.begin(), t.end());
  auto deflate = [&](Vector& v) {  // keep pi.v = 0 and |v| = 1
    double along = 0;
    for (int i = 0; i < states_; ++i) along += pi[i] * v[i];
    v.array() -= along;
    v /= v.norm();
  };
  auto drop = [&](const Vector& v) {
    Vector out(n);
    for (int i = 0; i < states_; ++i)
      if (i != anchor) out[reduced(i)] = v[i];
    return out;
  };
  auto lift = [&](const Vector& v) {
    Vector out(states_);
    for (int i = 0; i < states_; ++i) out[i] = i == anchor ? 0.0 : v[reduced(i)];
    return out;
  };
  Vector x(states_);
  for (int i = 0; i < states_; ++i) x[i] = std::cos(0.7 * i) + static_cast<double>(i) / states_;
  deflate(x);
  try {
    Solver solver(a, "relaxation");
    // y with Q y = x, off the stationary direction: y = x / lambda along an
    // eigenvector.
    auto center = [&](Vector& v) {  // off the stationary direction
      v.array() -= expect(pi, std::vector<double>(v.data(), v.data() + states_));
    };
    auto inverse = [&](const Vector& v) {
      Vector y = lift(solver.solve(drop(v)));
      center(y);
      return y;
    };
    double lambda = 0;
    for (int round = 0; round < 500; ++round) {
      const Vector y = inverse(x);
      const double estimate = x.dot(y) / y.dot(y);  // y = x / lambda
      x = y;
      deflate(x);
      if (round > 3 && std::abs(estimate - lambda) <= 1e-9 * std::abs(estimate))
        return 1 / std::abs(estimate);
      lambda = estimate;
    }
    return pair_relaxation_s(x, inverse, center, deflate);
  } catch (const InputError&) {
  }
  return std::numeric_limits<double>::quiet_NaN();
}

Walker::Walker(const Chain& chain) : first_(chain.states() + 1, 0), exit_(chain.states(), 0.0) {
  for (const Move& m : chain.moves()) ++first_[m.from + 1];
  for (int s = 0; s < chain.states(); ++s) first_[s + 1] += first_[s];
  to_.resize(chain.moves().size());
  rate_.resize(chain.moves().size());
  std::vector<int> next(first_.begin(), first_.end() - 1);
  for (const Move& m : chain.moves()) {
    to_[next[m.from]] = m.to;
    rate_[next[m.from]++] = m.rate;
    exit_[m.from] += m.rate;
  }
}

int Walker::step(int state, double& t_s, Rng& rng) const {
  if (!(exit_[state] > 0)) {
    t_s = std::numeric_limits<double>::infinity();
    return state;
  }
  t_s += rng.exponential(1 / exit_[state]);
  double pick = rng.uniform() * exit_[state];
  for (int i = first_[state]; i < first_[state + 1] - 1; ++i)
    if ((pick -= rate_[i]) < 0) return to_[i];
  return to_[first_[state + 1] - 1];
}

std::optional<double> Walker::first_passage(int start, const std::vector<bool>& target,
                                            double horizon_s, Rng& rng) const {
  double t = 0;
  for (int s = start; !target[s];) {
    s = step(s, t, rng);
    if (t > horizon_s) return std::nullopt;
  }
  return t;
}

double expect(const std::vector<double>& weight, const std::vector<double>& value) {
  double sum = 0;
  // A state of no weight adds nothing, even where its value is infinite
  // (0 x infinity would make the whole sum NaN).
  for (size_t i = 0; i < weight.size(); ++i)
    if (weight[i] != 0) sum += weight[i] * value[i];
  return sum;
}

}  // namespace retrystorm::markov
