// An echo server: every byte a client sends comes back to it.
//
//   echo_server --port=8007 --threads=4
//   echo_server --port=8007 --transport=oio      # a thread per connection
//   nc 127.0.0.1 8007
//
// nio: one loop accepts; --threads loops (0: twice the cores) serve the connections.
// oio: one thread accepts; each connection gets a thread of its own (--threads > 0
// caps the connections served at once).
#include <cstdio>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "gyre/examples/common/server_cli.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/socket_address.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/oio/oio_event_loop_group.h"
#include "gyre/transport/oio/oio_server_socket_channel.h"

ABSL_FLAG(int, port, 8007, "TCP port to listen on (0: any free port)");
ABSL_FLAG(int, threads, 0, "worker loops (0: twice the hardware concurrency)");
ABSL_FLAG(std::string, host, "0.0.0.0", "numeric address to bind");
ABSL_FLAG(std::string, transport, "nio", "nio (epoll loops) or oio (a thread per connection)");

namespace {

// Writes back what it reads; flushes once per read batch.
class EchoHandler final : public gyre::ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(gyre::ChannelHandlerContext& ctx, gyre::Message msg) override {
    ctx.Write(std::move(msg));
  }
  void ChannelReadComplete(gyre::ChannelHandlerContext& ctx) override { ctx.Flush(); }
  void ExceptionCaught(gyre::ChannelHandlerContext& ctx, absl::Status cause) override {
    std::fprintf(stderr, "connection error: %s\n", cause.ToString().c_str());
    ctx.channel().Close();
  }
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "echo_server: %s\n", s.ToString().c_str());
  return 1;
}

// Listens on `addr` with transport `Group` / `Server`: a group of `boss_arg` accepts,
// a group of `worker_arg` serves the connections (see the file comment for what each
// argument means to each transport). Returns when the server channel closes.
template <typename Group, typename Server>
int Serve(const gyre::SocketAddress& addr, int boss_arg, int worker_arg) {
  auto bosses = Group::Create(boss_arg);
  if (!bosses.ok()) return Fail(bosses.status());
  auto workers = Group::Create(worker_arg);
  if (!workers.ok()) return Fail(workers.status());
  auto echo = std::make_shared<EchoHandler>();
  typename Server::ChildSetup setup;
  setup.group = workers->get();
  setup.initializer = [echo](auto& child) {
    absl::Status s = child.pipeline().AddLast("echo", echo);
    if (!s.ok()) child.Close();
  };
  setup.options.push_back(gyre::ChannelOptionSetting{gyre::ChannelOptionId::kTcpNodelay,
                                                     "TCP_NODELAY", true});
  auto server = Server::Create(std::move(setup));
  gyre::ChannelFuture registered = (*bosses)->Register(server);
  (void)registered.Await();
  if (!registered.IsSuccess()) return Fail(registered.Cause());
  gyre::ChannelFuture bound = server->Bind(addr);
  (void)bound.Await();
  if (!bound.IsSuccess()) return Fail(bound.Cause());
  if constexpr (std::is_same_v<Group, gyre::OioEventLoopGroup>) {
    std::printf("echo_server (oio) listening on %s, a thread per connection\n",
                server->local_address().ToString().c_str());
  } else {
    std::printf("echo_server listening on %s with %d worker loops\n",
                server->local_address().ToString().c_str(), (*workers)->ExecutorCount());
  }
  std::fflush(stdout);
  (void)server->CloseFuture().Await();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<gyre::SocketAddress> addr = gyre::examples::ServerAddress(
      absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port), threads);
  if (!addr.ok()) return Fail(addr.status());
  const std::string transport = absl::GetFlag(FLAGS_transport);
  // oio: bosses with no cap, workers capped at --threads connections (0: none).
  if (transport == "oio") {
    return Serve<gyre::OioEventLoopGroup, gyre::OioServerSocketChannel>(*addr, 0, threads);
  }
  if (transport != "nio") return Fail(absl::InvalidArgumentError("--transport must be nio or oio"));
  return Serve<gyre::NioEventLoopGroup, gyre::NioServerSocketChannel>(*addr, 1, threads);
}
