// EventExecutor: one executor (one thread of tasks); also a group of one.
//
//   EventExecutor* loop = group->Next();
//   if (loop->InEventLoop()) { Touch(); } else { loop->Execute([] { Touch(); }); }
//   Promise<int> p = loop->NewPromise<int>();
//
// Thread safety: every method is thread-safe.
// Ownership: owned by its parent group (or by whoever created a standalone executor).
#ifndef GYRE_CONCURRENT_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_EVENT_EXECUTOR_H_

#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/event_executor_group.h"
#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/internal/future_core.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/progressive_promise.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/internal/scheduled_task.h"
#include "gyre/concurrent/scheduled_future.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {

class EventExecutor : public virtual EventExecutorGroup {
 public:
  // An executor is its own only member.
  EventExecutor* Next() { return this; }
  EventExecutor* NextExecutor() override { return this; }
  std::vector<EventExecutor*> executors() const override {
    return {const_cast<EventExecutor*>(this)};
  }

  // Returns true when the calling thread is this executor's thread. On a loop's own
  // thread the answer comes from a thread-local set when the thread starts (no call).
  bool InEventLoop() const {
    return internal::tls_current_executor == this || InEventLoop(std::this_thread::get_id());
  }
  virtual bool InEventLoop(std::thread::id thread) const = 0;

  // The group this executor belongs to; null for a standalone executor.
  virtual EventExecutorGroup* parent() const = 0;

  // Queues `task` to run on this executor's thread (never inside this call).
  absl::Status Execute(absl::AnyInvocable<void()> task) override = 0;

  // Describes this executor (state, thread, task counts); never blocks the loop. The
  // default reports only the lifecycle flags.
  virtual ExecutorSnapshot Snapshot() const {
    ExecutorSnapshot s;
    s.state = IsTerminated()     ? ExecutorState::kTerminated
              : IsShutdown()     ? ExecutorState::kShutdown
              : IsShuttingDown() ? ExecutorState::kShuttingDown
                                 : ExecutorState::kStarted;
    return s;
  }

  // The clock this executor's timers use.
  virtual const Ticker* ticker() const { return Ticker::System(); }

  // Takes one reference to `task` (whose deadline is set) into this executor's timers.
  // Returns FailedPrecondition when shut down, Unimplemented (the default) for executors
  // without timers; the task is then left to the caller. Used by Schedule*.
  virtual absl::Status ScheduleTask(internal::ScheduledTaskRef& task) {
    return absl::UnimplementedError("this executor does not support scheduled tasks");
  }

  // Factories for futures whose listeners are notified on this executor.
  template <typename T>
  Promise<T> NewPromise() {
    return Promise<T>(this);
  }
  template <typename T>
  ProgressivePromise<T> NewProgressivePromise() {
    return ProgressivePromise<T>(this);
  }
  template <typename T>
  Future<T> NewSucceededFuture(T value) {
    return MakeSucceededFuture<T>(this, std::move(value));
  }
  Future<void> NewSucceededFuture() { return MakeSucceededFuture(this); }
  template <typename T>
  Future<T> NewFailedFuture(absl::Status cause) {
    return MakeFailedFuture<T>(this, std::move(cause));
  }
};

}  // namespace gyre

namespace gyre {

// Defined here, where EventExecutor is complete.
template <typename F>
auto EventExecutorGroup::Submit(F&& f) -> Future<std::invoke_result_t<std::decay_t<F>&>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  EventExecutor* executor = Next();
  Promise<R> promise(executor);
  if (ABSL_PREDICT_FALSE(internal::IsEmptyCallable(f))) {
    promise.TryFailure(internal::EmptyTaskError());
    return promise;
  }
  absl::Status status = executor->Execute(
      [promise, fn = std::forward<F>(f)]() mutable {
        if (!promise.SetUncancellable()) return;  // cancelled before it ran
        try {
          if constexpr (std::is_void_v<R>) {
            fn();
            promise.TrySuccess();
          } else {
            promise.TrySuccess(fn());
          }
        } catch (const std::exception& e) {
          promise.TryFailure(absl::InternalError(e.what()));
        } catch (...) {
          promise.TryFailure(absl::InternalError("task threw a non-std exception"));
        }
      });
  if (!status.ok()) promise.TryFailure(std::move(status));
  return promise;
}

namespace internal {

// now + delay in ticker nanoseconds, saturating (a non-positive delay means now).
inline int64_t DeadlineNanos(int64_t now, absl::Duration delay) {
  if (delay <= absl::ZeroDuration()) return now;
  if (delay == absl::InfiniteDuration()) return INT64_MAX;
  int64_t d = absl::ToInt64Nanoseconds(delay);
  return d > INT64_MAX - now ? INT64_MAX : now + d;
}

}  // namespace internal

template <typename R, typename F>
ScheduledFuture<R> EventExecutorGroup::ScheduleImpl(F&& f, absl::Duration delay,
                                                    internal::ScheduledTask::Kind kind,
                                                    absl::Duration period) {
  using Core = internal::ScheduledTaskCore<R, std::decay_t<F>>;
  const bool empty = internal::IsEmptyCallable(f);
  EventExecutor* executor = Next();
  int64_t period_nanos = 0;
  if (kind != internal::ScheduledTask::Kind::kOnce) {
    period_nanos = period == absl::InfiniteDuration() ? INT64_MAX : absl::ToInt64Nanoseconds(period);
  }
  Core* core = Core::Create(executor, std::forward<F>(f), kind, period_nanos);
  ScheduledFuture<R> future(core);   // adopts one of the two creation references
  internal::ScheduledTaskRef ref(core);  // and the executor's
  const Ticker* ticker = executor->ticker();
  core->set_ticker(ticker);
  core->set_deadline_nanos(internal::DeadlineNanos(ticker->Nanos(), delay));
  if (kind != internal::ScheduledTask::Kind::kOnce && period <= absl::ZeroDuration()) {
    core->FailDetached(absl::InvalidArgumentError("a periodic task needs a positive period"));
    return future;  // `ref` drops the executor's reference
  }
  if (ABSL_PREDICT_FALSE(empty)) {
    core->FailDetached(internal::EmptyTaskError());
    return future;  // as above
  }
  absl::Status status = executor->ScheduleTask(ref);
  if (!status.ok()) core->FailDetached(std::move(status));  // `ref` drops the executor's ref
  return future;
}

template <typename F>
auto EventExecutorGroup::Schedule(F&& f, absl::Duration delay)
    -> ScheduledFuture<std::invoke_result_t<std::decay_t<F>&>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  return ScheduleImpl<R>(std::forward<F>(f), delay, internal::ScheduledTask::Kind::kOnce,
                         absl::ZeroDuration());
}

template <typename F>
ScheduledFuture<void> EventExecutorGroup::ScheduleAtFixedRate(F&& f, absl::Duration initial_delay,
                                                              absl::Duration period) {
  return ScheduleImpl<void>(std::forward<F>(f), initial_delay,
                            internal::ScheduledTask::Kind::kFixedRate, period);
}

template <typename F>
ScheduledFuture<void> EventExecutorGroup::ScheduleWithFixedDelay(F&& f,
                                                                 absl::Duration initial_delay,
                                                                 absl::Duration delay) {
  return ScheduleImpl<void>(std::forward<F>(f), initial_delay,
                            internal::ScheduledTask::Kind::kFixedDelay, delay);
}

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EVENT_EXECUTOR_H_
