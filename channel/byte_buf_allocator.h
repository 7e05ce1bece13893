// ByteBufAllocator: the interface of gyre::ByteBuf's allocators and the bookkeeping
// they share. The implementations have their own headers (included here too):
// UnpooledByteBufAllocator (one heap block per buffer) and PooledByteBufAllocator (size
// classes, per-thread caches over a shared arena, a memory limit).
//
//   GYRE_ASSIGN_OR_RETURN(auto pool, gyre::PooledByteBufAllocator::Create(
//                                        {.max_memory = 64 << 20}));
//   absl::StatusOr<gyre::ByteBuf> buf = pool->Buffer(512);
//   if (!buf.ok()) return buf.status();   // ResourceExhausted past max_memory
//   ...
//   gyre::ByteBufAllocatorStats stats = pool->Stats();
//
// Thread safety: allocators are thread-safe. A buffer may be released on any thread.
#ifndef GYRE_CHANNEL_BYTE_BUF_ALLOCATOR_H_
#define GYRE_CHANNEL_BYTE_BUF_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/internal/byte_buf_core.h"

namespace gyre {

// A snapshot of an allocator's counters. Counters kept per thread are summed without a
// global pause, so a snapshot taken while other threads allocate may be slightly stale;
// once they are quiet it is exact.
struct ByteBufAllocatorStats {
  int64_t live_buffers = 0;         // allocated and not yet released
  int64_t leaked_buffers = 0;       // last handle gone with references left (reclaimed)
  int64_t allocations = 0;          // successful Buffer() calls
  int64_t releases = 0;             // buffers whose memory went back
  int64_t allocation_failures = 0;  // Buffer()/growth refused (ResourceExhausted)
  int64_t used_memory = 0;          // bytes behind live buffers
  int64_t pooled_memory = 0;        // bytes kept for reuse (caches and arena), not in use
  int64_t thread_cache_hits = 0;    // pooled: served from the calling thread's cache
  int64_t arena_hits = 0;           // pooled: served from the shared arena's free lists
  int64_t system_allocations = 0;   // memory blocks obtained from the system
};

// The interface every allocator implements, and the bookkeeping they share (live and
// leaked counts, the debug leak report).
//
// Leak reports: in debug builds (!NDEBUG) every live buffer remembers where it was
// allocated; a leak (see ByteBuf's Ownership) is logged with that site at once, and
// ReportLeaks() / the destructor list buffers still live. Release builds keep the counts.
//
// Thread safety: thread-safe.
// Ownership: the allocator must outlive every buffer it allocated (the destructor logs
// the ones still live; releasing them later is undefined).
class ByteBufAllocator {
 public:
  static constexpr size_t kDefaultInitialCapacity = 256;
  static constexpr size_t kDefaultMaxCapacity = 0x7fffffff;  // Netty's Integer.MAX_VALUE

  ByteBufAllocator(const ByteBufAllocator&) = delete;
  ByteBufAllocator& operator=(const ByteBufAllocator&) = delete;
  virtual ~ByteBufAllocator();

  // Returns a buffer of capacity `initial_capacity` (both indices 0) that may grow to
  // `max_capacity`; the handle owns its one reference. InvalidArgument if
  // initial_capacity > max_capacity; ResourceExhausted if the memory is not available
  // (a configured max_memory, or the system).
  absl::StatusOr<ByteBuf> Buffer(
      size_t initial_capacity = kDefaultInitialCapacity,
      size_t max_capacity = kDefaultMaxCapacity,
      internal::SourceSite site = internal::SourceSite::Current());
  // Returns a buffer holding a copy of `bytes` (writer index bytes.size()).
  absl::StatusOr<ByteBuf> CopiedBuffer(
      absl::string_view bytes,
      internal::SourceSite site = internal::SourceSite::Current());

  // Counters (see ByteBufAllocatorStats).
  virtual ByteBufAllocatorStats Stats() const = 0;
  int64_t LiveBuffers() const { return Stats().live_buffers; }
  int64_t LeakedBuffers() const { return leaked_.load(std::memory_order_relaxed); }
  int64_t UsedMemory() const { return Stats().used_memory; }
  int64_t PooledMemory() const { return Stats().pooled_memory; }

  // Logs every live buffer (with its allocation site in debug builds) and returns how
  // many are live.
  int64_t ReportLeaks() const;

 protected:
  ByteBufAllocator();

  // Hooks for implementations; all are called concurrently from any thread.
  // Sets root->memory, alloc_size (>= capacity) and size_class for `capacity` bytes.
  virtual absl::Status AllocateMemory(internal::BufRoot* root, size_t capacity) = 0;
  // Moves root's memory to a block of at least `new_capacity` bytes, keeping bytes
  // [0, root->capacity). On failure changes nothing.
  virtual absl::Status ReallocateMemory(internal::BufRoot* root, size_t new_capacity) = 0;
  // Returns root->memory (sets it to null).
  virtual void FreeMemory(internal::BufRoot* root) = 0;
  // A zeroed-out BufRoot, or null without memory; DeleteRoot takes it back.
  virtual internal::BufRoot* NewRoot() = 0;
  virtual void DeleteRoot(internal::BufRoot* root) = 0;
  // The whole-buffer fast path, both optional. RecycleWhole takes a root whose last
  // reference and last view went in one release, its memory still attached, and returns
  // false if it keeps nothing (the root's memory and metadata are then given back through
  // FreeMemory and DeleteRoot). TakeWhole returns such a root whose memory holds at least
  // `capacity` bytes (memory, alloc_size and size_class as AllocateMemory set them), or
  // null. One call each instead of FreeMemory + DeleteRoot and NewRoot + AllocateMemory.
  virtual bool RecycleWhole(internal::BufRoot* root) {
    (void)root;
    return false;
  }
  virtual internal::BufRoot* TakeWhole(size_t capacity) {
    (void)capacity;
    return nullptr;
  }

  // Logs live buffers: call first thing in a subclass's destructor (Stats() is virtual).
  void ReportLeaksAtDestruction() const;

  // Shared counters for implementations that do not keep per-thread ones.
  std::atomic<int64_t> failures_{0};  // relaxed: a statistic

 private:
  friend class ByteBuf;

  // Called by ByteBuf when the reference count reached zero.
  void ReleaseMemory(internal::BufRoot* root);
  // Called by ByteBuf when its handle held the only reference and the only view: the
  // memory and the root go together.
  void ReleaseWhole(internal::BufRoot* root);
  // Called by ByteBuf when the last view of `root` is gone.
  void LastViewGone(internal::BufRoot* root);
  // Grows `root` to `new_capacity` (ByteBuf::EnsureWritable's slow path).
  absl::Status Grow(internal::BufRoot* root, size_t new_capacity);
  void TrackLive(internal::BufRoot* root);
  void UntrackLive(internal::BufRoot* root);

  // The live buffers, listed in debug builds only (see ReportLeaks).
  struct LiveList;

  std::atomic<int64_t> leaked_{0};  // relaxed: a statistic
  const std::unique_ptr<LiveList> live_;
};

}  // namespace gyre

// The implementations, for code that includes only this header.
#include "gyre/channel/pooled_byte_buf_allocator.h"    // IWYU pragma: export
#include "gyre/channel/unpooled_byte_buf_allocator.h"  // IWYU pragma: export

#endif  // GYRE_CHANNEL_BYTE_BUF_ALLOCATOR_H_
