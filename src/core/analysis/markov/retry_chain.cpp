#include "analysis/markov/retry_chain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/keys.hpp"

namespace retrystorm::markov {

namespace {

void check(const RetryChainParams& p) {
  auto positive = [](double v, const char* name) {
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(fmt::format("chain: {} must be above 0, not {}", name, v));
  };
  positive(p.arrival_per_s, "the arrival rate");
  positive(p.service_per_s, "the service rate");
  positive(p.timeout_s, "the timeout");
  if (p.rules == Rules::retrystorm) positive(p.retry_delay_s, "the retry delay");
  if (p.slots < 1 || p.slots > 10000)
    throw InputError(fmt::format("chain: slots must be 1 to 10000, not {}", p.slots));
  if (p.queue < 1 || p.orbit < 1)
    throw InputError(fmt::format("chain: the queue ({}) and the orbit ({}) must hold at least 1",
                                 p.queue, p.orbit));
  if (p.retries < 0 || p.retries > 1000)
    throw InputError(fmt::format("chain: retries must be 0 to 1000, not {}", p.retries));
}

// metafor, move for move (ctmc_model/single_server/ctmc.py,
// SingleServerCTMC.generator_mat_exact with retry_when_full off): state
// (q, o) with q < queue and o < orbit; its orbit empties at rate 1/timeout
// per request, a share retries / (retries + 1) of it as a retry.
RetryChain metafor_chain(const RetryChainParams& p) {
  const int nq = p.queue, no = p.orbit;
  RetryChain rc{Chain(nq * no), {}, {}, 0};
  rc.backlog.resize(nq * no);
  rc.retrying.resize(nq * no);
  const double lambda = p.arrival_per_s, mu = p.service_per_s;
  const double retry = p.retries / ((p.retries + 1.0) * p.timeout_s);
  const double drop = 1 / ((p.retries + 1.0) * p.timeout_s);
  auto id = [nq](int q, int o) { return o * nq + q; };
  for (int o = 0; o < no; ++o) {
    for (int q = 0; q < nq; ++q) {
      const int s = id(q, o);
      rc.backlog[s] = q;
      rc.retrying[s] = o;
      Chain& c = rc.chain;
      if (q == 0) {
        c.add(s, id(1, o), lambda);
        if (o > 0) c.add(s, id(0, o - 1), o * drop), c.add(s, id(1, o - 1), o * retry);
      } else if (q == nq - 1) {
        c.add(s, id(q - 1, o), std::min(nq, p.slots) * mu);
        if (o > 0) c.add(s, id(q, o - 1), o * (drop + retry));
      } else {
        const double tail = metafor_timeout_bound(q, p.slots, mu, p.timeout_s);
        if (o < no - 1) c.add(s, id(q + 1, o + 1), p.alpha * lambda * tail);
        c.add(s, id(q + 1, o), lambda + o * retry * tail);
        if (o > 0)
          c.add(s, id(q + 1, o - 1), o * retry * (1 - tail)), c.add(s, id(q, o - 1), o * drop);
        c.add(s, id(q - 1, o), std::min(q, p.slots) * mu);
      }
    }
  }
  return rc;
}

// The project's own rules: state (live, orphaned, retrying), with
// live + orphaned <= queue and retrying <= orbit. Service picks any attempt
// present (FIFO would need each attempt's age); a live attempt times out
// at rate 1/timeout (the Markov timeout); a failed attempt retries with
// probability retries / (retries + 1), which keeps the mean attempts of a
// request that always fails at retries + 1.
struct OwnRules {
  const RetryChainParams& p;
  int nl;  // queue + 1 values of live + orphaned
  int no;  // orbit + 1 values of retrying
  double again;

