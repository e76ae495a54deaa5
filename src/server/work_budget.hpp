// The server's budget of concurrent expensive work (requests that run
// engines; which ones, the route table says).
#pragma once

#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>

namespace retrystorm {

// A server-wide budget of concurrent expensive work: slots handed out first
// come, first served; a caller that waits longer than its deadline is refused.
class WorkBudget {
 public:
  explicit WorkBudget(int slots) : free_(slots) {}
  // One slot, waiting at most `wait`. False when none came free in time.
  bool acquire(std::chrono::milliseconds wait);
  // Up to `most` more slots without waiting, when nobody is queued; the count.
  int acquire_more(int most);
  void release(int slots = 1);

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  std::list<int> queue_;  // one entry per waiter, first in front
  int free_;
};

}  // namespace retrystorm
