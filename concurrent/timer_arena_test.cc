// internal::TimerArena, the per-loop memory of timers: blocks by size class, reuse on the
// owner thread, frees from other threads, and the arena's end once its owner is gone
// and its last block is back (in either order). Leaks and early deletion show under the
// address sanitizer; the cross-thread frees under the thread sanitizer.
#include "gyre/concurrent/internal/timer_arena.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/internal/scheduled_task.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using internal::TimerArena;

// Binds an arena to the test thread for the fixture's life (as a loop thread does).
class TimerArenaTest : public ::testing::Test {
 protected:
  TimerArenaTest() : arena_(TimerArena::Create()) { internal::tls_timer_arena = arena_; }
  ~TimerArenaTest() override {
    internal::tls_timer_arena = nullptr;
    if (arena_ != nullptr) arena_->Orphan();
  }
  // Ends the owner's part now (the arena may outlive it).
  void OrphanNow() {
    internal::tls_timer_arena = nullptr;
    std::exchange(arena_, nullptr)->Orphan();
  }

  TimerArena* arena_;
};

TEST_F(TimerArenaTest, ServesSizesUpToTheLargestClassOnly) {
  EXPECT_EQ(arena_->Allocate(0), nullptr);
  EXPECT_EQ(arena_->Allocate(TimerArena::kMaxBlockBytes + 1), nullptr);
  void* largest = arena_->Allocate(TimerArena::kMaxBlockBytes);
  ASSERT_NE(largest, nullptr);
  std::memset(largest, 0xab, TimerArena::kMaxBlockBytes);
  EXPECT_EQ(arena_->CountLiveBlocks(), 1);
  TimerArena::Free(largest);
  EXPECT_EQ(arena_->CountLiveBlocks(), 0);
}

TEST_F(TimerArenaTest, ReusesABlockFreedOnTheOwnerThreadWithinItsClass) {
  void* a = arena_->Allocate(200);
  ASSERT_NE(a, nullptr);
  TimerArena::Free(a);
  EXPECT_EQ(arena_->Allocate(256), a);  // the same (320-byte) class
  void* small = arena_->Allocate(64);  // another class: another block
  EXPECT_NE(small, a);
  TimerArena::Free(small);
  TimerArena::Free(a);
}

// A power-of-two stride would put the same field of consecutive blocks into a fraction
// of the cache's sets; every class is an odd number of lines, and consecutive blocks of
// a class are that far apart.
TEST_F(TimerArenaTest, BlocksOfEveryClassAreAnOddNumberOfLines) {
  for (size_t size = 1; size <= TimerArena::kMaxBlockBytes; ++size) {
    const size_t bytes = TimerArena::BlockBytes(size);
    ASSERT_GE(bytes, size);
    ASSERT_EQ(bytes % 64, 0u) << size;
    ASSERT_EQ((bytes / 64) % 2, 1u) << size;
    ASSERT_LT(bytes - size, 128u) << size;  // never more than two lines of slack
  }
  for (size_t size : {64u, 192u, 256u, 448u, 512u}) {
    auto* a = static_cast<char*>(arena_->Allocate(size));
    auto* b = static_cast<char*>(arena_->Allocate(size));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(static_cast<size_t>(b - a), TimerArena::BlockBytes(size)) << size;
    TimerArena::Free(b);
    TimerArena::Free(a);
  }
}

// A timer whose body captures up to 16 bytes (a pointer pair, a shared_ptr) takes three
// cache lines: a void future's state (96 bytes) plus the queue's bookkeeping (80).
TEST(TimerStateTest, ATimerWithASmallBodyFitsThreeCacheLines) {
  struct Capture16 {
    std::shared_ptr<int> p;
    void operator()() const {}
  };
  struct NoCapture {
    void operator()() const {}
  };
  EXPECT_EQ(sizeof(internal::FutureCore<void>), 96u);
  EXPECT_LE(sizeof(internal::ScheduledTaskCore<void, Capture16>), 192u);
  EXPECT_LE(sizeof(internal::ScheduledTaskCore<void, NoCapture>), 192u);
  EXPECT_EQ(TimerArena::BlockBytes(sizeof(internal::ScheduledTaskCore<void, Capture16>)), 192u);
}

TEST_F(TimerArenaTest, BlocksAreAlignedDisjointAndFillWholeChunks) {
  constexpr int kBlocks = 2000;
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    auto* p = static_cast<unsigned char*>(arena_->Allocate(250));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, i & 0xff, 250);
    blocks.push_back(p);
  }
  for (int i = 0; i < kBlocks; ++i) {
    for (int b = 0; b < 250; ++b) ASSERT_EQ(blocks[i][b], i & 0xff) << "block " << i;
  }
  // 64 KiB chunks less a 64-byte header hold 204 blocks of 320 bytes (250 bytes round up
  // to five lines).
  ASSERT_EQ(TimerArena::BlockBytes(250), 320u);
  const size_t per_chunk = (TimerArena::kChunkBytes - 64) / 320;
  EXPECT_EQ(arena_->chunk_count(), (kBlocks + per_chunk - 1) / per_chunk);
  EXPECT_EQ(arena_->CountLiveBlocks(), kBlocks);
  for (unsigned char* p : blocks) TimerArena::Free(p);
  EXPECT_EQ(arena_->CountLiveBlocks(), 0);
}

