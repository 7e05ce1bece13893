// What the example servers share: their --host, --port, --threads and --transport
// checked, serving on that transport, and a shutdown on SIGINT / SIGTERM.
//
//   ABSL_FLAG(std::string, host, "127.0.0.1", "...");   // and port, threads, transport,
//                                                       // each with this server's default
//   int main(int argc, char** argv) {
//     std::optional<gyre::examples::ServerSpec> spec = gyre::examples::ParseServerCommandLine(
//         "my_server", argc, argv, {FLAGS_host, FLAGS_port, FLAGS_threads, FLAGS_transport});
//     if (!spec) return 1;
//     return gyre::examples::ServeUntilSignal(*spec, init_pipeline);
//   }
//
// Thread safety: ParseServerCommandLine and BlockShutdownSignals must run on the main
// thread before any other thread starts (threads inherit its signal mask); the rest are
// plain functions.
#ifndef GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
#define GYRE_EXAMPLES_COMMON_SERVER_CLI_H_

#include <signal.h>

#include <functional>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
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
  sigset_t signals{};  // SIGINT and SIGTERM, blocked in every thread
};

// The flags an example server defines, each with that server's own default.
struct ServerFlags {
  const absl::Flag<std::string>& host;
  const absl::Flag<int>& port;
  const absl::Flag<int>& threads;
  const absl::Flag<std::string>& transport;
};

// An example server's main up to serving: parses the command line, blocks the shutdown
// signals and builds the ServerSpec `flags` describe. InvalidArgument unless 0 <= port
// <= 65535 (0: any free port), threads >= 0 (0: the default), host is a numeric address
// and transport is "nio" or "oio": then prints "<name>: <error>" on stderr and returns
// nullopt (exit code 1).
std::optional<ServerSpec> ParseServerCommandLine(std::string name, int argc, char** argv,
                                                 const ServerFlags& flags);

// Serves `spec.address` with a ServerBootstrap on `spec.transport` (nio: one loop
// accepts, `threads` loops serve; oio: one thread accepts, each connection gets a thread
// of its own). Each connection gets TCP_NODELAY and its pipeline from `init` (an error
// closes it). Prints "<name> listening on HOST:PORT (...)" on stdout once bound, then
// serves until one of `spec.signals` arrives; closes the listener and shuts both groups down
// gracefully (2 s each). Returns the exit code: 0, or 1 after printing the error (a bad
// --transport, a failed bind) on stderr.
int ServeUntilSignal(const ServerSpec& spec, std::function<absl::Status(Channel&)> init);

// Prints "<name>: <status>" on stderr; returns 1 (the exit code).
int Fail(const std::string& name, const absl::Status& status);

}  // namespace gyre::examples

#endif  // GYRE_EXAMPLES_COMMON_SERVER_CLI_H_
