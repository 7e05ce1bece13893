// GlobalEventExecutor: one process-wide worker thread for small background tasks.
//
//   GlobalEventExecutor::Instance()->Execute([] { Cleanup(); });
//   auto f = GlobalEventExecutor::Instance()->Schedule([] { Poll(); }, absl::Seconds(1));
//
// The thread starts on demand, stops by itself once it has been idle (no task queued,
// no timer pending) for the quiet period (1 s), and a later task starts a new one. It
// cannot be shut down: ShutdownGracefully returns a future failed with
// FailedPrecondition and the executor never terminates.
//
// Thread safety: thread-safe.
// Ownership: Instance() is never destroyed. Other instances (tests) join their thread
// when destroyed.
#ifndef GYRE_CONCURRENT_GLOBAL_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_GLOBAL_EVENT_EXECUTOR_H_

#include <atomic>
#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/abstract_event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/internal/scheduled_task.h"
#include "gyre/concurrent/thread_factory.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {

class GlobalEventExecutor final : public AbstractUnstoppableEventExecutor,
                                  private Ticker::Observer,
                                  private internal::ScheduledTaskHost {
 public:
  static GlobalEventExecutor* Instance();

  // For tests: an instance with its own clock and quiet period. Use Instance() otherwise.
  GlobalEventExecutor(Ticker* ticker, absl::Duration quiet_period);
  // Instance() detaches its workers: it is never destroyed, so nothing would join them.
  ~GlobalEventExecutor() override;

  bool InEventLoop(std::thread::id thread) const override;
  using EventExecutor::InEventLoop;
  // Queues `task`, starting the worker thread if none runs. Returns the thread
  // factory's error if a thread was needed and could not be made.
  absl::Status Execute(absl::AnyInvocable<void()> task) override;

  const Ticker* ticker() const override { return ticker_; }
  absl::Status ScheduleTask(internal::ScheduledTaskRef& task) override;

  // Blocks until no worker thread runs, or `timeout` passes; returns true if none runs.
  bool AwaitInactivity(absl::Duration timeout);
  // Worker threads started so far.
  int ThreadsStarted() const;
  size_t PendingTasks() const;

 private:
  void Worker();
  absl::Status StartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under mu_: starts the worker when none runs, then calls `add` (which queues work)
  // and wakes the worker.
  template <typename Add>
  absl::Status StartAndAdd(Add add) ABSL_LOCKS_EXCLUDED(mu_);
  void OnTimeAdvanced() override;
  void OnScheduledTaskCancelled(internal::ScheduledTask* task) override;

  Ticker* const ticker_;
  const int64_t quiet_nanos_;
  bool detach_workers_ = false;  // set once, before any worker starts
  DefaultThreadFactory factory_;
  // The current worker's id (relaxed: a thread only compares against its own id).
  std::atomic<std::thread::id> worker_id_{};

  mutable internal::Mutex mu_;
  internal::CondVar cv_;
  internal::CondVar idle_cv_;
  std::deque<absl::AnyInvocable<void()>> queue_ ABSL_GUARDED_BY(mu_);
  internal::ScheduledTaskHeap heap_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // destructor only
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  int threads_started_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<Thread> thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_GLOBAL_EVENT_EXECUTOR_H_
