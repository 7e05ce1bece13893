// TimerArena: the memory of the timers an event-loop thread schedules, so that
// scheduling takes no lock and touches memory in order.
//
// A timer's state (its future plus the timer queue's bookkeeping, 176-192 bytes for a small body) is
// made by each Schedule() and dropped when its last handle goes, often on another
// thread. From the general allocator each one costs a locked round on the allocator's
// arena (allocation and free). The arena serves blocks of up to kMaxBlockBytes from
// 64 KiB chunks it owns: on its owner thread by a pop from the class's free list or a
// bump of a pointer (plain loads and stores, no atomics). Blocks freed on other threads
// go onto the class's lock-free stack, which the owner takes whole (one exchange, no
// walk) when the free list runs dry.
//
// Each class's blocks are an odd number of 64-byte cache lines (1, 3, 5, 7, 9), so the
// same field of consecutive blocks falls into every set of the caches in turn. With a
// power-of-two stride it falls into a fraction of them (256 bytes: a quarter of the L2's
// sets), and the timer wheel's insert, which writes the link of the bucket's previous
// timer (one in each of the ~2,400 buckets a spread of delays keeps busy), then misses
// where it would hit: W5 scheduled 9.1-9.7 M timers/s with 256-byte blocks against
// 12.9-14.5 M/s with 320-byte ones (and 7.3-8.1 M/s with 512), the same state in each.
// The cost is memory where a size falls just past an odd count: 193 to 320 bytes take
// 320 (today's timer states take 192).
//
//   TimerArena* arena = TimerArena::Create(&bytes);  // on the owner thread
//   tls_timer_arena = arena;
//   void* p = arena->Allocate(sizeof(T));       // nullptr: too large, use the heap
//   ...
//   TimerArena::Free(p);                        // any thread
//   tls_timer_arena = nullptr;
//   arena->Orphan();                            // the owner is done with it
//
// Memory: a chunk is kept until the arena is deleted, so an arena holds as much as its
// owner's timers needed at their peak (a million live timers: 192 MiB), to serve
// them again. This is what the general allocator's own free lists did before (it did not
// give that memory back either), without the locks.
//
// Lifetime: Orphan() is the owner's last call. The arena deletes itself (and every
// chunk) when Orphan() has run and every block is freed, in whichever order; a timer
// handle may outlive its loop.
//
// Thread safety: Create, Allocate and Orphan on the owner thread only (the thread whose
// tls_timer_arena is this arena). Free from any thread.
#ifndef GYRE_CONCURRENT_INTERNAL_TIMER_ARENA_H_
#define GYRE_CONCURRENT_INTERNAL_TIMER_ARENA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

// Event loops serve their timers from an arena except under the address and memory
// sanitizers, so that a use after free of a timer's state is still caught there. (The
// thread sanitizer keeps it: its cross-thread frees are what it checks.)
#if defined(__SANITIZE_ADDRESS__)
#define GYRE_TIMER_ARENA 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define GYRE_TIMER_ARENA 0
#endif
#endif
#ifndef GYRE_TIMER_ARENA
#define GYRE_TIMER_ARENA 1
#endif

namespace gyre {
namespace internal {

class TimerArena;

// The arena of the calling thread's event loop (nullptr on other threads). A block this
// thread frees into it needs no atomics.
inline thread_local TimerArena* tls_timer_arena = nullptr;

class TimerArena {
 public:
  static constexpr size_t kLineBytes = 64;
  // Class c holds blocks of 2c + 1 lines: 64, 192, 320, 448 and 576 bytes.
  static constexpr int kClasses = 5;
  static constexpr size_t kMaxBlockBytes = 512;
  static constexpr size_t kChunkBytes = size_t{64} << 10;

