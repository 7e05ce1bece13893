#include "gyre/concurrent/internal/mpsc_queue.h"

namespace gyre {
namespace internal {
namespace {

// Frees this thread's cached nodes when it exits.
struct NodeCacheFlusher {
  ~NodeCacheFlusher() {
    NodeCache& cache = tls_node_cache;
    cache.exiting = true;
    while (cache.head != nullptr) {
      TaskNode* n = cache.head;
      cache.head = n->next.load(std::memory_order_relaxed);
      delete n;
    }
  }
};

}  // namespace

void RegisterNodeCacheFlush() {
  static thread_local NodeCacheFlusher flusher;
  (void)flusher;
  tls_node_cache.flush_registered = true;
}

}  // namespace internal
}  // namespace gyre
