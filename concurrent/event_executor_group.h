// EventExecutorGroup: a set of executors that hands out one per call to Next().
//
//   auto group = DefaultEventExecutorGroup::Create(4).value();
//   group->Execute([] { DoWork(); });               // runs on one of the 4 threads
//   Future<int> f = group->Submit([] { return 42; });
//   group->ShutdownGracefully().Await();
//
// Thread safety: every method is thread-safe.
// Ownership: a group owns its executors; they live until the group is destroyed.
// See docs/threading.md.
#ifndef GYRE_CONCURRENT_EVENT_EXECUTOR_GROUP_H_
#define GYRE_CONCURRENT_EVENT_EXECUTOR_GROUP_H_

#include <exception>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/scheduled_future.h"

namespace gyre {

class EventExecutor;

namespace internal {

template <typename F>
struct IsNullableFunctionObject : std::false_type {};
template <typename Sig>
struct IsNullableFunctionObject<std::function<Sig>> : std::true_type {};
template <typename Sig>
struct IsNullableFunctionObject<absl::AnyInvocable<Sig>> : std::true_type {};

// True for a callable that holds nothing to call: a null function or member pointer, an
// empty std::function or AnyInvocable. Calling one would crash the loop (or throw where
// the task is no longer the caller's), so Execute, Submit and Schedule refuse it up front
// with InvalidArgument, where Netty throws NullPointerException. Constant false for every
// other callable (a lambda), so the check costs nothing on the common path.
template <typename F>
constexpr bool IsEmptyCallable(const F& f) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    return f == nullptr;
  } else if constexpr (IsNullableFunctionObject<F>::value) {
    return !f;
  } else {
    return false;
  }
}

inline absl::Status EmptyTaskError() {
  return absl::InvalidArgumentError("empty task: nothing to run (null or empty callable)");
}

}  // namespace internal

// The interface shared by groups and single executors (an executor is a group of one).
//
// Guarantees: a task accepted by Execute() runs exactly once, or the executor is shut
// down before it could run and the rejection is reported (never silently dropped). A
// posting call never runs the task before it returns.
class EventExecutorGroup {
 public:
  EventExecutorGroup() = default;
  EventExecutorGroup(const EventExecutorGroup&) = delete;
  EventExecutorGroup& operator=(const EventExecutorGroup&) = delete;
  virtual ~EventExecutorGroup() = default;

  // Returns one of the group's executors, chosen round-robin. An executor returns itself.
  // (Non-virtual so that EventLoopGroup can return EventLoop*: implement NextExecutor.)
  EventExecutor* Next() { return NextExecutor(); }
  virtual EventExecutor* NextExecutor() = 0;

  // Returns the group's executors; the pointers stay valid for the group's lifetime.
  virtual std::vector<EventExecutor*> executors() const = 0;

  // Starts graceful shutdown with a 2 s quiet period and a 15 s timeout.
  Future<void> ShutdownGracefully();

  // Starts graceful shutdown: executors keep running tasks until `quiet_period` passes
  // with no task run, or `timeout` elapses; then they reject new tasks, drain and
  // terminate. Returns TerminationFuture(), or a future failed with InvalidArgument when
  // a duration is negative or quiet_period > timeout.
  virtual Future<void> ShutdownGracefully(absl::Duration quiet_period,
                                          absl::Duration timeout) = 0;

  // Completes when every executor of the group has terminated.
  virtual Future<void> TerminationFuture() const = 0;

  virtual bool IsShuttingDown() const = 0;
  virtual bool IsShutdown() const = 0;
  virtual bool IsTerminated() const = 0;

  // Blocks until terminated or `timeout` passes; returns IsTerminated().
  virtual bool AwaitTermination(absl::Duration timeout) = 0;

  // Queues `task` on Next(). Returns ResourceExhausted when the queue is full,
  // FailedPrecondition when shut down; the task is then destroyed on this thread.
  // InvalidArgument for an empty task (every implementation checks).
  virtual absl::Status Execute(absl::AnyInvocable<void()> task);

  // Runs f() on Next() and completes the returned future with its result. If f throws,
  // the future fails with Internal (the message carries what()). If the task is
  // rejected, the returned future has already failed with the rejection status; an
  // empty callable (a null function pointer, an empty std::function) with InvalidArgument.
  template <typename F>
  auto Submit(F&& f) -> Future<std::invoke_result_t<std::decay_t<F>&>>;

  // Runs f() on Next() once `delay` has passed (zero or negative: as soon as possible;
  // absl::InfiniteDuration(): never, until cancelled) and completes the returned future
  // with its result (Internal if it threw). Cancelling the future removes the task.
  // A rejected task's future has already failed with the rejection status
  // (FailedPrecondition when shut down; Unimplemented when the executor keeps no timers;
  // InvalidArgument for an empty callable).
  template <typename F>
  auto Schedule(F&& f, absl::Duration delay)
      -> ScheduledFuture<std::invoke_result_t<std::decay_t<F>&>>;

  // Runs f() on Next() first after `initial_delay`, then every `period` measured from
  // the previous scheduled start: late runs catch up back to back, without drift. Stops
  // when the future is cancelled or f throws (the future then fails with Internal).
  // A period <= 0 gives a future failed with InvalidArgument.
  template <typename F>
  ScheduledFuture<void> ScheduleAtFixedRate(F&& f, absl::Duration initial_delay,
                                            absl::Duration period);

  // As ScheduleAtFixedRate, but each run is due `delay` after the previous run ended.
  template <typename F>
  ScheduledFuture<void> ScheduleWithFixedDelay(F&& f, absl::Duration initial_delay,
                                               absl::Duration delay);

 private:
  template <typename R, typename F>
  ScheduledFuture<R> ScheduleImpl(F&& f, absl::Duration delay,
                                  internal::ScheduledTask::Kind kind, absl::Duration period);
};

}  // namespace gyre

// EventExecutor, and the template definitions that need it.
#include "gyre/concurrent/event_executor.h"

#endif  // GYRE_CONCURRENT_EVENT_EXECUTOR_GROUP_H_
