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

  // The bin of now_s (an instant before the newest bin counts in the newest).
  Bin& at(double now_s) {
    auto index = static_cast<int64_t>(std::floor((now_s - start_s_) / width_s_));
    int64_t steps = std::min<int64_t>(index - head_index_, static_cast<int64_t>(bins_.size()));
    for (int64_t k = 0; k < steps; ++k) {
      head_ = (head_ + 1) % bins_.size();
      bins_[head_] = {};
    }
    head_index_ = std::max(head_index_, index);
    return bins_[head_];
  }
  const std::vector<Bin>& bins() const { return bins_; }

 private:
  std::vector<Bin> bins_;
  double width_s_, start_s_;
  size_t head_ = 0;
  int64_t head_index_ = 0;
};

}  // namespace retrystorm
