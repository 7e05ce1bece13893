#include "gyre/concurrent/internal/mpsc_queue.h"

#include "gyre/concurrent/internal/thread_exit.h"

namespace gyre {
namespace internal {
namespace {

// Frees this thread's cached nodes (it is exiting).
void FlushNodeCache() {
  NodeCache& cache = tls_node_cache;
  cache.exiting = true;
  while (cache.head != nullptr) {
    TaskNode* n = cache.head;
    cache.head = n->next.load(std::memory_order_relaxed);
    delete n;
  }
}

}  // namespace

void RegisterNodeCacheFlush() {
  RunAtThreadExit<NodeCache>(&FlushNodeCache);
  tls_node_cache.flush_registered = true;
}

}  // namespace internal
}  // namespace gyre
