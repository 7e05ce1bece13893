// Graceful shutdown of a NioEventLoop drains its channels' queued writes.
//
// API.md ("Single-threaded executors"): "an event loop's graceful shutdown lets its
// channels finish the writes already queued within the timeout before they are
// closed", where Netty closes every channel at once (netty/netty#3699,
// NETTY_REFERENCE.md §2.1). Listening channels and idle channels still close at once;
// at the timeout (on the executor's ticker) the rest are force-closed and their
// pending writes fail.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/graceful_drain_test_util.h"
#include "gyre/testing/manual_ticker.h"
#include "gyre/testing/stream_test_util.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using testing::Collector;

// What the child saw: it became active when accepted, and closed.
const std::vector<std::string> kClosedEvents = {"active", "inactive", "unregistered"};

// One loop serving a listening channel and the child it accepts from a raw peer: the
// child is the channel whose writes drain (channel_).
class GracefulDrainTest
    : public testing::GracefulDrainFixture<NioEventLoopGroup, NioSocketChannel> {
 protected:
  // `ticker` null: the system clock; else ticker_.
  void Start(Ticker* ticker) {
    fds_before_ = testing::OpenFdCount();
    GroupOptions options;
    options.ticker = ticker;
    absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> g = NioEventLoopGroup::Create(1, options);
    ASSERT_TRUE(g.ok()) << g.status();
    group_ = *std::move(g);
    loop_ = group_->loops()[0];
    NioServerSocketChannel::ChildSetup setup;  // children on the server's own loop
    std::shared_ptr<Collector> recorder = recorder_;
    Promise<std::shared_ptr<NioSocketChannel>> child = child_;
    setup.initializer = [recorder, child](NioSocketChannel& ch) mutable {
      ASSERT_TRUE(ch.pipeline().AddLast("recorder", recorder).ok());
      child.TrySuccess(std::static_pointer_cast<NioSocketChannel>(ch.shared_from_this()));
    };
    setup.options = {ChannelOptionSetting{ChannelOptionId::kSoSndbuf, "SO_SNDBUF", 32 * 1024}};
    server_ = NioServerSocketChannel::Create(std::move(setup));
    absl::Status bound =
        testing::RegisterAndBind(*group_, server_, SocketAddress::Loopback(0), kWait);
    ASSERT_TRUE(bound.ok()) << bound;
    peer_ = testing::ConnectLoopback(server_->local_address().port(), 16 * 1024);
    ASSERT_GE(peer_, 0);
    ASSERT_TRUE(child_.AwaitFor(kWait));
    channel_ = *child_.GetNow();
  }

  // Also releases the listening channel.
  void CloseAll() override {
    server_.reset();
    GracefulDrainFixture::CloseAll();
  }

  std::shared_ptr<NioServerSocketChannel> server_;
  std::shared_ptr<Collector> recorder_ = std::make_shared<Collector>();
  Promise<std::shared_ptr<NioSocketChannel>> child_{nullptr};
};

// The promise itself: the writes queued when shutdown begins (flushed or not) all reach
// the peer, in order, once it reads; their futures succeed; the peer then sees a clean
// EOF, and only then does the loop terminate. Bytes the peer sends meanwhile are not
// delivered to the pipeline (and cause no reset).
TEST_F(GracefulDrainTest, QueuedWritesReachAPeerThatReadsLateThenEofApi3699) {
  ASSERT_NO_FATAL_FAILURE(Start(nullptr));
  std::vector<ChannelFuture> writes = QueueWrites();

  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), kWait);
  // The listening channel closes at once: no new connections.
  ASSERT_TRUE(server_->CloseFuture().AwaitFor(kWait));
  // The peer has read nothing yet, so the drain cannot have finished: the channel is
  // open and the loop is held up (old behaviour: closed, writes failed, terminated).
  const char late[] = "sent while the server drains";
  ASSERT_EQ(send(peer_, late, sizeof(late), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(late)));
  testing::ExpectDrainHeldUp(terminated, *channel_, writes.back());
  EXPECT_FALSE(loop_->IsTerminated());

  // Now the peer reads everything, checking every byte.
  ASSERT_NO_FATAL_FAILURE(
      testing::ReadStreamThenAwaitDrain(peer_, kTotal, writes, terminated, kWait));
  EXPECT_TRUE(terminated.IsSuccess()) << terminated.Cause();
  EXPECT_TRUE(loop_->IsTerminated());
  EXPECT_FALSE(channel_->IsOpen());
  EXPECT_TRUE(channel_->CloseFuture().IsDone());
  EXPECT_EQ(recorder_->events(), kClosedEvents);
  EXPECT_EQ(recorder_->bytes(), 0u);  // reads stop once draining
  EXPECT_EQ(channel_->PendingOutboundBytes(), 0);
}

