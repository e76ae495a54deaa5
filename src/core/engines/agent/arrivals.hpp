// The user requests' arrival instants, one step at a time (docs/agent-engine.md):
// generated a step ahead, so the budget can be told the step's first attempts
// before any of them is sent. Deterministic, Poisson or bursty (on/off Poisson).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "model/scenario.hpp"
#include "random/rng.hpp"

namespace retrystorm::agent {

class Arrivals {
 public:
  // `times` is the run's workspace; `rng` the engine's one stream of numbers.
  Arrivals(const Scenario& s, Rng& rng, std::vector<double>& times)
      : s_(s), rng_(rng), times_(times), closed_(s.demand.clients > 0) {}

  double next() const { return times_[next_]; }  // +infinity after the step's last
  void take() {
    if (!closed()) return void(++next_);
    std::pop_heap(times_.begin(), times_.end(), std::greater<>());
    times_.pop_back();
  }

  // Closed loop (demand.clients): times_ is a heap of the clients' next
  // sends, earliest first, over an +infinity that never leaves. Client i
  // first sends at (i + 1/2) / N of a think time (or a draw of it).
  bool closed() const { return closed_; }
  void start_clients() {
    times_.assign(1, std::numeric_limits<double>::infinity());
    next_ = 0;
    double n = s_.demand.clients;
    for (double i = 0; i < n; ++i)
      add(poisson_think() ? think() : (i + 0.5) / n * s_.demand.think_s);
  }
  // A client whose request ended now sends its next one after its think time.
  void client_done(double now) { add(now + think()); }

  // The step [start, end)'s arrivals at demand.rate_per_s x `factor` (the
  // incident's and the profile's); returns how many (closed loop: none
  // known ahead, the engine counts them as they come).
  size_t generate(double start, double end, double factor) {
    if (closed()) return 0;
    times_.clear();
    next_ = 0;
    fill(start, end, factor);
    size_t count = times_.size();
    times_.push_back(std::numeric_limits<double>::infinity());  // none before the end
    return count;
  }

  // A splitting walk that goes on with fresh numbers (docs/risk.md, "Rare
  // tipping"): the step's arrivals not yet taken are drawn again from `now`
  // with the new stream, so that walks from one entry share none of their
  // future. Returns how many more (or fewer) the step now has.
  long redraw_from(double now, double end, double factor) {
    if (closed() || s_.demand.process == DemandProcess::deterministic) return 0;
    const auto before = static_cast<long>(times_.size()) - 1 - static_cast<long>(next_);
    times_.resize(next_);
    fill(now, end, factor);
    const auto after = static_cast<long>(times_.size() - next_);
    times_.push_back(std::numeric_limits<double>::infinity());
    return after - before;
  }

 private:
  // Appends [start, end)'s arrivals at demand.rate_per_s x factor.
  void fill(double start, double end, double factor) {
    double rate = s_.demand.rate_per_s * factor;
    switch (s_.demand.process) {
      case DemandProcess::deterministic: {
        // Evenly spaced; the fraction carries over, so each step gets the
        // fluid engine's amount whenever that is a whole number.
        carry_ += rate * s_.step_s;
        double n = std::floor(carry_ + 1e-9);
        carry_ = std::max(0.0, carry_ - n);
        for (double i = 0; i < n; ++i) times_.push_back(start + (i + 0.5) * (end - start) / n);
        break;
      }
      case DemandProcess::poisson:
        poisson(start, end, rate);
        break;
      case DemandProcess::bursty: {
        double on = s_.demand.burst_on_s, cycle = on + s_.demand.burst_off_s;
        double factor = s_.demand.burst_factor;
        double off_rate = rate * std::max(0.0, (cycle - factor * on) / s_.demand.burst_off_s);
        for (double a = start; a < end;) {
          double cycle_start = std::floor(a / cycle) * cycle;
          bool is_on = a < cycle_start + on;
          double seg_end = std::min(end, cycle_start + (is_on ? on : cycle));
          if (seg_end <= a)
            seg_end = std::min(end, std::nextafter(a, std::numeric_limits<double>::infinity()));
          poisson(a, seg_end, is_on ? rate * factor : off_rate);
          a = seg_end;
        }
        break;
      }
    }
  }

  bool poisson_think() const { return s_.demand.process == DemandProcess::poisson; }
  double think() {
    return poisson_think() ? rng_.exponential(s_.demand.think_s) : s_.demand.think_s;
  }
  void add(double t) {
    times_.push_back(t);
    std::push_heap(times_.begin(), times_.end(), std::greater<>());
  }

  // A Poisson process on [a, b); memoryless, so restarting at a is exact.
  void poisson(double a, double b, double rate) {
    if (rate <= 0) return;
    double mean = 1 / rate;
    for (double t = a + rng_.exponential(mean); t < b; t += rng_.exponential(mean))
      times_.push_back(t);
  }

  const Scenario& s_;
  Rng& rng_;
  std::vector<double>& times_;
  size_t next_ = 0;
  const bool closed_;
  double carry_ = 0;  // deterministic demand: the fraction of a request carried over
};

}  // namespace retrystorm::agent
