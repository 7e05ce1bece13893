// A ServerBootstrap server on the epoll transport for tests on real connections: bound to
// 127.0.0.1 (an ephemeral port), with a one-loop boss group and a two-loop worker group
// of its own.
//
//   absl::StatusOr<std::unique_ptr<testing::NioTestServer>> server =
//       testing::NioTestServer::Start([&](ServerBootstrap& b) {
//         b.Option(ChannelOption::kSoBacklog, 256).ChildHandler(handler);
//       });
//   ASSERT_TRUE(server.ok()) << server.status();
//   int fd = testing::ConnectLoopback((*server)->port());
//   ...
//   ASSERT_NO_FATAL_FAILURE((*server)->Shutdown());
//
// Thread safety: thread-compatible; use it from the test's thread. Ownership: it owns
// both groups and the listening channel; destroying it destroys the groups.
#ifndef GYRE_TESTING_NIO_TEST_SERVER_H_
#define GYRE_TESTING_NIO_TEST_SERVER_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/socket_address.h"
#include "gyre/testing/budget.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"

namespace gyre {
namespace testing {

class NioTestServer {
 public:
  // Creates the groups, sets them and NioServerSocketChannel on a ServerBootstrap, lets
  // `configure` add the options and handlers, and binds it. Returns the error of the
  // first step that fails.
  static absl::StatusOr<std::unique_ptr<NioTestServer>> Start(
      absl::FunctionRef<void(ServerBootstrap&)> configure) {
    auto server = std::unique_ptr<NioTestServer>(new NioTestServer());
    absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> bosses = NioEventLoopGroup::Create(1);
    if (!bosses.ok()) return bosses.status();
    server->bosses_ = *std::move(bosses);
    absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> workers = NioEventLoopGroup::Create(2);
    if (!workers.ok()) return workers.status();
    server->workers_ = *std::move(workers);
    ServerBootstrap bootstrap;
    bootstrap.Group(server->bosses_.get(), server->workers_.get())
        .Channel<NioServerSocketChannel>();
    configure(bootstrap);
    absl::StatusOr<std::shared_ptr<Channel>> channel =
        bootstrap.Bind(SocketAddress::Loopback(0)).Sync();
    if (!channel.ok()) return channel.status();
    server->channel_ = *std::move(channel);
    return server;
  }

  // The port it listens on.
  uint16_t port() const { return channel_->local_address().port(); }

  // Closes the listening channel, then shuts the boss and the worker groups down
  // gracefully (no quiet period, a 30 s timeout); ASSERTs that each step completes
  // within its budget. The groups' threads have ended when it returns; their own fds
  // close when this object is destroyed.
  void Shutdown() {
    ASSERT_TRUE(channel_->Close().AwaitFor(Scaled(absl::Seconds(30))));
    ASSERT_TRUE(bosses_->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(30))
                    .AwaitFor(Scaled(absl::Seconds(60))));
    ASSERT_TRUE(workers_->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(30))
                    .AwaitFor(Scaled(absl::Seconds(60))));
  }

 private:
  NioTestServer() = default;

  std::unique_ptr<NioEventLoopGroup> bosses_;
  std::unique_ptr<NioEventLoopGroup> workers_;
  std::shared_ptr<Channel> channel_;
};

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_NIO_TEST_SERVER_H_
