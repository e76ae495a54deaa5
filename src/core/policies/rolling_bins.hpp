// Counts over a sliding window of time, in bins: the window of opossum's
// Status (rollingCountBuckets) and of gRPC's adaptive throttler (lookback).
// A bin covers width_s from start_s; the clock moving on clears the bins
// it passed, so the window holds the current bin and the ones before it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace retrystorm {

template <typename Bin>
class RollingBins {
 public:
  RollingBins(size_t bins, double width_s, double start_s)
      : bins_(bins), width_s_(width_s), start_s_(start_s) {}

  // Adds `counts` to the bin of now_s (an instant before the newest bin
  // counts in the newest).
  void add(double now_s, const Bin& counts) {
    at(now_s) += counts;
    total_ += counts;
  }
  // The window's counts as of now_s. Kept as bins come and go instead of
  // summed at every question (a throttle asks before every attempt); the
  // counts are whole numbers, so the sum is exact in either order.
  const Bin& total(double now_s) {
    at(now_s);
    return total_;
  }

 private:
  Bin& at(double now_s) {
    auto index = static_cast<int64_t>(std::floor((now_s - start_s_) / width_s_));
    int64_t steps = std::min<int64_t>(index - head_index_, static_cast<int64_t>(bins_.size()));
    for (int64_t k = 0; k < steps; ++k) {
      head_ = (head_ + 1) % bins_.size();
      total_ -= bins_[head_];
      bins_[head_] = {};
    }
    head_index_ = std::max(head_index_, index);
    return bins_[head_];
  }

  std::vector<Bin> bins_;
  Bin total_{};
  double width_s_, start_s_;
  size_t head_ = 0;
  int64_t head_index_ = 0;
};

}  // namespace retrystorm
