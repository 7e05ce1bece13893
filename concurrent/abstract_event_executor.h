// AbstractEventExecutor: the base for executors; remembers the parent group and gives
// subclasses a task runner that catches what a task throws.
//
//   class MyExecutor : public AbstractEventExecutor { ... };
//
// Thread safety: as EventExecutor (every method thread-safe).
// Ownership: does not own its parent.
#ifndef GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_H_

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gyre/concurrent/abstract_event_executor_group.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/future.h"

namespace gyre {

class AbstractEventExecutor : public virtual EventExecutor, public AbstractEventExecutorGroup {
 public:
  EventExecutorGroup* parent() const override { return parent_; }

  // Runs `task`, logging (never propagating) an exception it throws.
  static void SafeExecute(absl::AnyInvocable<void()>& task);

 protected:
  explicit AbstractEventExecutor(EventExecutorGroup* parent = nullptr) : parent_(parent) {}

 private:
  EventExecutorGroup* const parent_;
};

// The base of the process-wide executors that cannot be shut down (GlobalEventExecutor,
// ImmediateEventExecutor): ShutdownGracefully returns a future failed with
// FailedPrecondition (`why`), which is also the termination future; it never shuts down
// or terminates.
class AbstractUnstoppableEventExecutor : public AbstractEventExecutor {
 public:
  using EventExecutorGroup::ShutdownGracefully;
  Future<void> ShutdownGracefully(absl::Duration, absl::Duration) override { return termination_; }
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override { return false; }
  bool IsShutdown() const override { return false; }
  bool IsTerminated() const override { return false; }
  bool AwaitTermination(absl::Duration) override { return false; }

 protected:
  explicit AbstractUnstoppableEventExecutor(absl::string_view why)
      : termination_(MakeFailedFuture<void>(nullptr, absl::FailedPreconditionError(why))) {}

 private:
  const Future<void> termination_;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_H_
