#include "gyre/concurrent/internal/small_block.h"

#include <new>

#include "gyre/concurrent/internal/thread_exit.h"

namespace gyre {
namespace internal {
namespace {

// Returns this thread's cached blocks to the allocator (it is exiting).
void DrainSmallBlockCache(SmallBlockCache& cache) {
  for (int c = 0; c < kSmallBlockClasses; ++c) {
    while (cache.head[c] != nullptr) {
      SmallBlockLink* b = cache.head[c];
      cache.head[c] = b->next;
      ::operator delete(b);
    }
    cache.count[c] = 0;
  }
}

}  // namespace

void RegisterSmallBlockCacheFlush() {
  DrainAtThreadExit<SmallBlockCache, &DrainSmallBlockCache>(tls_small_block_cache);
}

void* AllocateSmallBlockSlow(size_t size) {
#if GYRE_SMALL_BLOCK_CACHE
  if (size <= kSmallBlockClassBytes * kSmallBlockClasses) {
    // Allocate the whole class so the block can serve any object of that class later.
    return ::operator new(((size - 1) / kSmallBlockClassBytes + 1) * kSmallBlockClassBytes);
  }
#endif
  return ::operator new(size);
}

void FreeSmallBlockSlow(void* p, size_t size) noexcept {
#if GYRE_SMALL_BLOCK_CACHE
  SmallBlockCache& cache = tls_small_block_cache;
  if (size <= kSmallBlockClassBytes * kSmallBlockClasses && !cache.flush_registered &&
      !cache.exiting) {
    RegisterSmallBlockCacheFlush();
    FreeSmallBlock(p, size);
    return;
  }
#endif
  ::operator delete(p);
}

}  // namespace internal
}  // namespace gyre
