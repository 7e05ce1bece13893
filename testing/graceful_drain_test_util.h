// The checks the transports' graceful-drain tests share (nio and oio): an event loop's
// graceful shutdown lets its channels finish the writes already queued before they are
// closed, and force-closes them at the timeout (API.md, "Single-threaded executors";
// Netty closes them at once, netty/netty#3699). Each test sets up its own channel and
// raw peer (testing/stream_test_util.h) and calls these at the same steps:
//
//   std::vector<ChannelFuture> writes = testing::QueueMostlyPendingStreamWrites(...);
//   Future<void> terminated = group->ShutdownGracefully(absl::ZeroDuration(), kTimeout);
//   ASSERT_NO_FATAL_FAILURE(
//       testing::AdvancePastDrainTimeout(ticker, kTimeout, terminated, *ch, writes.back(), kWait));
//
// Thread safety: call from the test's thread. Ownership: the caller owns every fd.
#ifndef GYRE_TESTING_GRACEFUL_DRAIN_TEST_UTIL_H_
#define GYRE_TESTING_GRACEFUL_DRAIN_TEST_UTIL_H_

#include <sys/socket.h>

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_future.h"
#include "gyre/concurrent/future.h"
#include "gyre/testing/manual_ticker.h"
#include "gyre/testing/stream_test_util.h"

namespace gyre {
namespace testing {

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
