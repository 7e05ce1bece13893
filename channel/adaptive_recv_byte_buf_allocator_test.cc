#include "gyre/channel/adaptive_recv_byte_buf_allocator.h"

#include "gtest/gtest.h"

namespace gyre {
namespace {

using Alloc = AdaptiveRecvByteBufAllocator;

// One read loop of reads of the given sizes, each into a buffer of the current guess.
void ReadLoop(Alloc::Handle& h, std::initializer_list<int64_t> reads) {
  h.Reset(16);
  for (int64_t n : reads) {
    size_t attempt = h.Guess();
    h.LastBytesRead(std::min<int64_t>(n, static_cast<int64_t>(attempt)), attempt);
  }
  h.ReadComplete();
}

// ReadLoop, then the guess it leaves for the next loop.
size_t GuessAfterLoop(Alloc::Handle& h, std::initializer_list<int64_t> reads) {
  ReadLoop(h, reads);
  return h.Guess();
}

TEST(AdaptiveRecvByteBufAllocatorTest, StartsAtTheInitialSize) {
  Alloc::Handle h;
  EXPECT_EQ(h.Guess(), 2048u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, AFullReadGrowsFourStepsAtOnce) {
  Alloc::Handle h;
  h.Reset(16);
  h.LastBytesRead(2048, 2048);
  // 2048 -> 4096 -> 8192 -> 16384 -> 32768: four table steps, before the loop ends.
  EXPECT_EQ(h.Guess(), 32768u);
  EXPECT_TRUE(h.ContinueReading());
  h.LastBytesRead(32768, 32768);
  EXPECT_EQ(h.Guess(), 65536u);  // clamped at the maximum
  h.LastBytesRead(65536, 65536);
  EXPECT_EQ(h.Guess(), 65536u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, ShrinksOneStepAfterTwoConsecutiveSmallLoops) {
  Alloc::Handle h;
  EXPECT_EQ(GuessAfterLoop(h, {100}), 2048u) << "one small loop does not shrink";
  EXPECT_EQ(GuessAfterLoop(h, {100}), 1024u);
  EXPECT_EQ(GuessAfterLoop(h, {100}), 1024u);
  EXPECT_EQ(GuessAfterLoop(h, {100}), 512u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, AMidSizedLoopNeitherGrowsNorCancelsAShrink) {
  // As Netty: only loops that fit the step below count as small; one between them that
  // does not fill the guess changes nothing.
  Alloc::Handle h;
  ReadLoop(h, {100});
  EXPECT_EQ(GuessAfterLoop(h, {1500}), 2048u);
  EXPECT_EQ(GuessAfterLoop(h, {100}), 1024u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, GrowingCancelsAPendingShrink) {
  Alloc::Handle h;
  ReadLoop(h, {100});           // one small loop: a shrink is pending
  h.Reset(16);
  h.LastBytesRead(2048, 2048);  // fills the buffer: grows to 32768, no shrink pending
  EXPECT_EQ(h.Guess(), 32768u);
  h.LastBytesRead(40000, 32768 + 8192);  // a short read (not a full buffer)
  h.ReadComplete();             // 42048 bytes in the loop: at least the guess, grows again
  EXPECT_EQ(h.Guess(), 65536u);
  EXPECT_EQ(GuessAfterLoop(h, {100}), 65536u)
      << "the first small loop after growing does not shrink";
  EXPECT_EQ(GuessAfterLoop(h, {100}), 32768u);
}

// One message of `size` bytes waits per read loop: a read that fills its buffer is
// followed by one that finds the socket empty. Returns how many such empty reads were made.
int LoopsOfOneMessage(Alloc::Handle& h, int64_t size, int loops) {
  int empty_reads = 0;
  for (int i = 0; i < loops; ++i) {
    h.Reset(16);
    int64_t waiting = size;
    do {
      size_t attempt = h.Guess();
      int64_t n = std::min<int64_t>(waiting, static_cast<int64_t>(attempt));
      if (n == 0) {
        ++empty_reads;
        h.LastBytesRead(-1, attempt);  // EAGAIN
        break;
      }
      waiting -= n;
      h.LastBytesRead(n, attempt);
    } while (h.ContinueReading());
    h.ReadComplete();
  }
  return empty_reads;
}

TEST(AdaptiveRecvByteBufAllocatorTest, SameSizedMessagesNeverFillTheSettledGuess) {
  // A stream of same-sized messages (an echo, a fixed-size protocol) must not settle on a
  // guess equal to the message: each read would fill it and each loop would pay a second
  // read that returns EAGAIN. Table sizes are the sizes at risk.
  for (int64_t size : {64, 256, 496, 512, 1024, 2048, 4096, 16384}) {
    Alloc::Handle h;
    LoopsOfOneMessage(h, size, 50);  // settle
    EXPECT_EQ(LoopsOfOneMessage(h, size, 300), 0) << "message size " << size;
    EXPECT_GT(h.Guess(), static_cast<size_t>(size)) << "message size " << size;
  }
}

TEST(AdaptiveRecvByteBufAllocatorTest, NeverBelowTheMinimum) {
  Alloc::Handle h;
  for (int i = 0; i < 100; ++i) ReadLoop(h, {1});
  EXPECT_EQ(h.Guess(), 64u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, UsesTheSixteenByteStepsBelow512) {
  Alloc::Handle h(Alloc::Options{16, 512, 65536});
  ReadLoop(h, {1});
  EXPECT_EQ(GuessAfterLoop(h, {1}), 496u);
  ReadLoop(h, {1});
  EXPECT_EQ(GuessAfterLoop(h, {1}), 480u);
}

TEST(AdaptiveRecvByteBufAllocatorTest, ReadLoopStopsOnAShortReadOrTheBudget) {
  Alloc::Handle h;
  h.Reset(3);
  h.LastBytesRead(10, h.Guess());
  EXPECT_FALSE(h.ContinueReading()) << "a short read drained the socket";
  h.Reset(3);
  for (int i = 0; i < 2; ++i) {
    h.LastBytesRead(static_cast<int64_t>(h.Guess()), h.Guess());
    EXPECT_TRUE(h.ContinueReading());
  }
  h.LastBytesRead(static_cast<int64_t>(h.Guess()), h.Guess());
  EXPECT_FALSE(h.ContinueReading()) << "three reads used the budget";
  EXPECT_EQ(h.messages(), 3);
  h.Reset(3);
  h.LastBytesRead(0, h.Guess());
  EXPECT_FALSE(h.ContinueReading()) << "EOF";
  h.LastBytesRead(-1, h.Guess());
  EXPECT_FALSE(h.ContinueReading()) << "EAGAIN";
}

TEST(AdaptiveRecvByteBufAllocatorTest, ValidateRejectsBadBounds) {
  EXPECT_TRUE(Alloc::Validate(Alloc::Options{}).ok());
  EXPECT_EQ(Alloc::Validate(Alloc::Options{0, 2048, 65536}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Alloc::Validate(Alloc::Options{4096, 2048, 65536}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Alloc::Validate(Alloc::Options{64, 2048, 1024}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gyre
