#include "gyre/concurrent/internal/mpsc_queue.h"

#include "gyre/concurrent/internal/thread_exit.h"

namespace gyre {
namespace internal {
namespace {

// Frees this thread's cached nodes (it is exiting).
void DrainNodeCache(NodeCache& cache) {
  while (cache.head != nullptr) {
    TaskNode* n = cache.head;
    cache.head = n->next.load(std::memory_order_relaxed);
    delete n;
  }
}

}  // namespace

void RegisterNodeCacheFlush() {
  DrainAtThreadExit<NodeCache, &DrainNodeCache>(tls_node_cache);
}

}  // namespace internal
}  // namespace gyre