TEST_F(TimerArenaTest, BlocksFreedOnAnotherThreadServeTheOwnerAgain) {
  constexpr int kBlocks = 1000;
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(arena_->Allocate(128));
  const size_t chunks = arena_->chunk_count();
  std::thread([&] {
    for (void* p : blocks) TimerArena::Free(p);
  }).join();
  EXPECT_EQ(arena_->CountLiveBlocks(), 0);
  std::set<void*> before(blocks.begin(), blocks.end());
  for (int i = 0; i < kBlocks; ++i) {
    void* p = arena_->Allocate(128);
    EXPECT_EQ(before.count(p), 1u) << "a new block where a freed one was there to reuse";
    blocks[i] = p;
  }
  EXPECT_EQ(arena_->chunk_count(), chunks);
  for (void* p : blocks) TimerArena::Free(p);
}

TEST_F(TimerArenaTest, OrphanedArenaGoesWithItsLastBlock) {
  void* a = arena_->Allocate(100);
  void* b = arena_->Allocate(300);
  std::memset(a, 1, 100);
  OrphanNow();
  // The blocks stay usable after their owner is gone; the last free deletes the arena
  // (the address sanitizer reports a leak if none does, a use after free if too early).
  std::memset(b, 2, 300);
  TimerArena::Free(a);
  std::thread([b] { TimerArena::Free(b); }).join();
}

TEST_F(TimerArenaTest, FreesRacingTheOrphaningLoseNoBlockAndDeleteOnce) {
  for (int round = 0; round < testing::Iterations(50); ++round) {
    TimerArena* arena = TimerArena::Create();
    internal::tls_timer_arena = arena;
    std::vector<void*> blocks;
    for (int i = 0; i < 400; ++i) blocks.push_back(arena->Allocate(64 + (i % 7) * 64));
    std::vector<std::thread> freers;
    for (int t = 0; t < 2; ++t) {
      freers.emplace_back([&blocks, t] {
        for (size_t i = t; i < blocks.size(); i += 2) TimerArena::Free(blocks[i]);
      });
    }
    internal::tls_timer_arena = nullptr;
    arena->Orphan();  // while the frees run
    for (std::thread& f : freers) f.join();
  }
  internal::tls_timer_arena = arena_;
}

// The executor's side: a timer scheduled on the loop thread may outlive the loop (its
// handle is dropped after the executor is gone), and one scheduled elsewhere is on the
// heap; both behave the same.
TEST(TimerArenaExecutorTest, TimerHandlesOutliveTheirLoop) {
  std::vector<ScheduledFuture<void>> kept;
  {
    DefaultEventExecutor executor;
    ScheduledFuture<void> ran;
    ASSERT_TRUE(executor
                    .Submit([&] {
                      for (int i = 0; i < 100; ++i) {
                        kept.push_back(executor.Schedule([] {}, absl::Hours(1)));
                      }
                      ran = executor.Schedule([] {}, absl::ZeroDuration());
                    })
                    .AwaitFor(testing::Scaled(absl::Seconds(10))));
    kept.push_back(executor.Schedule([] {}, absl::Hours(1)));  // from this thread
    ASSERT_TRUE(ran.AwaitFor(testing::Scaled(absl::Seconds(10))));
    EXPECT_TRUE(ran.IsSuccess());
    executor.ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
    ASSERT_TRUE(executor.AwaitTermination(testing::Scaled(absl::Seconds(10))));
  }
  for (const ScheduledFuture<void>& f : kept) EXPECT_TRUE(f.IsCancelled());
  kept.clear();  // the last blocks go after their loop did
}

// The executor reports its arena's memory while the loop runs, and 0 once it ended.
TEST(TimerArenaExecutorTest, SnapshotShowsTheArenaWhileTheLoopRuns) {
  DefaultEventExecutor executor;
  std::vector<ScheduledFuture<void>> timers;
  ASSERT_TRUE(executor
                  .Submit([&] {
                    for (int i = 0; i < 400; ++i) {  // more than one chunk's worth
                      timers.push_back(executor.Schedule([] {}, absl::Hours(1)));
                    }
                  })
                  .AwaitFor(testing::Scaled(absl::Seconds(10))));
  const size_t bytes = executor.Snapshot().timer_memory_bytes;
#if GYRE_TIMER_ARENA
  EXPECT_EQ(bytes, 2 * TimerArena::kChunkBytes);  // 341 states (of 192 bytes) a chunk
#else
  EXPECT_EQ(bytes, 0u);  // timers use the heap in this build
#endif
  for (ScheduledFuture<void>& t : timers) EXPECT_TRUE(t.Cancel());
  executor.ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  ASSERT_TRUE(executor.AwaitTermination(testing::Scaled(absl::Seconds(10))));
  EXPECT_EQ(executor.Snapshot().timer_memory_bytes, 0u);
}

}  // namespace
}  // namespace gyre
