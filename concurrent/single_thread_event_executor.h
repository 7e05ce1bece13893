// SingleThreadEventExecutor: an executor that runs every task on one thread, started
// lazily on the first task and kept for life.
//
//   class MyLoop : public SingleThreadEventExecutor {
//    public:
//     explicit MyLoop(ExecutorOptions o) : SingleThreadEventExecutor(nullptr, std::move(o)) {}
//     ~MyLoop() override { ShutdownAndJoin(); }    // before the subclass is torn down
//    protected:
//     void Run() override {
//       for (;;) {
//         WaitForTasks();
//         RunAllTasks();
//         if (ConfirmShutdown()) break;
//       }
//     }
//   };
//
// Lifecycle (see ExecutorState): the thread is created through the ThreadFactory when
// the first task arrives, never in the constructor. ShutdownGracefully moves to
// kShuttingDown; tasks are still accepted and run, and the executor finishes once a
// whole quiet period passes with no task run (each run restarts it) or the timeout
// elapses. Then kShutdown: new tasks are rejected, the queue is drained (every task
// accepted before that point runs), shutdown hooks run, scheduled tasks still pending
// complete as cancelled, Cleanup() runs, kTerminated, and TerminationFuture()
// succeeds. An executor whose thread never started terminates inside
// ShutdownGracefully, on the caller's thread (its hooks run there), starting no thread.
// As in Netty, scheduled tasks are cancelled when shutdown begins.
// A listener on TerminationFuture() may destroy the executor (it runs on the loop
// thread, which then only unwinds), provided no other thread is still inside one of its
// methods, ShutdownGracefully included: the usual rule for destroying any object.
//
// Guarantees: a task whose Execute returned OK runs exactly once, on the loop thread;
// any other was refused with a status and destroyed on the submitting thread. Tasks
// from one thread run in submission order. A task that throws is logged; the loop goes
// on. Posting never runs the task inside the call (except the RunInCaller policy).
// Non-guarantees: no fairness between producers; no bound on the delay of a task behind
// a long-running one.
//
// The task queue is an MPSC linked queue with recycled nodes: a producer pays one atomic
// add (admission and the pending count), one exchange (the push) and, only when the loop
// may be asleep, a mutex and a signal. The loop is woken only when it may be sleeping,
// and never misses a wake-up (a Dekker pair on the tail pointer and the sleeping flag).
// A task the loop submits to itself goes to a loop-local ring instead (no atomics), as
// long as no task from another thread is visibly queued: the order of tasks that
// happen-before one another is the order they run in, exactly as with a single queue.
// There a task runs where it lies; Execute(callable) also builds it there.
//
// Timers: one scheduled on the loop goes straight into the heap; one scheduled from
// another thread is pushed on a lock-free stack that the loop moves into the heap on its
// next pass, and wakes the loop only if it sleeps past the new deadline. Cancelling on
// the loop removes the timer from the heap at once; cancelling from another thread
// pushes it on a second stack that the loop drains on its next pass (removing one by
// one, or rebuilding the heap in O(n) when many were cancelled), and wakes the loop
// once kCancelWakeBatch cancellations are waiting, so at most kCancelWakeBatch - 1
// cancelled timers ever wait for the loop's next wake-up to be freed.
//
// Thread safety: public methods are thread-safe. The protected loop helpers (marked
// "Loop thread only") must be called from Run(), on the loop thread.
// Ownership: owns its thread, queue and timers; the destructor shuts down (quiet period
// zero) and joins. Subclasses must call ShutdownAndJoin() in their own destructor, so
// that Run() never outlives the subclass.
// See docs/threading.md and docs/shutdown.md.
#ifndef GYRE_CONCURRENT_SINGLE_THREAD_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_SINGLE_THREAD_EVENT_EXECUTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/abstract_event_executor.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/loop_affinity.h"
#include "gyre/concurrent/internal/local_task_ring.h"
#include "gyre/concurrent/internal/mpsc_queue.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/internal/notification_stack.h"
#include "gyre/concurrent/internal/scheduled_task.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/thread_factory.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {

