// DefaultEventExecutor and DefaultEventExecutorGroup: plain task executors (no I/O).
//
//   DefaultEventExecutor executor;                           // no thread yet
//   executor.Execute([] { Work(); });                        // starts it
//   executor.ShutdownGracefully().Await();
//
//   auto group = DefaultEventExecutorGroup::Create(4);       // StatusOr
//   if (!group.ok()) return group.status();
//   (*group)->Submit([] { return 1; });
//
// Thread safety: every public method is thread-safe.
// Ownership: an executor owns its thread; a group owns its executors. Destruction shuts
// down (quiet period zero) and joins.
#ifndef GYRE_CONCURRENT_DEFAULT_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_DEFAULT_EVENT_EXECUTOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/multithread_event_executor_group.h"
#include "gyre/concurrent/single_thread_event_executor.h"

namespace gyre {

// Runs tasks and timers, nothing else: its Run() waits for work, runs it, and stops
// when ConfirmShutdown() says so.
class DefaultEventExecutor final : public SingleThreadEventExecutor {
 public:
  DefaultEventExecutor() : DefaultEventExecutor(nullptr, ExecutorOptions()) {}
  explicit DefaultEventExecutor(ExecutorOptions options)
      : DefaultEventExecutor(nullptr, std::move(options)) {}
  // A child of `parent` (may be null).
  DefaultEventExecutor(EventExecutorGroup* parent, ExecutorOptions options)
      : SingleThreadEventExecutor(parent, std::move(options)) {}
  ~DefaultEventExecutor() override { ShutdownAndJoin(); }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
};

// A MultithreadEventExecutorGroup of DefaultEventExecutors.
class DefaultEventExecutorGroup final : public MultithreadEventExecutorGroup {
 public:
  // InvalidArgument when n_threads <= 0; a child's creation error otherwise.
  static absl::StatusOr<std::unique_ptr<DefaultEventExecutorGroup>> Create(
      int n_threads, GroupOptions options = {});

 protected:
  absl::StatusOr<std::unique_ptr<EventExecutor>> NewChild(int index) override;

 private:
  explicit DefaultEventExecutorGroup(GroupOptions options)
      : MultithreadEventExecutorGroup(std::move(options)) {}
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_DEFAULT_EVENT_EXECUTOR_H_
