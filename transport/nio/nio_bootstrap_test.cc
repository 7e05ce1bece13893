// ServerBootstrap / Bootstrap over the epoll transport, end to end on 127.0.0.1.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/stream_test_util.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

class Echo : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    ctx.WriteAndFlush(std::move(msg));
  }
};

TEST(NioBootstrapTest, EchoThroughBootstraps) {
  auto boss = NioEventLoopGroup::Create(1);
  auto workers = NioEventLoopGroup::Create(2);
  ASSERT_TRUE(boss.ok() && workers.ok());
  int children = 0;
  std::mutex mu;
  ServerBootstrap server;
  server.Group(boss->get(), workers->get())
      .Channel<NioServerSocketChannel>()
      .Option(ChannelOption::kSoBacklog, 64)
      .ChildOption(ChannelOption::kTcpNodelay, true)
      .ChildHandler(std::make_shared<ChannelInitializer>([&](Channel& ch) {
        std::lock_guard<std::mutex> lock(mu);
        ++children;
        return ch.pipeline().AddLast("echo", std::make_shared<Echo>());
      }));
  absl::StatusOr<std::shared_ptr<Channel>> listening =
      server.Bind(SocketAddress::Loopback(0)).Sync();
  ASSERT_TRUE(listening.ok()) << listening.status();
  SocketAddress address = (*listening)->local_address();
  ASSERT_NE(address.port(), 0);

  constexpr int kClients = 8;
  std::vector<Future<std::string>> replies;
  std::vector<std::shared_ptr<Channel>> clients;
  for (int i = 0; i < kClients; ++i) {
    std::string text = "hello from client " + std::to_string(i);
    Promise<std::string> reply;
    Bootstrap client;
    client.Group(workers->get())
        .Channel<NioSocketChannel>()
        .Handler(std::make_shared<testing::CollectingHandler>(text.size(), reply));
    absl::StatusOr<std::shared_ptr<Channel>> ch = client.Connect(address).Sync();
    ASSERT_TRUE(ch.ok()) << ch.status();
    ASSERT_TRUE((*ch)->WriteAndFlush(text).Sync().ok());
    replies.push_back(reply);
    clients.push_back(*ch);
  }
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(replies[i].AwaitFor(gyre::testing::Scaled(absl::Seconds(30)))) << i;
    EXPECT_EQ(*replies[i].GetNow(), "hello from client " + std::to_string(i));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(children, kClients);
  }
  for (auto& c : clients) c->Close().Await().IgnoreError();
  (*listening)->Close().Await().IgnoreError();
  EXPECT_TRUE((*listening)->CloseFuture().AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  (*workers)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).Await().IgnoreError();
  (*boss)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).Await().IgnoreError();
}

TEST(NioBootstrapTest, ConnectRefusedFailsTheFuture) {
  auto group = NioEventLoopGroup::Create(1);
  ASSERT_TRUE(group.ok());
  // A socket bound but not listening holds the port for the whole test, so no other test
  // can take it and no TCP self-connect can succeed on it: connecting is refused.
  uint16_t port = 0;
  int fd = testing::BoundNotListening(&port);
  ASSERT_GE(fd, 0);
  const SocketAddress address = SocketAddress::Loopback(port);
  Bootstrap client;
  client.Group(group->get()).Channel<NioSocketChannel>();
  absl::StatusOr<std::shared_ptr<Channel>> ch = client.Connect(address).Sync();
  EXPECT_FALSE(ch.ok());
  if (!ch.ok()) {
    EXPECT_EQ(ch.status().code(), absl::StatusCode::kUnavailable) << ch.status();
  }
  close(fd);
  (*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).Await().IgnoreError();
}

}  // namespace
}  // namespace gyre