class SingleThreadEventExecutor : public AbstractEventExecutor,
                                  private Ticker::Observer,
                                  private internal::ScheduledTaskHost {
 public:
  ~SingleThreadEventExecutor() override;

  bool InEventLoop(std::thread::id thread) const override;
  using EventExecutor::InEventLoop;

  // Queues `task`. Starts the thread first if this is the first task (its creation
  // error is returned then). Returns FailedPrecondition once kShutdown is reached, or
  // what the rejected-execution handler decides when the bounded queue is full.
  // Final: the overload below must behave as this one does.
  absl::Status Execute(absl::AnyInvocable<void()> task) final;

  // Execute for a callable of any other type, with the same semantics. Called on the
  // loop thread, it builds the task in the loop's local queue, where it runs: no
  // type-erased move between the caller and the run (through an EventExecutor*, the
  // AnyInvocable overload moves the task once more).
  template <typename F,
            typename = std::enable_if_t<
                !std::is_same_v<std::decay_t<F>, absl::AnyInvocable<void()>> &&
                std::is_invocable_v<std::decay_t<F>&>>>
  absl::Status Execute(F&& task) {
    if (ABSL_PREDICT_FALSE(internal::IsEmptyCallable(task))) return internal::EmptyTaskError();
    if (TryPushLocal(std::forward<F>(task))) return absl::OkStatus();  // moved only if pushed
    return Execute(absl::AnyInvocable<void()>(std::forward<F>(task)));
  }

  // As Execute, but never calls the rejected-execution handler (a full queue gives
  // ResourceExhausted), and leaves `task` intact when refused.
  absl::Status TryExecute(absl::AnyInvocable<void()>& task);

  // As Execute, but does not wake a sleeping loop: the task runs when the loop next
  // wakes for another reason (a task, a timer, shutdown).
  absl::Status LazyExecute(absl::AnyInvocable<void()> task);

  using EventExecutorGroup::ShutdownGracefully;
  Future<void> ShutdownGracefully(absl::Duration quiet_period, absl::Duration timeout) override;
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override { return state() >= ExecutorState::kShuttingDown; }
  bool IsShutdown() const override { return state() >= ExecutorState::kShutdown; }
  bool IsTerminated() const override { return state() == ExecutorState::kTerminated; }
  // On the loop thread returns IsTerminated() at once (waiting would deadlock).
  bool AwaitTermination(absl::Duration timeout) override;

  ExecutorState state() const {
    // Acquire: pairs with the release stores of each transition.
    return static_cast<ExecutorState>(state_.load(std::memory_order_acquire));
  }

  // Adds a hook run on the loop thread during shutdown (on the caller's thread for an
  // executor that never started). Returns FailedPrecondition once kShutdown is reached;
  // the hook is then destroyed here.
  absl::Status AddShutdownHook(absl::AnyInvocable<void()> hook);

  // Tasks queued and not yet run. Any thread; cheap. A task leaves
  // the count just before it runs.
  size_t PendingTasks() const;
  // Tasks in the timer heap. Any thread; cheap.
  size_t ScheduledTaskCount() const;

  const Ticker* ticker() const override { return ticker_; }
  absl::Status ScheduleTask(internal::ScheduledTaskRef& task) override;
  ExecutorSnapshot Snapshot() const override;

 protected:
  // `parent` may be null (standalone).
  SingleThreadEventExecutor(EventExecutorGroup* parent, ExecutorOptions options);

  // The loop body, on the executor's thread. It must run tasks until ConfirmShutdown()
  // returns true, then return. Returning earlier is a bug and is logged; the executor
  // then shuts itself down. If it throws, the termination future fails with Internal.
  virtual void Run() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) = 0;

  // Called once on the loop thread after the last task and hook, before kTerminated.
  virtual void Cleanup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}

  // Loop thread only. Blocks until a task is queued, a timer is due, Wakeup() is called
  // or the ticker jumps. Never blocks while shutting down (ConfirmShutdown paces that).
  void WaitForTasks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. Returns the next task (a due timer counts as one), waiting as
  // WaitForTasks does; an empty invocable when woken without work.
  absl::AnyInvocable<void()> TakeTask() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. Runs due timers and up to a batch of queued tasks; returns true if
  // anything ran. The batch bound keeps timers from starving behind a queue that is
  // refilled as fast as it drains.
  bool RunAllTasks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // As RunAllTasks, but stops once `timeout` has passed, checked every 64 tasks (B121).
  // Due timers count as tasks: those left when the time is up run in a later call. At
  // least one round of queued tasks runs whatever the timers took, so a stream of due
  // timers cannot starve the queue.
  bool RunAllTasks(absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. True if a task is queued (or being queued), or a timer scheduled
  // from another thread waits to enter the heap.
  bool HasTasks() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    // seq_cst loads: the loop's half of the Dekker pairs with producers (see Sleep).
    return !local_.empty() || queue_.MaybeNonEmpty() ||
           incoming_timers_.load(std::memory_order_seq_cst) != nullptr ||
           cancelled_count_.load(std::memory_order_seq_cst) >= kCancelWakeBatch;
  }

  // Loop thread only. Returns false unless shutting down. Otherwise cancels timers, runs
  // tasks and hooks, and returns true once the executor may stop: a quiet period with
  // no task run, or the timeout, or a quiet period of zero with nothing left to run.
  // When it returns false it may have slept (until a task, a clock jump or the end of
  // the quiet period).
  bool ConfirmShutdown() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. Asked by ConfirmShutdown() while Run() is running, shutting down
  // (not yet kShutdown) and the graceful-shutdown timeout has not elapsed, after it ran
  // tasks and hooks: true keeps the executor from finishing (ConfirmShutdown() returns
  // false at once, without sleeping: the subclass waits on its own primitive, bounded
  // by NanosUntilShutdownTimeout()). Once the timeout elapses it is no longer asked.
  // An event loop returns true while its channels still drain queued writes.
  virtual bool HasPendingShutdownWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return false; }

  // Loop thread only. While shutting down, ticker nanoseconds left until the
  // graceful-shutdown timeout elapses (measured from the ShutdownGracefully call, as
  // ConfirmShutdown() does): 0 once it has, INT64_MAX for an infinite timeout or when
  // not shutting down.
  int64_t NanosUntilShutdownTimeout() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Wakes the loop if it is sleeping, or makes its next sleep return at once.
  void Wakeup();

  // For subclasses that block on their own primitive (an epoll fd) instead of the
  // executor's condition variable. Called on a producer's thread whenever the loop may
  // be blocked and must wake: after a task was queued while the loop announced a
  // blocking wait, and on every Wakeup(). Must be thread-safe, cheap and not block.
  // Runs until ShutdownAndJoin() returns, so the subclass's wake-up primitive must
  // outlive that call.
  virtual void OnWakeupRequested() {}

  // Loop thread only. Announces that the loop is about to block on its own primitive.
  // Returns false (and announces nothing) if a task is already queued, so the caller
  // must not block; otherwise every task queued from now on calls
  // OnWakeupRequested(). Pair each true return with EndBlockingWait().
  bool BeginBlockingWait() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Loop thread only. Ends the wait announced by BeginBlockingWait().
  void EndBlockingWait() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. Nanoseconds until the earliest scheduled task is due: 0 if one is
  // due now, INT64_MAX if none is scheduled.
  int64_t NanosUntilNextScheduledTask() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Shuts down (quiet period zero), joins the thread, then stops observing the ticker
  // (no wake-up reaches OnWakeupRequested() after it returns). Most-derived destructors
  // call it before they release their wake-up primitive; calling it again is harmless.
  // On the loop thread itself it cannot join: the thread is detached and an error is
  // logged.
  void ShutdownAndJoin();

  // Now on this executor's ticker.
  int64_t NanosNow() const { return ticker_->Nanos(); }

  // The loop thread, as a capability: loop-confined members of this class and of
  // subclasses are ABSL_GUARDED_BY it; Run() and the loop helpers require it. A
  // subclass's loop-only method that is not called from Run() starts with
  // loop_affinity_.AssertOnLoop() (see LoopAffinity).
  const LoopAffinity loop_affinity_{this};

  // Loop thread only. Bracket work a subclass does outside tasks (an event loop's I/O
  // handlers): from BeginLoopWork() to EndLoopWork() Snapshot() reports a running task,
  // so a handler that blocks the loop is seen (and reported stalled) like a task would be.
  void BeginLoopWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { StampBatchStart(); }
  void EndLoopWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { ClearTaskStamp(); }

 private:
  // Removes this executor from its ticker's observers, once.
  void DetachFromTicker();

  static constexpr uint64_t kRejectBit = uint64_t{1} << 63;
  static constexpr uint64_t kCountMask = kRejectBit - 1;
  static constexpr size_t kMaxBatch = 1024;
  // A timed RunAllTasks reads the clock after each run of this many tasks.
  static constexpr size_t kTasksPerDeadlineCheck = 64;
  // Tens of microseconds of polling (a pause each) before a loop goes to sleep.
  static constexpr int kSpinsBeforeSleep = 2000;
  // Cross-thread cancellations that wake a sleeping loop to free them.
  static constexpr uint32_t kCancelWakeBatch = 1024;

  enum class Admission { kNormal, kNoHandler, kInternal };
  // Admits and queues `task` (moved from only on success).
  absl::Status Offer(absl::AnyInvocable<void()>& task, bool wake, Admission admission);
  absl::Status EnsureStarted();
  // EnsureStarted for an admission: a failure counts as a rejected task.
  absl::Status StartOrCountRejection();
  // ScheduleTask's other paths, out of line: a schedule on the loop after shutdown (a
  // rejection), and one from another thread (onto the stack of incoming timers).
  ABSL_ATTRIBUTE_NOINLINE absl::Status RejectScheduleOnLoop();
  ABSL_ATTRIBUTE_NOINLINE absl::Status ScheduleTaskFromOutside(internal::ScheduledTaskRef& task);
  void ThreadMain();
  void WakeIfSleeping();
  void Sleep(int64_t timeout_nanos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void RunNode(internal::TaskNode* node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  size_t RunLocal(size_t max) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // The body of both RunAllTasks overloads. No `budget`: one batch of at most kMaxBatch
  // queued tasks, with no clock read inside it. A `budget`: tasks until the queues are
  // empty or the budget has passed, checked every kTasksPerDeadlineCheck tasks.
  bool RunTasksWithin(std::optional<absl::Duration> budget)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Moves timers scheduled or cancelled from other threads into (out of) the heap.
  void AbsorbTimers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Closes the cross-thread timer stacks (kShutdown): later pushes are refused.
  void CloseTimerStacks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void AbsorbIncoming(internal::ScheduledTask* chain) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void AbsorbCancelled(internal::ScheduledTask* chain) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Publishes the latest the loop will sleep until, before it announces sleeping.
  void PublishSleepDeadline() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    // Relaxed: read after the seq_cst load of sleeping_ that follows our seq_cst store.
    sleep_deadline_nanos_.store(heap_.PeekDeadline(), std::memory_order_relaxed);
  }
  bool RunDueScheduled(int64_t now, int64_t deadline = INT64_MAX)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void CancelScheduledTasks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  bool RunShutdownHooks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void FlushAccounting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void PublishScheduledCount() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    // Relaxed: a statistic; no data hangs on it.
    scheduled_count_.store(heap_.size(), std::memory_order_relaxed);
  }
  void AddBusy(int64_t nanos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // The running-task stamp (see ExecutorSnapshot::running_task_age). Loop thread only.
  void StampBatchStart() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    stamp_countdown_ = kTaskStampEvery;
    // Relaxed single-writer statistic.
    task_started_nanos_.store(CoarseMonotonicNanos(), std::memory_order_relaxed);
  }

  // A task from the loop itself goes to the local ring, built there from `task` (an
  // invocable to move from), when that keeps the order a single queue would give:
  // nothing from another thread visibly queued ahead of it. False (and `task` left as
  // it was) on any other thread, for a bounded queue, or once shutting down.
  template <typename F>
  bool TryPushLocal(F&& task) {
    if (internal::tls_current_executor != static_cast<const EventExecutor*>(this)) return false;
    loop_affinity_.AssertOnLoop();  // the current executor is this one: its thread
    if (!local_open_ || !queue_.NoVisibleNodes()) return false;
    local_.Emplace(std::forward<F>(task));
    // Relaxed single-writer statistic.
    local_size_.store(local_.size(), std::memory_order_relaxed);
    return true;
  }

  void BeforeTask() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    // The batch stamp covers its first task; then one refresh every kTaskStampEvery.
    if (ABSL_PREDICT_FALSE(--stamp_countdown_ < 0)) {
      stamp_countdown_ = kTaskStampEvery - 1;
      task_started_nanos_.store(CoarseMonotonicNanos(), std::memory_order_relaxed);
    }
  }
  void ClearTaskStamp() { task_started_nanos_.store(0, std::memory_order_relaxed); }

  // Ticker::Observer
  void OnTimeAdvanced() override { Wakeup(); }
  // internal::ScheduledTaskHost
  void OnScheduledTaskCancelled(internal::ScheduledTask* task) override;

  Ticker* const ticker_;
  std::shared_ptr<ThreadFactory> thread_factory_;
  const size_t max_pending_tasks_;
  std::shared_ptr<RejectedExecutionHandler> rejected_handler_;

  // The lifecycle; changes under start_mu_ while kNotStarted, then by CAS.
  std::atomic<int> state_{static_cast<int>(ExecutorState::kNotStarted)};
  // The queue, whose admission_count() is the pending count plus kRejectBit (pending()).
  // Every admission is one fetch_add there, so after the loop sets the bit it knows
  // exactly how many accepted tasks are still to come.
  alignas(64) internal::TaskQueue queue_;
  std::atomic<uint64_t>& pending() { return queue_.admission_count(); }
  const std::atomic<uint64_t>& pending() const { return queue_.admission_count(); }
  // Loop-confined: tasks the loop submitted to itself (see the class comment).
  internal::LocalTaskRing local_ ABSL_GUARDED_BY(loop_affinity_);
  // local_.size() for PendingTasks(); single writer, relaxed.
  std::atomic<size_t> local_size_{0};
  // Loop-confined: whether the loop's own submissions may take the local ring. False
  // for a bounded queue (every task is counted), and from when kRejectBit is set (loop
  // submissions then take the checked path).
  bool local_open_ ABSL_GUARDED_BY(loop_affinity_) = max_pending_tasks_ == 0;

  // Timers from other threads (see the class comment); kClosedStack once shut down.
  alignas(64) std::atomic<internal::ScheduledTask*> incoming_timers_{nullptr};
  alignas(64) std::atomic<internal::ScheduledTask*> cancelled_timers_{nullptr};
  std::atomic<uint32_t> cancelled_count_{0};
  // The latest the loop sleeps until while sleeping_ is set (ticker nanos).
  std::atomic<int64_t> sleep_deadline_nanos_{INT64_MAX};

  // The loop thread's id, once it started. Relaxed loads suffice: a thread only ever
  // compares against its own id, which it stored itself if it is the loop.
  std::atomic<std::thread::id> thread_id_{};

  internal::Mutex start_mu_;
  std::unique_ptr<Thread> thread_ ABSL_GUARDED_BY(start_mu_);

  // Sleep / wake-up.
  // True while the loop is (about to be) blocked in Sleep(); seq_cst with the queue
  // tail (see TaskQueue::Push).
  alignas(64) std::atomic<bool> sleeping_{false};
  internal::Mutex wake_mu_;
  internal::CondVar wake_cv_;
  bool wake_pending_ ABSL_GUARDED_BY(wake_mu_) = false;

  // Shutdown parameters: written before the CAS to kShuttingDown (release), read by
  // the loop after its acquire load of the state; relaxed otherwise.
  std::atomic<int64_t> quiet_nanos_{0};
  std::atomic<int64_t> timeout_nanos_{0};
  // When ShutdownGracefully was called (ticker time; 0: Run() returned on its own).
  std::atomic<int64_t> requested_shutdown_nanos_{0};
  Promise<void> termination_;

  internal::Mutex hooks_mu_;
  std::vector<absl::AnyInvocable<void()>> hooks_ ABSL_GUARDED_BY(hooks_mu_);

  // Loop-confined state.
  internal::ScheduledTaskHeap heap_ ABSL_GUARDED_BY(loop_affinity_);
  uint64_t completed_local_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  int64_t last_execution_nanos_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  int64_t shutdown_start_nanos_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  bool shutdown_started_ ABSL_GUARDED_BY(loop_affinity_) = false;
  bool confirm_shutdown_called_ ABSL_GUARDED_BY(loop_affinity_) = false;
  // Set once RemoveObserver has been called (by ShutdownAndJoin or the destructor).
  std::atomic<bool> ticker_detached_{false};
  // True while Run() runs (HasPendingShutdownWork() is asked only then).
  bool in_run_ ABSL_GUARDED_BY(loop_affinity_) = false;

  // Statistics, single writer (the loop) and relaxed: snapshots need no ordering.
  std::atomic<uint64_t> completed_{0};
  std::atomic<int64_t> busy_nanos_{0};
  std::atomic<size_t> scheduled_count_{0};
  // CoarseMonotonicNanos() when the running task (or its stamp chunk) started; 0: idle.
  std::atomic<int64_t> task_started_nanos_{0};
  // Loop-confined: tasks left before BeforeTask() refreshes the stamp.
  int stamp_countdown_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  // CLOCK_MONOTONIC nanoseconds when the thread started; 0 before. Written once.
  std::atomic<int64_t> thread_start_nanos_{0};
  // Relaxed: a statistic, bumped by any rejecting thread.
  std::atomic<uint64_t> rejected_{0};
  // Relaxed: a statistic. The bytes of the loop thread's timer arena (its chunks, kept
  // for reuse) while the loop runs; written by the arena, 0 once the loop has ended.
  std::atomic<size_t> timer_memory_bytes_{0};

  mutable internal::Mutex info_mu_;
  std::string thread_name_ ABSL_GUARDED_BY(info_mu_);
  int os_tid_ ABSL_GUARDED_BY(info_mu_) = 0;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_SINGLE_THREAD_EVENT_EXECUTOR_H_
