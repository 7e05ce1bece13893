// What the transports' graceful-drain tests share (nio and oio): an event loop's
// graceful shutdown lets its channels finish the writes already queued before they are
// closed, and force-closes them at the timeout (API.md, "Single-threaded executors";
// Netty closes them at once, netty/netty#3699). Each transport's fixture derives from
// GracefulDrainFixture, sets up its channel and raw peer, and its tests call these
// checks at the same steps:
//
//   class OioGracefulDrainTest
//       : public testing::GracefulDrainFixture<OioEventLoopGroup, OioSocketChannel> {...};
//
//   std::vector<ChannelFuture> writes = QueueWrites();
//   Future<void> terminated = group_->ShutdownGracefully(absl::ZeroDuration(), kTimeout);
//   ASSERT_NO_FATAL_FAILURE(
//       testing::AdvancePastDrainTimeout(ticker_, kTimeout, terminated, *channel_,
//                                        writes.back(), kWait));
//
// Thread safety: call from the test's thread. Ownership: the fixture owns its peer fd
// and closes it in CloseAll; the free functions own nothing.
#ifndef GYRE_TESTING_GRACEFUL_DRAIN_TEST_UTIL_H_
#define GYRE_TESTING_GRACEFUL_DRAIN_TEST_UTIL_H_

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_future.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/future.h"
#include "gyre/testing/budget.h"
#include "gyre/testing/manual_ticker.h"
#include "gyre/testing/stream_test_util.h"

namespace gyre {
namespace testing {

// The state both transports' drain fixtures hold: a ManualTicker for the timeout, the
// group, the loop and channel whose writes drain, and the raw peer at the other end of
// that channel. `Group` is the transport's event loop group, `Ch` its socket channel.
// The derived fixture's Start() fills them in; TearDown (CloseAll) releases them.
template <typename Group, typename Ch>
class GracefulDrainFixture : public ::testing::Test {
 protected:
  static inline const absl::Duration kWait = Scaled(absl::Seconds(60));
  // Far more than the (shrunk) socket buffers of both ends hold.
  static constexpr size_t kChunk = 1 << 20;
  static constexpr int kChunks = 4;
  static constexpr uint64_t kTotal = uint64_t{kChunk} * kChunks;

  // Queues kTotal bytes on channel_ in one task on loop_, the last chunk unflushed, and
  // checks that most of them wait in the channel (QueueMostlyPendingStreamWrites).
  std::vector<ChannelFuture> QueueWrites() {
    return QueueMostlyPendingStreamWrites(loop_, channel_, kChunks, kChunk, kWait);
  }

  // Closes the peer and releases the channel and the group (which closes its fds).
  virtual void CloseAll() {
    if (peer_ >= 0) close(peer_);
    peer_ = -1;
    channel_.reset();
    group_.reset();
  }

  void TearDown() override { CloseAll(); }

  // CloseAll, then expects every fd the test opened to be closed again.
  void CloseAllAndExpectNoFdLeft() {
    CloseAll();
    EXPECT_EQ(OpenFdCount(), fds_before_);
  }

  ManualTicker ticker_;  // outlives the group (declared first)
  std::unique_ptr<Group> group_;
  EventLoop* loop_ = nullptr;
  std::shared_ptr<Ch> channel_;  // the channel whose writes drain
  int peer_ = -1;                // the raw socket at its other end
  int fds_before_ = -1;          // OpenFdCount() when the test started
};

// Expects the drain to be going on: `terminated` does not complete within 100 ms and
// `ch` is still open.
inline void ExpectStillDraining(const Future<void>& terminated, const Channel& ch) {
  EXPECT_FALSE(terminated.AwaitFor(absl::Milliseconds(100)));
  EXPECT_TRUE(ch.IsOpen());
}

// ExpectStillDraining, and `last_write` (the last of the queued writes) not done yet.
inline void ExpectDrainHeldUp(const Future<void>& terminated, const Channel& ch,
                              const ChannelFuture& last_write) {
  ExpectStillDraining(terminated, ch);
  EXPECT_FALSE(last_write.IsDone());
}

// For a graceful shutdown begun with `timeout` on `ticker` while the peer reads nothing:
// the drain goes on at once and 1 s short of the timeout (ExpectDrainHeldUp), then,
// 1 s past it, `terminated` completes within `wait` (an ASSERT).
inline void AdvancePastDrainTimeout(ManualTicker& ticker, absl::Duration timeout,
                                    const Future<void>& terminated, const Channel& ch,
                                    const ChannelFuture& last_write, absl::Duration wait) {
  ExpectStillDraining(terminated, ch);
  // Short of the timeout the drain goes on.
  ticker.Advance(timeout - absl::Seconds(1));
  ExpectDrainHeldUp(terminated, ch, last_write);

  ticker.Advance(absl::Seconds(2));
  ASSERT_TRUE(terminated.AwaitFor(wait));
}

// Expects `write`, cut short by a forced close, to have failed with FailedPrecondition
// (an ASSERT that it is done).
inline void ExpectForceClosedWriteFailed(const ChannelFuture& write) {
  ASSERT_TRUE(write.IsDone());
  EXPECT_EQ(write.Cause().code(), absl::StatusCode::kFailedPrecondition) << write.Cause();
}

// The peer reads everything, checking every byte: exactly the stream's first `total`
// bytes then EOF (ExpectStreamThenEof); then each of `writes` succeeds and `terminated`
// completes, each within `wait` (ASSERTs).
inline void ReadStreamThenAwaitDrain(int peer, uint64_t total,
                                     const std::vector<ChannelFuture>& writes,
                                     const Future<void>& terminated, absl::Duration wait) {
  ExpectStreamThenEof(peer, total);
  ASSERT_NO_FATAL_FAILURE(ExpectWritesSucceed(writes, wait));
  ASSERT_TRUE(terminated.AwaitFor(wait));
}

// Expects a blocking recv of one byte on `peer` to see EOF.
inline void ExpectPeerSeesEof(int peer) {
  char c;
  EXPECT_EQ(recv(peer, &c, 1, 0), 0);
}

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_GRACEFUL_DRAIN_TEST_UTIL_H_
