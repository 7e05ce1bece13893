#include "gyre/channel/byte_buf_allocator.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {
namespace {

std::unique_ptr<PooledByteBufAllocator> MakePool(PooledByteBufAllocatorOptions o = {}) {
  auto pool = PooledByteBufAllocator::Create(o);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? std::move(*pool) : nullptr;
}

TEST(PooledByteBufAllocatorTest, RejectsBadOptions) {
  EXPECT_EQ(PooledByteBufAllocator::Create({.max_pooled_size = 1024, .max_cached_size = 4096})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PooledByteBufAllocatorTest, ReleaseReturnsMemoryToThePool) {
  auto pool = MakePool();
  absl::StatusOr<ByteBuf> buf = pool->Buffer(100);
  ASSERT_TRUE(buf.ok());
  ByteBufAllocatorStats s = pool->Stats();
  EXPECT_EQ(s.live_buffers, 1);
  EXPECT_EQ(s.used_memory, 128);  // size class
  EXPECT_EQ(s.pooled_memory, 0);
  EXPECT_EQ(s.system_allocations, 1);
  EXPECT_TRUE(buf->Release());
  s = pool->Stats();
  EXPECT_EQ(s.live_buffers, 0);
  EXPECT_EQ(s.used_memory, 0);
  EXPECT_EQ(s.pooled_memory, 128);
  // The next buffer of that class reuses the block from this thread's cache.
  absl::StatusOr<ByteBuf> again = pool->Buffer(120);
  ASSERT_TRUE(again.ok());
  s = pool->Stats();
  EXPECT_EQ(s.thread_cache_hits, 1);
  EXPECT_EQ(s.system_allocations, 1);
  EXPECT_EQ(s.pooled_memory, 0);
  *again = ByteBuf();
  pool->Trim();
  s = pool->Stats();
  EXPECT_EQ(s.pooled_memory, 0);
  EXPECT_EQ(s.used_memory, 0);
}

// A buffer whose one handle held its only reference goes back with its block attached,
// and the next Buffer() of that class on this thread takes both in one step.
TEST(PooledByteBufAllocatorTest, ABufferDroppedWholeComesBackWithItsBlock) {
  auto pool = MakePool();
  absl::StatusOr<ByteBuf> buf = pool->Buffer(64);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(buf->WriteU32(7).ok());
  const uint8_t* block = buf->WritableSpan().data() - 4;
  *buf = ByteBuf();
  ByteBufAllocatorStats s = pool->Stats();
  EXPECT_EQ(s.live_buffers, 0);
  EXPECT_EQ(s.used_memory, 0);
  EXPECT_EQ(s.pooled_memory, 64);

  absl::StatusOr<ByteBuf> big = pool->Buffer(1000);  // another class: not that block
  ASSERT_TRUE(big.ok());
  EXPECT_NE(big->WritableSpan().data(), block);
  absl::StatusOr<ByteBuf> again = pool->Buffer(50);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->WritableSpan().data(), block);
  EXPECT_EQ(again->capacity(), 50u);
  EXPECT_EQ(again->writer_index(), 0u);
  EXPECT_EQ(again->RefCount(), 1);
  s = pool->Stats();
  EXPECT_EQ(s.thread_cache_hits, 1);
  EXPECT_EQ(s.system_allocations, 2);
  EXPECT_EQ(s.live_buffers, 2);
  EXPECT_EQ(s.used_memory, 64 + 1024);
  EXPECT_EQ(s.pooled_memory, 0);

  // With a second view alive the last release takes the general path; the memory still
  // comes back once, when both are gone.
  absl::StatusOr<ByteBuf> slice = again->RetainedSlice(0, 8);
  ASSERT_TRUE(slice.ok());
  *again = ByteBuf();
  EXPECT_EQ(pool->Stats().live_buffers, 2);
  *slice = ByteBuf();
  *big = ByteBuf();
  s = pool->Stats();
  EXPECT_EQ(s.live_buffers, 0);
  EXPECT_EQ(s.used_memory, 0);
  EXPECT_EQ(s.pooled_memory, 64 + 1024);
  pool->Trim();  // the cached roots give their blocks back too
  s = pool->Stats();
  EXPECT_EQ(s.pooled_memory, 0);
  EXPECT_EQ(s.used_memory, 0);
}

TEST(PooledByteBufAllocatorTest, LargeBuffersAreDirect) {
  auto pool = MakePool({.max_pooled_size = 4096, .max_cached_size = 1024});
  absl::StatusOr<ByteBuf> buf = pool->Buffer(10000);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(pool->UsedMemory(), 10000);
  *buf = ByteBuf();
  EXPECT_EQ(pool->UsedMemory(), 0);
  EXPECT_EQ(pool->PooledMemory(), 0);
}

TEST(PooledByteBufAllocatorTest, CacheBoundSpillsToArena) {
  auto pool = MakePool({.thread_cache_entries = 2});
  std::vector<ByteBuf> bufs;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<ByteBuf> b = pool->Buffer(64);
    ASSERT_TRUE(b.ok());
    bufs.push_back(std::move(*b));
  }
  bufs.clear();
  EXPECT_EQ(pool->PooledMemory(), 5 * 64);
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<ByteBuf> b = pool->Buffer(64);
    ASSERT_TRUE(b.ok());
    bufs.push_back(std::move(*b));
  }
  ByteBufAllocatorStats s = pool->Stats();
  EXPECT_EQ(s.thread_cache_hits, 2);
  EXPECT_EQ(s.arena_hits, 3);
  EXPECT_EQ(s.system_allocations, 5);
}

