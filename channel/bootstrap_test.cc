#include "gyre/channel/bootstrap.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/testing/embedded_channel.h"
#include "gyre/testing/embedded_event_loop.h"

namespace gyre {
namespace {

using ::gyre::testing::EmbeddedChannel;
using ::gyre::testing::EmbeddedEventLoop;

absl::StatusOr<std::shared_ptr<Channel>> NewEmbedded() {
  return std::shared_ptr<Channel>(EmbeddedChannel::CreateUnregistered());
}

class Marker : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
};

TEST(BootstrapTest, MissingPiecesAreReported) {
  EmbeddedEventLoop loop;
  Bootstrap no_group;
  no_group.SetChannelFactory(NewEmbedded);
  EXPECT_EQ(no_group.Connect(SocketAddress::Loopback(1)).Cause().code(),
            absl::StatusCode::kFailedPrecondition);
  Bootstrap no_channel;
  no_channel.Group(&loop);
  EXPECT_EQ(no_channel.Connect(SocketAddress::Loopback(1)).Cause().code(),
            absl::StatusCode::kFailedPrecondition);
  Bootstrap bad_option;
  bad_option.Group(&loop).SetChannelFactory(NewEmbedded).Option(ChannelOption::kSoRcvbuf, -5);
  EXPECT_EQ(bad_option.Connect(SocketAddress::Loopback(1)).Cause().code(),
            absl::StatusCode::kInvalidArgument);
  ServerBootstrap no_child;
  no_child.Group(&loop).SetChannelFactory(NewEmbedded);
  EXPECT_EQ(no_child.Bind(SocketAddress::Loopback(0)).Cause().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(BootstrapTest, ConnectRegistersAndConnects) {
  EmbeddedEventLoop loop;
  Bootstrap b;
  b.Group(&loop)
      .SetChannelFactory(NewEmbedded)
      .Option(ChannelOption::kTcpNodelay, true)
      .Handler(std::make_shared<Marker>());
  Future<std::shared_ptr<Channel>> f = b.Connect(SocketAddress::Loopback(9));
  loop.RunPendingTasks();
  ASSERT_TRUE(f.IsSuccess()) << f.Cause();
  std::shared_ptr<Channel> ch = *f.GetNow();
  EXPECT_EQ(ch->event_loop(), &loop);
  EXPECT_TRUE(ch->IsRegistered());
  EXPECT_EQ(ch->pipeline().Names().size(), 1u);
  EXPECT_EQ(ch->config().Get(ChannelOption::kTcpNodelay), true);
  ch->Close();
  loop.RunPendingTasks();
}

TEST(ServerBootstrapTest, AcceptedChildrenGetHandlerOptionsAndChildGroup) {
  EmbeddedEventLoop boss;
  EmbeddedEventLoop workers;
  int initialized = 0;
  ServerBootstrap sb;
  sb.Group(&boss, &workers)
      .SetChannelFactory(NewEmbedded)
      .Option(ChannelOption::kSoBacklog, 128)
      .ChildOption(ChannelOption::kAutoRead, false)
      .ChildHandler(std::make_shared<ChannelInitializer>([&](Channel& ch) {
        ++initialized;
        return ch.pipeline().AddLast("marker", std::make_shared<Marker>());
      }));
  Future<std::shared_ptr<Channel>> bound = sb.Bind(SocketAddress::Loopback(0));
  boss.RunPendingTasks();
  ASSERT_TRUE(bound.IsSuccess()) << bound.Cause();
  std::shared_ptr<Channel> server = *bound.GetNow();
  EXPECT_EQ(server->config().Get(ChannelOption::kSoBacklog), 128);
  EXPECT_THAT(server->pipeline().Names(), ::testing::ElementsAre("acceptor"));

  std::shared_ptr<Channel> child = EmbeddedChannel::CreateUnregistered();
  server->pipeline().FireChannelRead(child);  // what a server transport does per accept
  boss.RunPendingTasks();
  workers.RunPendingTasks();
  EXPECT_EQ(child->event_loop(), &workers);
  EXPECT_EQ(initialized, 1);
  EXPECT_THAT(child->pipeline().Names(), ::testing::ElementsAre("marker"));
  EXPECT_FALSE(child->config().auto_read());
  // Other messages pass the acceptor by.
  server->pipeline().FireChannelRead(std::string("not a channel"));
  child->Close();
  server->Close();
  boss.RunPendingTasks();
  workers.RunPendingTasks();
}

}  // namespace
}  // namespace gyre
