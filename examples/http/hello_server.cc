// The TechEmpower plaintext server on gyre: HttpServerCodec (keeping connections alive)
// and HelloHandler in each connection's pipeline.
//
//   hello_server --port=8080 --threads=1
//   hello_server --port=8080 --transport=oio        # a thread per connection
//   curl http://127.0.0.1:8080/plaintext            # Hello, World!
//
// nio: one loop accepts; --threads loops (0: twice the cores) serve the connections.
// oio: one thread accepts; each connection gets its own thread (--threads > 0 caps the
// connections served at once). Prints "hello_server listening on HOST:PORT (...)" once
// bound; on SIGINT or SIGTERM it shuts down and prints its request counts on stderr.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/examples/common/server_cli.h"
#include "gyre/examples/http/hello_handler.h"

ABSL_FLAG(int, port, 8080, "TCP port to listen on (0: any free port)");
ABSL_FLAG(int, threads, 0, "nio: worker loops (0: twice the hardware concurrency); "
                           "oio: most connections at once (0: no cap)");
ABSL_FLAG(std::string, host, "127.0.0.1", "numeric address to bind");
ABSL_FLAG(std::string, transport, "nio", "nio (epoll loops) or oio (a thread per connection)");

int main(int argc, char** argv) {
  std::optional<gyre::examples::ServerSpec> spec = gyre::examples::ParseServerCommandLine(
      "hello_server", argc, argv, {FLAGS_host, FLAGS_port, FLAGS_threads, FLAGS_transport});
  if (!spec) return 1;
  auto hello = std::make_shared<gyre::HelloHandler>();  // sharable: counts every request
  auto init = [hello](gyre::Channel& child) {
    return gyre::AddHelloPipeline(child.pipeline(), hello);
  };
  const int code = gyre::examples::ServeUntilSignal(*spec, init);
  std::fprintf(stderr, "hello_server: %llu requests, %llu bad requests\n",
               static_cast<unsigned long long>(hello->requests()),
               static_cast<unsigned long long>(hello->bad_requests()));
  return code;
}
