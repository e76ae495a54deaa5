// Requests made of many runs (sweeps, ladders, tipping points) poll a check
// between runs, so the server stops work whose client has gone away
// (docs/http-api.md, "Security model").
#pragma once

#include <functional>
#include <stdexcept>

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

}  // namespace retrystorm
