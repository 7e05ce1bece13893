// DefaultThreadFactory: the ThreadFactory executors use unless given another, naming
// each thread after its pool.
//
//   DefaultThreadFactory factory("worker");          // threads "worker-1-1", "worker-1-2"...
//   absl::StatusOr<std::unique_ptr<Thread>> t = factory.NewThread([] { Work(); });
//   if (t.ok()) (*t)->Join();
//
// Thread safety: thread-safe.
// Ownership: NewThread returns the new Thread to the caller, which then owns the OS
// thread.
// See docs/threading.md.
#ifndef GYRE_CONCURRENT_DEFAULT_THREAD_FACTORY_H_
#define GYRE_CONCURRENT_DEFAULT_THREAD_FACTORY_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "gyre/concurrent/thread.h"
#include "gyre/concurrent/thread_factory.h"

namespace gyre {

struct ThreadOptions {
  // A nice value in [-20, 19] applied to each new thread (unset: inherit). Out of range:
  // NewThread returns InvalidArgument. Raising priority may need privileges; a failure
  // to apply it is logged, the thread still runs.
  std::optional<int> nice;
};

// Names threads `<pool>-<poolId>-<threadId>` (poolId: a process-wide counter, one per
// factory; threadId: per factory, from 1) and sets that as the OS thread name,
// truncated to the 15 characters Linux allows (visible in /proc/self/task/*/comm).
// The body runs with FastThreadLocal::RemoveAll() after it, on the same thread.
//
// Thread safety: thread-safe.
class DefaultThreadFactory : public ThreadFactory {
 public:
  explicit DefaultThreadFactory(std::string pool_name, ThreadOptions options = {});

  absl::StatusOr<std::unique_ptr<Thread>> NewThread(absl::AnyInvocable<void()> body) override;

  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;  // "<pool>-<poolId>-"
  ThreadOptions options_;
  // Relaxed: only uniqueness of the numbers matters.
  std::atomic<int> next_thread_id_{1};
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_DEFAULT_THREAD_FACTORY_H_
