// ThreadFactory / DefaultThreadFactory: where executors get their threads from.
//
//   DefaultThreadFactory factory("worker");          // threads "worker-1-1", "worker-1-2"...
//   absl::StatusOr<std::unique_ptr<Thread>> t = factory.NewThread([] { Work(); });
//   if (t.ok()) (*t)->Join();
//
// Thread safety: ThreadFactory implementations must be thread-safe; Thread is
// thread-compatible.
// See docs/threading.md.
#ifndef GYRE_CONCURRENT_THREAD_FACTORY_H_
#define GYRE_CONCURRENT_THREAD_FACTORY_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gyre {

// A started thread. Join() waits for it; destroying a joinable Thread joins it (or,
// when destroyed on the thread itself, detaches it).
//
// Thread safety: thread-compatible (one owner).
// Ownership: owns the OS thread.
class Thread {
 public:
  Thread(std::thread thread, std::string name);
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  ~Thread();

  // Waits for the thread to finish. Does nothing if already joined, or when called on
  // the thread itself (which cannot wait for itself; it is detached instead).
  void Join();

  // Lets the thread run on unowned; Join() and the destructor then do nothing.
  void Detach() {
    if (thread_.joinable()) thread_.detach();
  }

  std::thread::id id() const { return id_; }
  // The name given by the factory (the OS name may be truncated to 15 characters).
  const std::string& name() const { return name_; }

 private:
  std::thread thread_;
  std::thread::id id_;
  std::string name_;
};

// Creates threads for executors. NewThread starts `body` on a new thread and returns
// its handle, or a status when no thread could be created (then `body` is destroyed on
// the calling thread and never runs).
//
// Thread safety: implementations must be thread-safe.
class ThreadFactory {
 public:
  virtual ~ThreadFactory() = default;
  virtual absl::StatusOr<std::unique_ptr<Thread>> NewThread(absl::AnyInvocable<void()> body) = 0;
};

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

// Turns a class name into a pool name as Netty does: the first letter is lower-cased
// when it is upper case and the second is lower case ("DefaultEventExecutorGroup" ->
// "defaultEventExecutorGroup", "IOPool" stays); a one-letter name is lower-cased; an
// empty name becomes "unknown". A namespace prefix ("gyre::Foo") is dropped.
std::string ToPoolName(std::string_view class_name);

namespace internal {
// Sets the calling thread's OS name (truncated to 15 bytes). Returns false on failure.
bool SetCurrentThreadName(std::string_view name);
// The calling thread's OS name.
std::string CurrentThreadName();
// The calling thread's kernel thread id.
int CurrentOsThreadId();
}  // namespace internal

}  // namespace gyre

#endif  // GYRE_CONCURRENT_THREAD_FACTORY_H_
