// ScheduledFuture<T>: the future of a task given to Schedule / ScheduleAtFixedRate /
// ScheduleWithFixedDelay, with its deadline.
//
//   ScheduledFuture<int> f = loop->Schedule([] { return 42; }, absl::Seconds(1));
//   absl::Time when = f.Deadline();
//   f.Cancel();        // removes the task from the loop's timer heap; it never runs
//
// A one-shot task's future completes with the body's result (Internal if it threw). A
// periodic task's future never succeeds: it completes as cancelled when cancelled (or
// when its executor terminates), or fails with Internal when the body throws, which
// also stops the repetition. A task still pending when its executor terminates
// completes as cancelled and never runs. Cancel() on the loop's thread takes the task
// out of the timer queue before the future's listeners run (so a listener that
// reschedules sees the queue without it). Cancelled from another thread, it is queued
// for the loop, which frees it on its next pass without being woken for each one.
//
// Thread safety: as Future; every method is thread-safe.
// Ownership: shares the task state with the executor, which drops its reference when
// the task runs for the last time or is cancelled.
#ifndef GYRE_CONCURRENT_SCHEDULED_FUTURE_H_
#define GYRE_CONCURRENT_SCHEDULED_FUTURE_H_

#include "absl/time/time.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/scheduled_task.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {

class EventExecutorGroup;

template <typename T>
class ScheduledFuture : public Future<T> {
 public:
  // An empty handle (valid() is false).
  ScheduledFuture() = default;

  // When the task is (next) due, on its executor's ticker's timeline. For a rejected
  // task, when it would have been due.
  absl::Time Deadline() const {
    const Ticker* ticker = task_->ticker() != nullptr ? task_->ticker() : Ticker::System();
    return ticker->ToTime(task_->deadline_nanos());
  }

 private:
  friend class EventExecutorGroup;

  template <typename F>
  explicit ScheduledFuture(internal::ScheduledTaskCore<T, F>* core)
      : Future<T>(core), task_(core) {}  // adopts the creation reference

  const internal::ScheduledTask* task_ = nullptr;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_SCHEDULED_FUTURE_H_