// At the graceful-shutdown timeout (ManualTicker time, no sleeping for it) the channels
// still draining are force-closed: the pending write fails, the loop terminates, no fd
// is left open.
TEST_F(GracefulDrainTest, TimeoutForceClosesAPeerThatNeverReadsApi3699) {
  ASSERT_NO_FATAL_FAILURE(Start(&ticker_));
  std::vector<ChannelFuture> writes = QueueWrites();

  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10));
  ASSERT_TRUE(server_->CloseFuture().AwaitFor(kWait));
  // Short of the timeout the drain goes on; past it, the loop terminates.
  ASSERT_NO_FATAL_FAILURE(testing::AdvancePastDrainTimeout(ticker_, absl::Seconds(10), terminated,
                                                           *channel_, writes.back(), kWait));
  EXPECT_TRUE(terminated.IsSuccess()) << terminated.Cause();
  EXPECT_FALSE(channel_->IsOpen());
  EXPECT_EQ(recorder_->events(), kClosedEvents);
  ASSERT_NO_FATAL_FAILURE(testing::ExpectForceClosedWriteFailed(writes.back()));
  EXPECT_FALSE(writes.back().IsSuccess());
  EXPECT_EQ(channel_->PendingOutboundBytes(), 0);

  CloseAllAndExpectNoFdLeft();
}

// Nothing queued: the accepted channel and the listening channel close at once, and
// the loop terminates with the ticker never moving (so not by the timeout).
TEST_F(GracefulDrainTest, IdleAndListeningChannelsCloseAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Start(&ticker_));

  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), absl::Hours(1));
  ASSERT_TRUE(terminated.AwaitFor(kWait));
  EXPECT_TRUE(terminated.IsSuccess()) << terminated.Cause();
  EXPECT_FALSE(server_->IsOpen());
  EXPECT_FALSE(channel_->IsOpen());
  EXPECT_EQ(recorder_->events(), kClosedEvents);
  testing::ExpectPeerSeesEof(peer_);
}

// Writes made while draining (here from a write listener) are flushed and sent too; the
// channel closes only once they are out.
TEST_F(GracefulDrainTest, WritesQueuedWhileDrainingAreSentBeforeTheClose) {
  ASSERT_NO_FATAL_FAILURE(Start(nullptr));
  std::vector<ChannelFuture> writes = QueueWrites();
  Promise<ChannelFuture> extra(nullptr);
  std::shared_ptr<NioSocketChannel> ch = channel_;
  // The first write completes only after shutdown began (the peer reads nothing yet).
  writes.front().AddListener([ch, extra](const ChannelFuture&) mutable {
    extra.TrySuccess(ch->Write(testing::StreamChunk(kTotal, 1000)));  // no Flush
  });
  Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), kWait);
  ASSERT_TRUE(server_->CloseFuture().AwaitFor(kWait));

  testing::ExpectStreamThenEof(peer_, kTotal + 1000);
  ASSERT_TRUE(extra.AwaitFor(kWait));
  ChannelFuture extra_write = *extra.GetNow();
  ASSERT_TRUE(extra_write.AwaitFor(kWait));
  EXPECT_TRUE(extra_write.IsSuccess()) << extra_write.Cause();
  ASSERT_TRUE(terminated.AwaitFor(kWait));
  EXPECT_EQ(recorder_->events(), kClosedEvents);
}

}  // namespace
}  // namespace gyre
