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
#include "gyre/concurrent/abstract_event_executor_group.h"
#include "gyre/concurrent/event_executor.h"

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

}  // namespace gyre

#endif  // GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_H_
