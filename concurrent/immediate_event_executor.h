// ImmediateEventExecutor: runs each task on the calling thread, inside Execute.
//
//   ImmediateEventExecutor* e = ImmediateEventExecutor::Instance();
//   e->Execute([] { Work(); });          // ran before Execute returned
//
// A task submitted while another runs on the same thread (a re-entrant submission) is
// queued and runs right after the current one, before the outer Execute returns: no
// unbounded recursion. It cannot be shut down and keeps no timers (Schedule* fails
// with Unimplemented). InEventLoop() is true only while it is running a task on the
// calling thread, so awaiting its futures from outside never trips the blocking check.
//
// Thread safety: thread-safe; each thread runs its own submissions.
// Ownership: a process-wide singleton, never destroyed.
#ifndef GYRE_CONCURRENT_IMMEDIATE_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_IMMEDIATE_EVENT_EXECUTOR_H_

#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/abstract_event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"

namespace gyre {

class ImmediateEventExecutor final : public AbstractUnstoppableEventExecutor {
 public:
  static ImmediateEventExecutor* Instance();

  bool InEventLoop(std::thread::id thread) const override;
  using EventExecutor::InEventLoop;
  // Runs `task` now (or, re-entrantly, right after the running task). Always OK.
  absl::Status Execute(absl::AnyInvocable<void()> task) override;

 private:
  ImmediateEventExecutor();
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_IMMEDIATE_EVENT_EXECUTOR_H_
