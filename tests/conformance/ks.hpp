// One-sample Kolmogorov-Smirnov test for the conformance suite
// (docs/conformance.md): do measured backoff delays follow the model's
// distribution? The model gives a CDF: a uniform DelayRange, a ladder's
// LadderDistribution, or any callable x -> P(X <= x).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "policies/backoff.hpp"
#include "policies/client_policy.hpp"

namespace retrystorm::conformance {

// Critical D for n samples at significance alpha, from the asymptotic
// Kolmogorov distribution: c(alpha) / sqrt(n), c = sqrt(-ln(alpha / 2) / 2)
// (1.949 at alpha = 0.001). Good for n >= ~35; the suite uses >= 500.
inline double ks_critical(size_t n, double alpha = 0.001) {
  return std::sqrt(-std::log(alpha / 2) / 2) / std::sqrt(static_cast<double>(n));
}

struct KsResult {
  double d = 0;         // sup |F_n(x) - F(x)|
  double critical = 0;  // at the requested alpha
  size_t n = 0;
  double min = 0, max = 0;  // of the sample
  bool rejects() const { return d > critical; }
};

// D = sup over the sorted sample of max(i/n - F(x_i), F(x_i) - (i-1)/n).
inline KsResult ks_test(std::vector<double> sample, const std::function<double(double)>& cdf,
                        double alpha = 0.001) {
  KsResult r;
  r.n = sample.size();
  if (sample.empty()) return r;
  std::sort(sample.begin(), sample.end());
  double n = static_cast<double>(sample.size());
  for (size_t i = 0; i < sample.size(); ++i) {
    double f = std::clamp(cdf(sample[i]), 0.0, 1.0);
    r.d = std::max({r.d, (static_cast<double>(i) + 1) / n - f, f - static_cast<double>(i) / n});
  }
  r.critical = ks_critical(sample.size(), alpha);
  r.min = sample.front();
  r.max = sample.back();
  return r;
}

// The CDF of U[low, high) (a step at low when the range has no width).
inline std::function<double(double)> uniform_cdf(DelayRange r) {
  return [r](double x) {
    if (r.high_s <= r.low_s) return x < r.low_s ? 0.0 : 1.0;
    return std::clamp((x - r.low_s) / (r.high_s - r.low_s), 0.0, 1.0);
  };
}

// The CDF of a ladder's total; `d` must outlive the returned function.
inline std::function<double(double)> ladder_cdf(const LadderDistribution& d) {
  return [&d](double x) { return d.cdf(x); };
}

// Delays drawn from different ranges (retry 2, 3, ...) pooled into one
// sample: each is mapped to its position in its own range, (d - low) /
// (high - low), which is U(0, 1) when the model is right.
inline double position_in(DelayRange r, double delay_s) {
  return r.high_s > r.low_s ? (delay_s - r.low_s) / (r.high_s - r.low_s) : 0.0;
}

}  // namespace retrystorm::conformance
