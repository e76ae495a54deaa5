#include "server/work_budget.hpp"

#include <algorithm>

namespace retrystorm {

bool WorkBudget::acquire(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  auto me = queue_.insert(queue_.end(), 0);
  bool got = freed_.wait_for(lock, wait, [&] { return queue_.begin() == me && free_ > 0; });
  queue_.erase(me);
  if (got) --free_;
  freed_.notify_all();  // the next in line moved up
  return got;
}

int WorkBudget::acquire_more(int most) {
  std::lock_guard lock(mutex_);
  if (!queue_.empty()) return 0;  // those waiting come first
  int n = std::max(0, std::min(most, free_));
  free_ -= n;
  return n;
}

void WorkBudget::release(int slots) {
  std::lock_guard lock(mutex_);
  free_ += slots;
  freed_.notify_all();
}

}  // namespace retrystorm
