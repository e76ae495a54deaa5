// A queue on a ring whose size is a power of two, doubled when full: pushing
// and popping at either end never move the other items. The fluid engine
// queues cohorts on it, the agent engine the indices of waiting attempts,
// the event kernel its timers (engines/event_queue.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "engines/large_allocator.hpp"

namespace retrystorm {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  const T& back() const { return buf_[(head_ + n_ - 1) & mask_]; }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  void push_back(const T& v) {
    if (n_ == buf_.size()) grow();
    buf_[(head_ + n_) & mask_] = v;
    ++n_;
  }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --n_;
  }
  void pop_back() { --n_; }
  void clear() { head_ = n_ = 0; }
  template <typename F>
  void for_each(F f) const {
    for (size_t i = 0; i < n_; ++i) f(buf_[(head_ + i) & mask_]);
  }
  // Keeps the items `keep` accepts, in their order.
  template <typename Keep>
  void retain_if(Keep keep) {
    size_t kept = 0;
    for (size_t i = 0; i < n_; ++i) {
      const T& v = buf_[(head_ + i) & mask_];
      if (keep(v)) buf_[(head_ + kept++) & mask_] = v;
    }
    n_ = kept;
  }

 private:
  static constexpr size_t kFirstSize = 64;
  void grow() {
    size_t size = std::max(kFirstSize, buf_.size() * 2);
    std::vector<T, LargeAllocator<T>> next(size);
    for (size_t i = 0; i < n_; ++i) next[i] = buf_[(head_ + i) & mask_];
    buf_ = std::move(next);
    head_ = 0;
    mask_ = size - 1;
  }
  std::vector<T, LargeAllocator<T>> buf_;
  size_t head_ = 0, n_ = 0, mask_ = 0;
};

}  // namespace retrystorm
