// An echo server: every byte a client sends comes back to it.
//
//   echo_server --port=8007 --threads=4
//   echo_server --port=8007 --transport=oio      # a thread per connection
//   nc 127.0.0.1 8007
//
// nio: one loop accepts; --threads loops (0: twice the cores) serve the connections.
// oio: one thread accepts; each connection gets a thread of its own (--threads > 0
// caps the connections served at once). Prints "echo_server listening on HOST:PORT
// (...)" once bound; SIGINT or SIGTERM closes it and lets the connections drain.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/examples/common/server_cli.h"

ABSL_FLAG(int, port, 8007, "TCP port to listen on (0: any free port)");
ABSL_FLAG(int, threads, 0, "nio: worker loops (0: twice the hardware concurrency); "
                           "oio: most connections at once (0: no cap)");
ABSL_FLAG(std::string, host, "0.0.0.0", "numeric address to bind");
ABSL_FLAG(std::string, transport, "nio", "nio (epoll loops) or oio (a thread per connection)");

namespace {

// Writes back what it reads; flushes once per read batch. The writes take the void
// promise: no one waits on them, so none is made or completed (a failed write reaches
// ExceptionCaught below instead).
class EchoHandler final : public gyre::ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(gyre::ChannelHandlerContext& ctx, gyre::Message msg) override {
    ctx.Write(std::move(msg), ctx.VoidPromise());
  }
  void ChannelReadComplete(gyre::ChannelHandlerContext& ctx) override { ctx.Flush(); }
  void ExceptionCaught(gyre::ChannelHandlerContext& ctx, absl::Status cause) override {
    std::fprintf(stderr, "connection error: %s\n", cause.ToString().c_str());
    ctx.channel().Close();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::optional<gyre::examples::ServerSpec> spec = gyre::examples::ParseServerCommandLine(
      "echo_server", argc, argv, {FLAGS_host, FLAGS_port, FLAGS_threads, FLAGS_transport});
  if (!spec) return 1;
  auto echo = std::make_shared<EchoHandler>();  // sharable: one for every connection
  return gyre::examples::ServeUntilSignal(
      *spec, [echo](gyre::Channel& child) { return child.pipeline().AddLast("echo", echo); });
}
