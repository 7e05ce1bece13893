// What the example servers share: their --host, --port, --threads and --transport
// checked, serving on that transport, and a shutdown on SIGINT / SIGTERM.
//
//   int main(int argc, char** argv) {
//     absl::ParseCommandLine(argc, argv);
//     sigset_t signals = gyre::examples::BlockShutdownSignals();   // before any thread
//     absl::StatusOr<ServerSpec> spec =
//         gyre::examples::MakeServerSpec("my_server", host, port, threads, transport);
//     if (!spec.ok()) return gyre::examples::Fail("my_server", spec.status());
//     return gyre::examples::ServeUntilSignal(*spec, init_pipeline, signals);
//   }
//
// Thread safety: BlockShutdownSignals must run on the main thread before any other thread
// starts (threads inherit its signal mask); the rest are plain functions.
#ifndef GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
#define GYRE_EXAMPLES_COMMON_SERVER_CLI_H_

#include <signal.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/socket_address.h"

namespace gyre::examples {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts
// afterwards), so that WaitForShutdownSignal can take them synchronously. Returns them.
sigset_t BlockShutdownSignals();

// Waits until one of `signals` (from BlockShutdownSignals) arrives.
void WaitForShutdownSignal(const sigset_t& signals);

// A server as its command line chose it.
struct ServerSpec {
  std::string name;              // the program, for its messages ("echo_server")
  std::string transport = "nio";  // "nio" or "oio"
  SocketAddress address;
  // nio: the loops serving connections (0: twice the hardware concurrency);
  // oio: the most connections served at once (0: no cap).
  int threads = 0;
};

// The server the flags describe: InvalidArgument unless 0 <= port <= 65535 (0: any free
// port), threads >= 0 (0: the default), `host` is a numeric address and `transport` is
// "nio" or "oio".
absl::StatusOr<ServerSpec> MakeServerSpec(std::string name, const std::string& host, int port,
                                          int threads, std::string transport);

// Serves `spec.address` with a ServerBootstrap on `spec.transport` (nio: one loop
// accepts, `threads` loops serve; oio: one thread accepts, each connection gets a thread
// of its own). Each connection gets TCP_NODELAY and its pipeline from `init` (an error
// closes it). Prints "<name> listening on HOST:PORT (...)" on stdout once bound, then
// serves until one of `signals` arrives; closes the listener and shuts both groups down
// gracefully (2 s each). Returns the exit code: 0, or 1 after printing the error (a bad
// --transport, a failed bind) on stderr.
int ServeUntilSignal(const ServerSpec& spec, std::function<absl::Status(Channel&)> init,
                     const sigset_t& signals);

// Prints "<name>: <status>" on stderr; returns 1 (the exit code).
int Fail(const std::string& name, const absl::Status& status);

}  // namespace gyre::examples

#endif  // GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
