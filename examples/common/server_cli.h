// What the example servers share on their command line: the listen address from --host,
// --port and --threads, and a shutdown on SIGINT / SIGTERM.
//
//   int main(int argc, char** argv) {
//     absl::ParseCommandLine(argc, argv);
//     sigset_t signals = gyre::examples::BlockShutdownSignals();   // before any thread
//     absl::StatusOr<gyre::SocketAddress> addr = gyre::examples::ServerAddress(host, port, threads);
//     ...start serving...
//     gyre::examples::WaitForShutdownSignal(signals);
//   }
//
// Thread safety: BlockShutdownSignals must run on the main thread before any other thread
// starts (threads inherit its signal mask); the rest are plain functions.
#ifndef GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
#define GYRE_EXAMPLES_COMMON_SERVER_CLI_H_

#include <signal.h>

#include <string>

#include "absl/status/statusor.h"
#include "gyre/channel/socket_address.h"

namespace gyre::examples {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts
// afterwards), so that WaitForShutdownSignal can take them synchronously. Returns them.
sigset_t BlockShutdownSignals();

// Waits until one of `signals` (from BlockShutdownSignals) arrives.
void WaitForShutdownSignal(const sigset_t& signals);

// The address to listen on: InvalidArgument unless 0 <= port <= 65535 (0: any free port)
// and threads >= 0 (0: the default), or when `host` is not a numeric address.
absl::StatusOr<SocketAddress> ServerAddress(const std::string& host, int port, int threads);

}  // namespace gyre::examples

#endif  // GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
