// Helpers shared by the stress and fault-injection tests: the scale profile, fd
// counting, the fd limit, and std-only handshakes.
//
//   const int n = gyre::stress::Scaled(/*short_n=*/10'000, /*long_n=*/100'000);
//   const int fds = gyre::stress::OpenFdCount();
//
// The profile comes from GYRE_STRESS_PROFILE ("short", the default, or "long"; `./dev
// stress` sets long). Under a sanitizer the short scale is divided by kSanitizerDivisor
// (the long one is not: a long sanitized run is asked for on purpose).
//
// Thread safety: every helper is thread-safe.
#ifndef GYRE_STRESS_STRESS_UTIL_H_
#define GYRE_STRESS_STRESS_UTIL_H_

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "gyre/testing/budget.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/testing/stream_test_util.h"

namespace gyre {
namespace stress {

// True under ThreadSanitizer or AddressSanitizer.
using ::gyre::testing::kSanitized;

inline constexpr int kSanitizerDivisor = 5;

// How long a handshake waits before the test gives up (a failure, not a timing check).
inline constexpr std::chrono::seconds kHandshakeTimeout{120};

// True when GYRE_STRESS_PROFILE=long.
inline bool LongProfile() {
  const char* p = std::getenv("GYRE_STRESS_PROFILE");
  return p != nullptr && std::strcmp(p, "long") == 0;
}

// `long_n` in the long profile, else `short_n` (divided under a sanitizer, at least 1).
inline int Scaled(int short_n, int long_n) {
  if (LongProfile()) return long_n;
  if (kSanitized) return short_n / kSanitizerDivisor > 0 ? short_n / kSanitizerDivisor : 1;
  return short_n;
}

// The number of open file descriptors of this process (see testing/stream_test_util.h).
using ::gyre::testing::OpenFdCount;

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit.
inline long RaiseFdLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return -1;
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  getrlimit(RLIMIT_NOFILE, &r);
  return static_cast<long>(r.rlim_cur);
}

// testing::ConnectLoopback with 30 s send and receive timeouts (so a lost byte fails
// the test instead of hanging it) and TCP_NODELAY. -1 on failure.
inline int ConnectLoopback(uint16_t port, int rcvbuf = 0) {
  int fd = testing::ConnectLoopback(port, rcvbuf);
  if (fd < 0) return -1;
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Sends all of `data`; false on error.
inline bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Receives exactly `n` bytes (appended to `out`); false on error, EOF or timeout.
inline bool RecvExactly(int fd, size_t n, std::string* out) {
  char buf[16384];
  while (n > 0) {
    ssize_t got = recv(fd, buf, n < sizeof(buf) ? n : sizeof(buf), 0);
    if (got <= 0) return false;
    out->append(buf, static_cast<size_t>(got));
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Closes `fd` with SO_LINGER 0: the peer gets a RST instead of a FIN.
inline void CloseWithReset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

// A counter one can wait on; WaitFor gives up after this file's kHandshakeTimeout.
class Counter : public ::gyre::test::Counter {
 public:
  bool WaitFor(int n) { return test::Counter::WaitFor(n, kHandshakeTimeout); }
};

}  // namespace stress
}  // namespace gyre

#endif  // GYRE_STRESS_STRESS_UTIL_H_
