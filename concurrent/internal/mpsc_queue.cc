#include "gyre/concurrent/internal/mpsc_queue.h"

#include <utility>

#include "absl/base/optimization.h"
#include "gyre/concurrent/internal/thread_exit.h"

namespace gyre {
namespace internal {
namespace {

// Gives back the nodes of `cache.slab` not handed out (all of them counted live).
void ReleaseSlabRest(NodeCache& cache) {
  NodeSlab* slab = std::exchange(cache.slab, nullptr);
  if (slab == nullptr) return;
  const uint32_t unused = NodeSlab::kNodes - cache.slab_next;
  // acq_rel: as in FreeTaskNode.
  if (unused != 0 && slab->live.fetch_sub(unused, std::memory_order_acq_rel) == unused) {
    delete slab;
  }
}

// Frees this thread's cached nodes and the rest of its slab (it is exiting).
void DrainNodeCache(NodeCache& cache) {
  while (cache.head != nullptr) {
    TaskNode* n = cache.head;
    cache.head = n->next.load(std::memory_order_relaxed);
    FreeTaskNode(n);
  }
  ReleaseSlabRest(cache);
}

}  // namespace

void RegisterNodeCacheFlush() {
  DrainAtThreadExit<NodeCache, &DrainNodeCache>(tls_node_cache);
}

TaskNode* CarveNode(NodeCache& cache) {
  if (ABSL_PREDICT_FALSE(cache.exiting)) return new TaskNode();  // no slab to leak
  if (cache.slab == nullptr || cache.slab_next == NodeSlab::kNodes) {
    // A used-up slab needs nothing more from this thread: its nodes free it.
    cache.slab = new NodeSlab();
    cache.slab_next = 0;
    if (!cache.flush_registered) RegisterNodeCacheFlush();
  }
  return &cache.slab->nodes[cache.slab_next++];
}

}  // namespace internal
}  // namespace gyre
