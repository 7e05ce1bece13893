// PooledByteBufAllocator: ByteBufs from power-of-two size classes, recycled through
// per-thread caches over a shared arena, with an optional memory limit.
//
//   GYRE_ASSIGN_OR_RETURN(auto pool, gyre::PooledByteBufAllocator::Create(
//                                        {.max_memory = 64 << 20}));
//   absl::StatusOr<gyre::ByteBuf> buf = pool->Buffer(512);
//   if (!buf.ok()) return buf.status();   // ResourceExhausted past max_memory
//   gyre::ByteBufAllocatorStats stats = pool->Stats();
//
// Thread safety: thread-safe. A buffer may be released on any thread.
#ifndef GYRE_CHANNEL_POOLED_BYTE_BUF_ALLOCATOR_H_
#define GYRE_CHANNEL_POOLED_BYTE_BUF_ALLOCATOR_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/internal/byte_buf_core.h"

namespace gyre {

namespace internal {
class PoolArena;
}  // namespace internal

struct PooledByteBufAllocatorOptions {
  // Bytes the allocator may take from the system at once (in use plus pooled); 0 = no
  // limit. Past it Buffer() and growth return ResourceExhausted, after first returning
  // the arena's free blocks to the system and retrying.
  size_t max_memory = 0;
  // Requests up to this size come from power-of-two size classes starting at 64 B and
  // are recycled; larger ones get their own block, freed on release.
  size_t max_pooled_size = size_t{1} << 20;
  // Size classes up to this size are also kept in per-thread caches.
  size_t max_cached_size = size_t{32} << 10;
  // Bound of each per-thread, per-size-class free list; 0 disables thread caches.
  // Beyond it blocks go back to the shared arena.
  size_t thread_cache_entries = 128;
};

// Pooled buffers, in Netty's spirit (PooledByteBufAllocator) with a simpler arena:
//
//   Buffer(n) --> n <= max_cached_size: this thread's cache for n's class ---+
//            |                          (empty) v                            |
//            +--> n <= max_pooled_size: the shared arena's free list --------+--> block
//            |                          (empty) v                            |
//            +--> otherwise / miss:     the system (counted against max_memory)
//
// Release on any thread puts the block into *that* thread's cache (up to
// thread_cache_entries per class), else into the arena. A thread's cache goes back to
// the arena when the thread exits. Buffer metadata is recycled the same way; a buffer
// released whole (its handle held the only reference) keeps its block attached in the
// thread's cache, so the next Buffer() of that class takes both back in one step.
//
// Thread safety: thread-safe; the per-thread caches make the common path lock-free
// (the arena takes a lock).
// Ownership: must outlive its buffers. Blocks cached by threads that are still running
// stay allocated until those threads exit or call Trim(), even after the allocator is
// destroyed (they count in no one's stats then). Default() is never destroyed.
class PooledByteBufAllocator final : public ByteBufAllocator {
 public:
  // InvalidArgument if max_cached_size > max_pooled_size or max_pooled_size is beyond
  // 1 GiB.
  static absl::StatusOr<std::unique_ptr<PooledByteBufAllocator>> Create(
      PooledByteBufAllocatorOptions options = {});
  // A process-wide instance with default options.
  static PooledByteBufAllocator* Default();
  ~PooledByteBufAllocator() override;

  ByteBufAllocatorStats Stats() const override;

  // Returns the free blocks of the shared arena and of the calling thread's cache to the
  // system. Thread-safe.
  void Trim();

 private:
  explicit PooledByteBufAllocator(PooledByteBufAllocatorOptions options);
  absl::Status AllocateMemory(internal::BufRoot* root, size_t capacity) override;
  absl::Status ReallocateMemory(internal::BufRoot* root, size_t new_capacity) override;
  void FreeMemory(internal::BufRoot* root) override;
  internal::BufRoot* NewRoot() override;
  void DeleteRoot(internal::BufRoot* root) override;
  bool RecycleWhole(internal::BufRoot* root) override;
  internal::BufRoot* TakeWhole(size_t capacity) override;

  std::shared_ptr<internal::PoolArena> arena_;
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_POOLED_BYTE_BUF_ALLOCATOR_H_
