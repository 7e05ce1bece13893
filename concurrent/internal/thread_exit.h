// DrainAtThreadExit: empties a per-thread cache when its thread exits, for the caches
// that hold blocks a thread freed (task nodes, small blocks).
//
//   DrainAtThreadExit<NodeCache, &DrainNodeCache>(tls_node_cache);  // once per thread
//
// `Cache` is a trivially destructible thread_local with two flags the cache's fast
// paths read: `flush_registered` (set here, so the caller arms once) and `exiting` (set
// when the thread exits, before `Drain` runs, so that frees during and after the
// drain bypass the cache). The drain runs during the thread's thread_local destruction,
// in reverse order of first registration among thread_local objects (a cache armed
// after another drains first). One slot per Cache type and thread: arming again
// re-targets it.
// Thread safety: affects the calling thread only.
#ifndef GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_
#define GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_

namespace gyre {
namespace internal {

template <typename Cache, void (*Drain)(Cache&)>
void DrainAtThreadExit(Cache& cache) {
  struct Runner {
    Cache* cache = nullptr;
    ~Runner() {
      if (cache == nullptr) return;
      cache->exiting = true;
      Drain(*cache);
    }
  };
  static thread_local Runner runner;
  runner.cache = &cache;
  cache.flush_registered = true;
}

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_