TEST(PooledByteBufAllocatorTest, MemoryLimitIsResourceExhausted) {
  auto pool = MakePool({.max_memory = 1024});
  absl::StatusOr<ByteBuf> a = pool->Buffer(512);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<ByteBuf> b = pool->Buffer(512);
  ASSERT_TRUE(b.ok());
  absl::StatusOr<ByteBuf> c = pool->Buffer(64);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  // Growth past the limit fails too, leaving the buffer as it was.
  ASSERT_TRUE(a->WriteZero(512).ok());
  EXPECT_EQ(a->WriteU8(1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(a->writer_index(), 512u);
  EXPECT_EQ(pool->Stats().allocation_failures, 2);
  // Freed blocks of another class are trimmed to make room.
  *b = ByteBuf();
  EXPECT_EQ(pool->PooledMemory(), 512);
  absl::StatusOr<ByteBuf> d = pool->Buffer(256);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(pool->UsedMemory(), 768);
}

TEST(UnpooledByteBufAllocatorTest, StatsAndLimit) {
  auto alloc = UnpooledByteBufAllocator::Create({.max_memory = 100});
  ASSERT_TRUE(alloc.ok());
  absl::StatusOr<ByteBuf> a = (*alloc)->Buffer(60);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*alloc)->UsedMemory(), 60);
  EXPECT_EQ((*alloc)->Buffer(60).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(a->Release());
  EXPECT_EQ((*alloc)->UsedMemory(), 0);
  EXPECT_EQ((*alloc)->LiveBuffers(), 0);
  EXPECT_TRUE((*alloc)->Buffer(60).ok());
}

TEST(PooledByteBufAllocatorTest, CrossThreadRelease) {
  auto pool = MakePool();
  absl::StatusOr<ByteBuf> buf = pool->Buffer(64);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(buf->WriteU64(42).ok());
  std::thread t([b = std::move(*buf)]() mutable {
    EXPECT_EQ(*b.ReadU64(), 42u);
    EXPECT_TRUE(b.Release());
  });
  t.join();
  EXPECT_EQ(pool->LiveBuffers(), 0);
  EXPECT_EQ(pool->UsedMemory(), 0);
  EXPECT_EQ(pool->PooledMemory(), 64);  // the exited thread's cache went to the arena
  absl::StatusOr<ByteBuf> again = pool->Buffer(64);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(pool->Stats().arena_hits, 1);
}

// Several threads allocate, hand buffers to the next thread through a mailbox, and
// release what they receive: every buffer is released on another thread.
TEST(PooledByteBufAllocatorTest, ConcurrentAllocAndCrossThreadRelease) {
  auto pool = MakePool({.thread_cache_entries = 8});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  internal::Mutex mu;
  std::vector<std::vector<ByteBuf>> mailbox(kThreads);
  std::atomic<int> released{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<ByteBuf> b = pool->Buffer(static_cast<size_t>(16 + (i % 7) * 300));
        if (!b.ok() || !b->WriteU32(static_cast<uint32_t>(t * kPerThread + i)).ok()) {
          bad.fetch_add(1);
          continue;
        }
        std::vector<ByteBuf> mine;
        {
          internal::MutexLock lock(&mu);
          mailbox[(t + 1) % kThreads].push_back(std::move(*b));
          mine.swap(mailbox[t]);
        }
        for (ByteBuf& m : mine) {
          if (!m.ReadU32().ok()) bad.fetch_add(1);
          if (m.Release()) released.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& box : mailbox) {
    for (ByteBuf& m : box) {
      if (m.Release()) released.fetch_add(1);
    }
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(released.load(), kThreads * kPerThread);
  ByteBufAllocatorStats s = pool->Stats();
  EXPECT_EQ(s.live_buffers, 0);
  EXPECT_EQ(s.used_memory, 0);
  EXPECT_EQ(s.allocations, kThreads * kPerThread);
  EXPECT_EQ(s.leaked_buffers, 0);
}

TEST(PooledByteBufAllocatorTest, ConcurrentRetainReleaseOfOneBuffer) {
  auto pool = MakePool();
  absl::StatusOr<ByteBuf> buf = pool->Buffer(64);
  ASSERT_TRUE(buf.ok());
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    absl::StatusOr<ByteBuf> dup = buf->RetainedDuplicate();
    ASSERT_TRUE(dup.ok());
    threads.emplace_back([d = std::move(*dup)]() mutable {
      for (int i = 0; i < 1000; ++i) {
        EXPECT_TRUE(d.Retain().ok());
        EXPECT_FALSE(d.Release());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(buf->RefCount(), 1);
  EXPECT_TRUE(buf->Release());
  EXPECT_EQ(pool->LiveBuffers(), 0);
}

}  // namespace
}  // namespace gyre