  int pairs() const { return nl * (nl + 1) / 2; }
  // (l, z) with l + z <= queue in a triangle, then by retrying
  int id(int l, int z, int o) const {
    const int n = l + z;
    return o * pairs() + n * (n + 1) / 2 + z;
  }
  // An attempt failed, leaving (l, z, o): its request waits to retry
  // (when the orbit has room) or fails.
  void fail(Chain& c, int from, int l, int z, int o, double rate) const {
    c.add(from, id(l, z, o < p.orbit ? o + 1 : o), rate * again);
    c.add(from, id(l, z, o), rate * (1 - again));
  }
  void moves(Chain& c, int l, int z, int o) const {
    const int s = id(l, z, o), n = l + z;
    const double lambda = p.arrival_per_s;
    const double back = o / p.retry_delay_s;
    if (n < p.queue) {
      c.add(s, id(l + 1, z, o), lambda);
      if (o > 0) c.add(s, id(l + 1, z, o - 1), back);
    } else {
      fail(c, s, l, z, o, lambda);
      if (o > 0) fail(c, s, l, z, o - 1, back);  // a retry refused again
    }
    if (n > 0) {
      const double served = std::min(n, p.slots) * p.service_per_s;
      if (l > 0) c.add(s, id(l - 1, z, o), served * l / n);
      if (z > 0) c.add(s, id(l, z - 1, o), served * z / n);
    }
    if (l > 0) {
      fail(c, s, l - 1, z + 1, o, l / p.timeout_s);  // the attempt stays, orphaned
    }
  }
};

RetryChain own_chain(const RetryChainParams& p, int states) {
  OwnRules rules{p, p.queue + 1, p.orbit + 1, p.retries / (p.retries + 1.0)};
  RetryChain rc{Chain(states), std::vector<int>(states), std::vector<int>(states), 0};
  for (int o = 0; o <= p.orbit; ++o)
    for (int n = 0; n <= p.queue; ++n)
      for (int z = 0; z <= n; ++z) {
        const int l = n - z, s = rules.id(l, z, o);
        rc.backlog[s] = n;
        rc.retrying[s] = o;
        rules.moves(rc.chain, l, z, o);
      }
  return rc;
}

}  // namespace

double metafor_timeout_bound(int waiting, int slots, double service_per_s, double timeout_s) {
  if (waiting <= 0) return 0;
  const double rate = std::min(waiting, slots) * service_per_s;
  const double mean = waiting / rate, sigma = std::sqrt(waiting) / rate;
  if (timeout_s - mean > sigma) return std::pow(sigma / (timeout_s - mean), 2);
  return 1;
}

int bad_threshold(const RetryChainParams& p) {
  if (p.bad_from > 0) return p.bad_from;
  // Capped before the cast: timeout x capacity can pass 2^31, and no state
  // holds more than the queue anyway.
  const double work = std::ceil(p.timeout_s * p.slots * p.service_per_s);
  return std::max(1, static_cast<int>(std::min(work, p.queue + 1.0)));
}

double chain_states(const RetryChainParams& p) {
  return p.rules == Rules::metafor ? double(p.queue) * p.orbit
                                   : (p.queue + 1.0) * (p.queue + 2.0) / 2 * (p.orbit + 1.0);
}

RetryChain build_retry_chain(const RetryChainParams& p, int max_states) {
  check(p);
  const double states = chain_states(p);
  if (states > max_states)
    throw InputError(fmt::format(
        "chain: {:.0f} states (queue {}, orbit {}) is more than the {} allowed; lower the queue "
        "or the orbit",
        states, p.queue, p.orbit, max_states));
  return p.rules == Rules::metafor ? metafor_chain(p) : own_chain(p, static_cast<int>(states));
}

RetryChainFigures solve_retry_chain(const RetryChainParams& p, int max_states) {
  const RetryChain rc = build_retry_chain(p, max_states);
  const int n = rc.chain.states();
  RetryChainFigures f;
  f.states = n;
  f.bad_from = bad_threshold(p);
  const std::vector<double> pi = rc.chain.stationary();
  std::vector<bool> bad(n), empty(n);  // empty: nothing at the server, nobody waiting to retry
  std::vector<double> in_bad(n, 0.0);
  const int orbit_top = *std::max_element(rc.retrying.begin(), rc.retrying.end());
  for (int s = 0; s < n; ++s) {
    bad[s] = rc.backlog[s] >= f.bad_from;
    empty[s] = rc.backlog[s] == 0 && rc.retrying[s] == 0;
    f.mean_backlog += pi[s] * rc.backlog[s];
    f.mean_retrying += pi[s] * rc.retrying[s];
    if (bad[s]) f.bad_share += pi[s], in_bad[s] = pi[s];
    if (rc.retrying[s] == orbit_top) f.orbit_full_share += pi[s];
  }
  f.enter_bad_s = rc.chain.hitting_times(bad)[rc.empty_state];
  if (f.bad_share > 0) {
    for (double& w : in_bad) w /= f.bad_share;
    f.leave_bad_s = expect(in_bad, rc.chain.hitting_times(empty));
  }
  f.relaxation_s = rc.chain.relaxation_time_s(pi);
  f.mixing_metafor_s = std::log2(100.0) * f.relaxation_s;
  return f;
}

}  // namespace retrystorm::markov
