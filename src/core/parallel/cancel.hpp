// Work nobody waits for any more stops: requests made of many runs (sweeps,
// ladders, tipping points) poll a check between runs, and every engine polls
// the check of the work its thread does inside a run, so that no single run,
// however long or however wrong, can hold a thread past the server's deadline
// (docs/http-api.md, "Security model").
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace retrystorm {

// True when the work is no longer wanted. Called from worker threads too.
using CancelCheck = std::function<bool()>;

class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled: nobody waits for the answer") {}
};

// Throws Cancelled when `cancelled` says so; a no-op without a check.
inline void throw_if_cancelled(const CancelCheck& cancelled) {
  if (cancelled && cancelled()) throw Cancelled();
}

// The check of the work this thread does, for the engines' inner loops: set
// for the lifetime of the scope, the previous one restored after. Outside
// any scope nothing is polled and no run is ever stopped.
class CancelScope {
 public:
  explicit CancelScope(const CancelCheck& check) : previous_(current_) {
    if (check) current_ = &check;
  }
  ~CancelScope() { current_ = previous_; }
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

  // Throws Cancelled when the scope's check says so.
  static void check() {
    if (current_) throw_if_cancelled(*current_);
  }
  static const CancelCheck* current() { return current_; }

 private:
  static inline thread_local const CancelCheck* current_ = nullptr;
  const CancelCheck* previous_;
};

// What an engine calls every event or step: asks the scope's check once every
// kEvery calls, so that neither the thread-local look-up nor a check that makes
// a system call shows in the run's time.
class CancelPoll {
 public:
  void operator()() {
    if ((++calls_ & (kEvery - 1)) == 0) CancelScope::check();
  }

 private:
  static constexpr uint32_t kEvery = 1u << 14;
  uint32_t calls_ = 0;
};

}  // namespace retrystorm
