// The few statistics the incident analysis needs, on plain vectors.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "analysis/incident/records.hpp"

namespace retrystorm::incident {

// The median; kUnknown for no values. Reorders `v`.
template <class Container>
double median(Container& v) {
  if (v.empty()) return kUnknown;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

// Pearson's correlation; kUnknown with fewer than three pairs or no spread.
inline double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = std::min(x.size(), y.size());
  if (n < 3) return kUnknown;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return kUnknown;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace retrystorm::incident
