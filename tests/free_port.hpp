// A loopback port nobody listens on now, for tests that start a server: the
// lab's (bind to port 0, read the port the kernel chose, close); 0 when there
// is none, so the test fails on its own check. A build without the lab
// (RETRYSTORM_LAB=OFF) asks the kernel the same way here.
#pragma once

#include <stdexcept>

#if RETRYSTORM_WITH_LAB
#include "lab/process.hpp"
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace retrystorm::testing {

inline int free_port() {
#if RETRYSTORM_WITH_LAB
  try {
    return lab::free_port();
  } catch (const std::runtime_error&) {
    return 0;
  }
#else
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
#endif
}

}  // namespace retrystorm::testing