  // `reserved` (optional) follows the bytes of the arena's chunks, for statistics: it
  // is added to (relaxed) as chunks are made and set to 0 by Orphan(), after which the
  // arena no longer touches it, so it may be destroyed once Orphan() has returned.
  static TimerArena* Create(std::atomic<size_t>* reserved = nullptr) {
    return new TimerArena(reserved);
  }

  TimerArena(const TimerArena&) = delete;
  TimerArena& operator=(const TimerArena&) = delete;

  // The bytes of the blocks that serve requests of `size` bytes (1..kMaxBlockBytes).
  static size_t BlockBytes(size_t size) { return ClassBytes(ClassOf(size)); }

  // A block of at least `size` bytes, aligned to 64; nullptr when `size` is 0 or over
  // kMaxBlockBytes (the caller uses the heap). Throws std::bad_alloc as operator new
  // does. Owner thread only.
  void* Allocate(size_t size);

  // Returns a block from Allocate (of any arena). Any thread.
  static void Free(void* block) noexcept;

  // The owner's last call: no Allocate after it. Deletes the arena at once when no
  // block is out, else when the last one is freed.
  void Orphan() noexcept;

  // Owner thread only; for tests and statistics. Blocks handed out and not freed, found
  // by walking the free lists and stacks (O(free blocks)).
  size_t chunk_count() const { return chunk_count_; }
  int64_t CountLiveBlocks() const;

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  // At the start of each chunk (its first 64 bytes; blocks follow).
  struct alignas(64) ChunkHeader {
    TimerArena* arena;
    ChunkHeader* next_chunk;
    int block_class;
  };

  explicit TimerArena(std::atomic<size_t>* reserved) : reserved_(reserved) {}
  ~TimerArena();

  static ChunkHeader* ChunkOf(void* block) {
    return reinterpret_cast<ChunkHeader*>(reinterpret_cast<uintptr_t>(block) &
                                          ~(uintptr_t{kChunkBytes} - 1));
  }
  static int ClassOf(size_t size) {
    return static_cast<int>(((size + kLineBytes - 1) / kLineBytes) / 2);
  }
  static size_t ClassBytes(int c) { return static_cast<size_t>(2 * c + 1) * kLineBytes; }
  void* AllocateSlow(int c);
  void FreeRemote(FreeBlock* b, int c) noexcept;
  static int64_t Length(const FreeBlock* b);
  static FreeBlock* Orphaned() { return reinterpret_cast<FreeBlock*>(uintptr_t{1}); }

  // Owner-only. No per-block count: what is out is worked out when needed (Orphan).
  FreeBlock* free_[kClasses] = {};
  char* bump_[kClasses] = {};
  char* bump_end_[kClasses] = {};
  ChunkHeader* chunks_ = nullptr;
  size_t chunk_count_ = 0;
  int64_t carved_ = 0;  // blocks ever cut from chunks
  std::atomic<size_t>* reserved_;  // see Create; null after Orphan

  // Shared: per class, the blocks freed on other threads (Orphaned() once the owner is
  // gone); after Orphan() the count of blocks still out, as Orphan() describes.
  alignas(64) std::atomic<FreeBlock*> remote_[kClasses] = {};
  std::atomic<int64_t> outstanding_{0};
};

inline void* TimerArena::Allocate(size_t size) {
  if (size == 0 || size > kMaxBlockBytes) return nullptr;
  const int c = ClassOf(size);
  if (FreeBlock* b = free_[c]) {
    free_[c] = b->next;
    return b;
  }
  return AllocateSlow(c);
}

inline void TimerArena::Free(void* block) noexcept {
  ChunkHeader* chunk = ChunkOf(block);
  TimerArena* arena = chunk->arena;
  FreeBlock* b = static_cast<FreeBlock*>(block);
  const int c = chunk->block_class;
  if (arena == tls_timer_arena) {
    b->next = arena->free_[c];
    arena->free_[c] = b;
  } else {
    arena->FreeRemote(b, c);
  }
}

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_TIMER_ARENA_H_
