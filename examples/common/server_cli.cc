#include "gyre/examples/common/server_cli.h"

#include <pthread.h>

#include "absl/status/status.h"

namespace gyre::examples {

sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void WaitForShutdownSignal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
}

absl::StatusOr<SocketAddress> ServerAddress(const std::string& host, int port, int threads) {
  if (port < 0 || port > 65535) return absl::InvalidArgumentError("--port must be 0..65535");
  if (threads < 0) return absl::InvalidArgumentError("--threads must be >= 0");
  return SocketAddress::FromHostAndPort(host, port);
}

}  // namespace gyre::examples
