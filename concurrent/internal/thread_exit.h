// RunAtThreadExit: a function to run when the calling thread exits, for per-thread
// caches that hand their blocks back.
//
//   RunAtThreadExit<NodeCache>(&FlushNodeCache);   // once per thread; later calls re-arm
//
// The function runs during the thread's thread_local destruction, in reverse order of
// first registration among thread_local objects (a cache registered after another
// flushes first). One slot per Tag and thread: a second call with the same Tag on the
// same thread replaces the function.
// Thread safety: affects the calling thread only.
#ifndef GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_
#define GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_

namespace gyre {
namespace internal {

template <typename Tag>
void RunAtThreadExit(void (*fn)()) {
  struct Runner {
    void (*fn)() = nullptr;
    ~Runner() {
      if (fn != nullptr) fn();
    }
  };
  static thread_local Runner runner;
  runner.fn = fn;
}

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_THREAD_EXIT_H_
