// A per-thread cache of freed small blocks in front of the global allocator, for
// objects created and destroyed at a high rate on event-loop threads (future states,
// boxed pipeline messages).
//
//   void* p = internal::AllocateSmallBlock(sizeof(T));
//   T* t = ::new (p) T(...);
//   t->~T();
//   internal::FreeSmallBlock(t, sizeof(T));   // the same size as allocated
//
// Sizes up to kSmallBlockClasses * kSmallBlockClassBytes are served from 64-byte size
// classes, larger ones go straight to the allocator.
//
// Thread safety: each thread has its own cache; a block may be freed on another thread
// than the one that allocated it (it then joins that thread's cache). Each thread returns
// its cached blocks to the allocator when it exits. Under sanitizers the cache is off, so
// every use after free is still caught.
#ifndef GYRE_CONCURRENT_INTERNAL_SMALL_BLOCK_H_
#define GYRE_CONCURRENT_INTERNAL_SMALL_BLOCK_H_

#include <cstddef>
#include <cstdint>

namespace gyre {
namespace internal {

// Off under sanitizers, so that every use after free is still caught.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GYRE_SMALL_BLOCK_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GYRE_SMALL_BLOCK_CACHE 0
#endif
#endif
#ifndef GYRE_SMALL_BLOCK_CACHE
#define GYRE_SMALL_BLOCK_CACHE 1
#endif

// Size classes of 64 bytes up to 256; larger blocks go straight to the allocator.
inline constexpr size_t kSmallBlockClassBytes = 64;
inline constexpr int kSmallBlockClasses = 4;
inline constexpr uint32_t kMaxCachedPerClass = 256;

struct SmallBlockLink {
  SmallBlockLink* next;
};

// Plain data, so it can be used at any point of thread exit (it is never destroyed);
// RegisterSmallBlockCacheFlush makes the thread return its blocks to the allocator at
// exit.
struct SmallBlockCache {
  SmallBlockLink* head[kSmallBlockClasses];
  uint32_t count[kSmallBlockClasses];
  bool flush_registered;
  bool exiting;
};
inline thread_local SmallBlockCache tls_small_block_cache{};

void* AllocateSmallBlockSlow(size_t size);
void FreeSmallBlockSlow(void* p, size_t size) noexcept;
void RegisterSmallBlockCacheFlush();

inline void* AllocateSmallBlock(size_t size) {
#if GYRE_SMALL_BLOCK_CACHE
  if (size <= kSmallBlockClassBytes * kSmallBlockClasses) {
    const int c = static_cast<int>((size - 1) / kSmallBlockClassBytes);
    SmallBlockCache& cache = tls_small_block_cache;
    if (SmallBlockLink* b = cache.head[c]) {
      cache.head[c] = b->next;
      --cache.count[c];
      return b;
    }
  }
#endif
  return AllocateSmallBlockSlow(size);
}

inline void FreeSmallBlock(void* p, size_t size) noexcept {
#if GYRE_SMALL_BLOCK_CACHE
  if (size <= kSmallBlockClassBytes * kSmallBlockClasses) {
    const int c = static_cast<int>((size - 1) / kSmallBlockClassBytes);
    SmallBlockCache& cache = tls_small_block_cache;
    if (cache.count[c] < kMaxCachedPerClass && cache.flush_registered && !cache.exiting) {
      auto* b = static_cast<SmallBlockLink*>(p);
      b->next = cache.head[c];
      cache.head[c] = b;
      ++cache.count[c];
      return;
    }
  }
#endif
  FreeSmallBlockSlow(p, size);
}

// A standard allocator over the small-block cache, for short-lived containers made on
// a hot path (a request head's bytes). Stateless: all instances compare equal.
template <typename T>
struct SmallBlockAllocator {
  using value_type = T;
  SmallBlockAllocator() = default;
  template <typename U>
  SmallBlockAllocator(const SmallBlockAllocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(size_t n) { return static_cast<T*>(AllocateSmallBlock(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { FreeSmallBlock(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const SmallBlockAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_SMALL_BLOCK_H_
