// A loopback port nobody listens on now, for tests that start a server: the
// lab's (bind to port 0, read the port the kernel chose, close); 0 when there
// is none, so the test fails on its own check.
#pragma once

#include <stdexcept>

#include "lab/process.hpp"

namespace retrystorm::testing {

inline int free_port() {
  try {
    return lab::free_port();
  } catch (const std::runtime_error&) {
    return 0;
  }
}

}  // namespace retrystorm::testing
