// Graceful shutdown of a ThreadPerChannelEventLoop drains its channel's queued writes,
// as the nio transport does (API.md, "Single-threaded executors": "an event loop's
// graceful shutdown lets its channels finish the writes already queued within the
// timeout before they are closed"; Netty closes them at once, netty/netty#3699).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/graceful_drain_test_util.h"
#include "gyre/testing/manual_ticker.h"
#include "gyre/testing/stream_test_util.h"
#include "gyre/transport/oio/oio_event_loop_group.h"
#include "gyre/transport/oio/oio_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

// Swallows inbound events (the channel's pipeline needs a handler).
class Sink final : public ChannelInboundHandler {
 public:
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override {}
};

// An oio client channel (channel_) connected to a raw 127.0.0.1 peer whose receive
// buffer is small.
class OioGracefulDrainTest
    : public testing::GracefulDrainFixture<OioEventLoopGroup, OioSocketChannel> {
 protected:
  void Start(Ticker* ticker) {
    fds_before_ = testing::OpenFdCount();
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener_, 0);
    int rcvbuf = 16 * 1024;  // inherited by the accepted socket
    setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(listen(listener_, 4), 0);
    ASSERT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    GroupOptions options;
    options.ticker = ticker;
    absl::StatusOr<std::unique_ptr<OioEventLoopGroup>> g = OioEventLoopGroup::Create(0, options);
    ASSERT_TRUE(g.ok()) << g.status();
    group_ = *std::move(g);
    Bootstrap client;
    client.Group(group_.get())
        .Channel<OioSocketChannel>()
        .Option(ChannelOption::kSoSndbuf, 32 * 1024)
        .Handler(std::make_shared<Sink>());
    absl::StatusOr<std::shared_ptr<Channel>> ch =
        client.Connect(SocketAddress::Loopback(ntohs(addr.sin_port))).Sync();
    ASSERT_TRUE(ch.ok()) << ch.status();
    channel_ = std::static_pointer_cast<OioSocketChannel>(*ch);
    peer_ = accept(listener_, nullptr, nullptr);
    ASSERT_GE(peer_, 0);
    loop_ = channel_->event_loop();
  }

  // Also closes the listener.
  void CloseAll() override {
    if (listener_ >= 0) close(listener_);
    listener_ = -1;
    GracefulDrainFixture::CloseAll();
  }

  int listener_ = -1;
};

TEST_F(OioGracefulDrainTest, QueuedWritesReachAPeerThatReadsLateThenEofApi3699) {
  ASSERT_NO_FATAL_FAILURE(Start(nullptr));
  std::vector<ChannelFuture> writes = QueueWrites();
  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), kWait);
  const char late[] = "sent while the client drains";
  ASSERT_EQ(send(peer_, late, sizeof(late), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(late)));
  // The peer has read nothing: the drain cannot have finished.
  testing::ExpectDrainHeldUp(terminated, *channel_, writes.back());

  ASSERT_NO_FATAL_FAILURE(
      testing::ReadStreamThenAwaitDrain(peer_, kTotal, writes, terminated, kWait));
  EXPECT_TRUE(loop_->IsTerminated());
  EXPECT_FALSE(channel_->IsOpen());
}

TEST_F(OioGracefulDrainTest, TimeoutForceClosesAPeerThatNeverReadsApi3699) {
  ASSERT_NO_FATAL_FAILURE(Start(&ticker_));
  std::vector<ChannelFuture> writes = QueueWrites();
  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10));
  ASSERT_NO_FATAL_FAILURE(testing::AdvancePastDrainTimeout(ticker_, absl::Seconds(10), terminated,
                                                           *channel_, writes.back(), kWait));
  EXPECT_TRUE(loop_->IsTerminated());
  EXPECT_FALSE(channel_->IsOpen());
  ASSERT_NO_FATAL_FAILURE(testing::ExpectForceClosedWriteFailed(writes.back()));

  CloseAllAndExpectNoFdLeft();
}

TEST_F(OioGracefulDrainTest, IdleChannelClosesAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Start(&ticker_));
  // The ticker never moves: termination cannot come from the timeout.
  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), absl::Hours(1));
  ASSERT_TRUE(terminated.AwaitFor(kWait));
  EXPECT_FALSE(channel_->IsOpen());
  testing::ExpectPeerSeesEof(peer_);
}

}  // namespace
}  // namespace gyre
