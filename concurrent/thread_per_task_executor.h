// ThreadPerTaskExecutor: runs each task on a new thread from a ThreadFactory.
//
//   DefaultThreadFactory factory("io");
//   ThreadPerTaskExecutor executor(&factory);
//   absl::Status s = executor.Execute([] { Work(); });   // a new thread "io-N-1"
//
// Thread safety: thread-safe.
// Ownership: does not own the factory (it must outlive the executor); owns the threads
// it made, and joins them all when destroyed.
#ifndef GYRE_CONCURRENT_THREAD_PER_TASK_EXECUTOR_H_
#define GYRE_CONCURRENT_THREAD_PER_TASK_EXECUTOR_H_

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/thread_factory.h"

namespace gyre {

class ThreadPerTaskExecutor {
 public:
  // `factory` must not be null (InvalidArgument from Execute otherwise).
  explicit ThreadPerTaskExecutor(ThreadFactory* factory);
  ThreadPerTaskExecutor(const ThreadPerTaskExecutor&) = delete;
  ThreadPerTaskExecutor& operator=(const ThreadPerTaskExecutor&) = delete;
  // Joins every thread started by Execute.
  ~ThreadPerTaskExecutor();

  // Starts `task` on a new thread. Returns the factory's error (the task is then
  // destroyed on this thread without running), or InvalidArgument for a null factory.
  absl::Status Execute(absl::AnyInvocable<void()> task);

  // Waits for every thread started so far.
  void JoinAll();

 private:
  ThreadFactory* const factory_;
  internal::Mutex mu_;
  std::vector<std::unique_ptr<Thread>> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_THREAD_PER_TASK_EXECUTOR_H_
