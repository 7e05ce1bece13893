// LoopAffinity: "only on this loop's thread", as a capability that clang's
// thread-safety analysis checks at compile time.
//
//   class MyLoop : public SingleThreadEventExecutor {
//     ...
//     void Run() override {
//       loop_affinity_.AssertOnLoop();       // Run() is on the loop thread
//       count_++;                            // OK
//     }
//     int count_ ABSL_GUARDED_BY(loop_affinity_) = 0;
//   };
//
// Loop-confined members are declared ABSL_GUARDED_BY(an affinity), functions that
// touch them ABSL_EXCLUSIVE_LOCKS_REQUIRED(it); a function that knows it runs on the
// loop (a task body, the run loop) says so with AssertOnLoop(). With
// `--config=clang` (-Wthread-safety, as errors) an access from a function that has not
// established it is a compile error. AssertOnLoop() also checks, in debug builds, that
// the calling thread is the owner's loop (InEventLoop()); it costs nothing in opt
// builds. AssumeExclusive() is for the few places where no loop thread can be running
// (before it started, after it was joined): it tells the analysis and checks nothing.
//
// A channel's affinity is bound to its event loop at registration; before that its
// state belongs to whoever holds the unregistered channel, and AssertOnLoop() accepts
// any thread.
//
// Thread safety: thread-safe. Ownership: does not own the executor it refers to.
#ifndef GYRE_CONCURRENT_LOOP_AFFINITY_H_
#define GYRE_CONCURRENT_LOOP_AFFINITY_H_

#include <atomic>

#include "absl/base/thread_annotations.h"

namespace gyre {

class EventExecutor;

class ABSL_LOCKABLE LoopAffinity {
 public:
  // Bound to `owner` (null: not yet; see Bind).
  explicit LoopAffinity(const EventExecutor* owner = nullptr) : owner_(owner) {}
  LoopAffinity(const LoopAffinity&) = delete;
  LoopAffinity& operator=(const LoopAffinity&) = delete;

  // Binds to `owner` (a channel's loop, at registration).
  void Bind(const EventExecutor* owner) {
    // Relaxed: read only by the debug check, on the thread that the owner's loop runs.
    owner_.store(owner, std::memory_order_relaxed);
  }

  // The caller runs on the owner's loop thread (any thread while unbound). Checked in
  // debug builds.
  void AssertOnLoop() const ABSL_ASSERT_EXCLUSIVE_LOCK() {
#ifndef NDEBUG
    CheckOnLoop();
#endif
  }

  // No loop thread can touch the state now (not started, or joined). Not checked.
  void AssumeExclusive() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  void CheckOnLoop() const;

  std::atomic<const EventExecutor*> owner_;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_LOOP_AFFINITY_H_
