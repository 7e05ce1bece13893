// ThreadFactory: where executors get their threads from. Thread (thread.h) is what it
// returns; DefaultThreadFactory (default_thread_factory.h), the factory executors use
// unless given another, is included here too.
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

#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/concurrent/thread.h"

namespace gyre {

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

// Last: DefaultThreadFactory derives from ThreadFactory, so it needs the class above.
#include "gyre/concurrent/default_thread_factory.h"

#endif  // GYRE_CONCURRENT_THREAD_FACTORY_H_
