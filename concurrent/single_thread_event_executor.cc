#include "gyre/concurrent/single_thread_event_executor.h"

#include "gyre/concurrent/internal/future_core.h"

#include <time.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/fast_thread_local.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/status_macros.h"
#include "gyre/concurrent/internal/timer_arena.h"

namespace gyre {
namespace {

// CLOCK_MONOTONIC in nanoseconds: for stamps taken once (thread start), not per task.
int64_t PreciseMonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

namespace {

constexpr int kNotStarted = static_cast<int>(ExecutorState::kNotStarted);
constexpr int kStarted = static_cast<int>(ExecutorState::kStarted);
constexpr int kShuttingDown = static_cast<int>(ExecutorState::kShuttingDown);
constexpr int kShutdown = static_cast<int>(ExecutorState::kShutdown);
constexpr int kTerminated = static_cast<int>(ExecutorState::kTerminated);

int64_t RealNanos() { return Ticker::System()->Nanos(); }

// Marks a cross-thread timer stack as closed (kShutdown reached).
internal::ScheduledTask* const kClosedStack =
    reinterpret_cast<internal::ScheduledTask*>(uintptr_t{1});

absl::Status ShutDownError() {
  return absl::FailedPreconditionError("executor is shut down; task rejected");
}

}  // namespace

SingleThreadEventExecutor::SingleThreadEventExecutor(EventExecutorGroup* parent,
                                                     ExecutorOptions options)
    : AbstractEventExecutor(parent),
      ticker_(options.ticker != nullptr ? options.ticker : Ticker::System()),
      thread_factory_(options.thread_factory != nullptr
                          ? std::move(options.thread_factory)
                          : std::make_shared<DefaultThreadFactory>(
                                options.name.empty() ? ToPoolName("DefaultEventExecutor")
                                                     : options.name)),
      max_pending_tasks_(options.max_pending_tasks),
      rejected_handler_(options.rejected_handler != nullptr ? std::move(options.rejected_handler)
                                                            : RejectedExecutionHandlers::Reject()),
      termination_() {
  ticker_->AddObserver(this);
}

SingleThreadEventExecutor::~SingleThreadEventExecutor() {
  ShutdownAndJoin();
  DetachFromTicker();
}

void SingleThreadEventExecutor::DetachFromTicker() {
  if (ticker_detached_.exchange(true, std::memory_order_acq_rel)) return;
  // The ticker's RemoveObserver waits for an Advance that is notifying observers, so no
  // OnTimeAdvanced() -> OnWakeupRequested() runs on this executor after it returns.
  ticker_->RemoveObserver(this);
}

bool SingleThreadEventExecutor::InEventLoop(std::thread::id thread) const {
  return thread == thread_id_.load(std::memory_order_relaxed);
}

absl::Status SingleThreadEventExecutor::Execute(absl::AnyInvocable<void()> task) {
  if (ABSL_PREDICT_FALSE(!task)) return internal::EmptyTaskError();
  if (TryPushLocal(std::move(task))) return absl::OkStatus();  // moved only if pushed
  return Offer(task, /*wake=*/true, Admission::kNormal);
}

absl::Status SingleThreadEventExecutor::TryExecute(absl::AnyInvocable<void()>& task) {
  if (ABSL_PREDICT_FALSE(!task)) return internal::EmptyTaskError();
  if (TryPushLocal(std::move(task))) return absl::OkStatus();  // moved only if pushed
  return Offer(task, /*wake=*/true, Admission::kNoHandler);
}

absl::Status SingleThreadEventExecutor::LazyExecute(absl::AnyInvocable<void()> task) {
  if (ABSL_PREDICT_FALSE(!task)) return internal::EmptyTaskError();
  if (TryPushLocal(std::move(task))) return absl::OkStatus();  // moved only if pushed
  return Offer(task, /*wake=*/false, Admission::kNormal);
}

absl::Status SingleThreadEventExecutor::Offer(absl::AnyInvocable<void()>& task, bool wake,
                                              Admission admission) {
  // The shared queue; each caller tried the local ring first (TryPushLocal).
  if (ABSL_PREDICT_FALSE(state_.load(std::memory_order_acquire) == kNotStarted)) {
    absl::Status started = StartOrCountRejection();
    if (!started.ok()) return started;
  }
  // acq_rel: the admission is ordered against the loop's fetch_or of kRejectBit (any
  // order of RMWs on one atomic is total; either we see the bit or the loop counts us).
  // A bounded queue admits with a compare-and-swap, so a task refused as "full" never
  // shows in the count, not even for an instant: the loop's final drain reads the count
  // once and waits for exactly that many tasks.
  const bool bounded = max_pending_tasks_ != 0 && admission != Admission::kInternal;
  uint64_t old;
  bool full = false;
  if (ABSL_PREDICT_TRUE(!bounded)) {
    old = pending().fetch_add(1, std::memory_order_acq_rel);
  } else {
    old = pending().load(std::memory_order_acquire);
    for (;;) {
      if ((old & kRejectBit) != 0) break;
      if ((old & kCountMask) >= max_pending_tasks_) {
        full = true;
        break;
      }
      if (pending().compare_exchange_weak(old, old + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
        break;
      }
    }
  }
  if (ABSL_PREDICT_FALSE((old & kRejectBit) != 0)) {
    if (!bounded) pending().fetch_sub(1, std::memory_order_relaxed);
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return ShutDownError();
  }
  if (ABSL_PREDICT_FALSE(full)) {
    if (admission == Admission::kNormal) {
      absl::Status handled = rejected_handler_->Rejected(task, *this);
      if (!handled.ok()) rejected_.fetch_add(1, std::memory_order_relaxed);
      return handled;
    }
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("executor queue is full (", max_pending_tasks_, " pending tasks)"));
  }
  queue_.Push(queue_.NewNode(std::move(task)));
  if (wake) WakeIfSleeping();
  return absl::OkStatus();
}

absl::Status SingleThreadEventExecutor::StartOrCountRejection() {
  absl::Status started = EnsureStarted();
  if (!started.ok()) rejected_.fetch_add(1, std::memory_order_relaxed);
  return started;
}

absl::Status SingleThreadEventExecutor::EnsureStarted() {
  internal::MutexLock lock(&start_mu_);
  if (state_.load(std::memory_order_acquire) != kNotStarted) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<Thread>> thread =
      thread_factory_->NewThread([this] { ThreadMain(); });
  if (!thread.ok()) {
    return absl::Status(thread.status().code(),
                        absl::StrCat("cannot start executor thread: ", thread.status().message()));
  }
  thread_ = *std::move(thread);
  // Release: publishes thread_ and the start to readers of the state.
  int expected = kNotStarted;
  state_.compare_exchange_strong(expected, kStarted, std::memory_order_acq_rel);
  return absl::OkStatus();
}

void SingleThreadEventExecutor::WakeIfSleeping() {
  // seq_cst load after the seq_cst exchange in Push: see TaskQueue::Push. Only the
  // producer that flips the flag pays for the mutex and the signal.
  if (sleeping_.load(std::memory_order_seq_cst) &&
      sleeping_.exchange(false, std::memory_order_seq_cst)) {
    {
      internal::MutexLock lock(&wake_mu_);
      wake_pending_ = true;
      wake_cv_.Signal();
    }
    OnWakeupRequested();
  }
}

void SingleThreadEventExecutor::Wakeup() {
  {
    internal::MutexLock lock(&wake_mu_);
    wake_pending_ = true;
    wake_cv_.Signal();
  }
  OnWakeupRequested();
}

bool SingleThreadEventExecutor::BeginBlockingWait() {
  // seq_cst store, then the seq_cst load of the tail inside MaybeNonEmpty: the same
  // Dekker pair as Sleep(), so a producer either is seen here or sees the flag.
  PublishSleepDeadline();
  sleeping_.store(true, std::memory_order_seq_cst);
  if (HasTasks()) {
    // Relaxed: only this thread sets it true; producers may race it to false harmlessly.
    sleeping_.store(false, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void SingleThreadEventExecutor::EndBlockingWait() {
  // Relaxed: as in Sleep(); a producer that still sees true only wakes us once more.
  sleeping_.store(false, std::memory_order_relaxed);
}

int64_t SingleThreadEventExecutor::NanosUntilNextScheduledTask() const {
  int64_t deadline = heap_.PeekDeadline();
  if (deadline == INT64_MAX) return INT64_MAX;
  int64_t left = deadline - NanosNow();
  return left > 0 ? left : 0;
}

void SingleThreadEventExecutor::Sleep(int64_t timeout_nanos) {
  internal::MutexLock lock(&wake_mu_);
  if (wake_pending_) {
    wake_pending_ = false;
    return;
  }
  // seq_cst store, then a seq_cst load of the tail: a producer that pushed before this
  // store is seen here; one that pushes after sees the flag and signals under wake_mu_.
  PublishSleepDeadline();
  sleeping_.store(true, std::memory_order_seq_cst);
  if (!HasTasks()) {
    absl::Duration timeout =
        timeout_nanos == INT64_MAX ? absl::InfiniteDuration() : absl::Nanoseconds(timeout_nanos);
    if (!wake_pending_) wake_cv_.WaitWithTimeout(&wake_mu_, timeout);
  }
  wake_pending_ = false;
  // Relaxed: only this thread sets it true; producers may race it to false harmlessly.
  sleeping_.store(false, std::memory_order_relaxed);
}

void SingleThreadEventExecutor::WaitForTasks() {
  if (HasTasks()) return;
  int64_t timeout = INT64_MAX;
  if (int64_t deadline = heap_.PeekDeadline(); deadline != INT64_MAX) {
    int64_t now = NanosNow();
    if (deadline <= now) return;
    timeout = deadline - now;
  }
  if (IsShuttingDown()) return;
  FlushAccounting();
  // Spin briefly before sleeping: a task that arrives within a few microseconds (a
  // request/response exchange between loops) then costs no futex round trip. Bounded,
  // so an idle loop does not burn its core.
  for (int i = 0; i < kSpinsBeforeSleep; ++i) {
    if (HasTasks()) return;
    internal::TaskQueue::CpuRelax();
  }
  Sleep(timeout);
}

absl::AnyInvocable<void()> SingleThreadEventExecutor::TakeTask() {
  ClearTaskStamp();  // the task returned last time has finished
  for (int pass = 0; pass < 2; ++pass) {
    AbsorbTimers();
    if (heap_.PeekDeadline() <= NanosNow()) {
      return [this] {
        loop_affinity_.AssertOnLoop();  // TakeTask's caller runs it on the loop
        StampBatchStart();
        RunDueScheduled(NanosNow());
      };
    }
    if (!local_.empty()) {
      absl::AnyInvocable<void()> task = local_.Pop();
      // Relaxed single-writer statistic.
      local_size_.store(local_.size(), std::memory_order_relaxed);
      ++completed_local_;
      StampBatchStart();
      return task;
    }
    if (internal::TaskNode* node = queue_.Pop()) {
      AbsorbTimers();  // timers queued before this task: as in RunAllTasks()
      // Relaxed: as in RunAllTasks().
      pending().fetch_sub(1, std::memory_order_relaxed);
      ++completed_local_;
      absl::AnyInvocable<void()> task = std::move(node->fn);
      node->fn = nullptr;
      StampBatchStart();
      return task;
    }
    if (pass == 0) WaitForTasks();
  }
  return nullptr;
}

void SingleThreadEventExecutor::RunNode(internal::TaskNode* node) {
  BeforeTask();
  AbstractEventExecutor::SafeExecute(node->fn);
  node->fn = nullptr;  // the captures die here, on the loop thread
}

size_t SingleThreadEventExecutor::RunLocal(size_t max) {
  size_t n = 0;
  while (n < max && !local_.empty()) {
    // Run where it lies: the ring keeps the slot (and its array) until it returns.
    local_.RunFront([this](absl::AnyInvocable<void()>& task) {
      loop_affinity_.AssertOnLoop();  // RunLocal's caller holds it
      // Relaxed single-writer statistic.
      local_size_.store(local_.size(), std::memory_order_relaxed);
      BeforeTask();
      AbstractEventExecutor::SafeExecute(task);
    });
    ++n;
  }
  return n;
}

bool SingleThreadEventExecutor::RunDueScheduled(int64_t now, int64_t deadline) {
  bool ran = false;
  size_t since_check = 0;
  while (heap_.PeekDeadline() <= now) {
    // Within a timed batch due timers count as tasks (B121: Netty moves them into its
    // task queue first): the clock is read before every kTasksPerDeadlineCheck-th, and
    // the rest wait in the heap for the next batch, after the loop's next I/O pass.
    if (deadline != INT64_MAX && ++since_check > kTasksPerDeadlineCheck) {
      if (NanosNow() >= deadline) break;
      since_check = 1;
    }
    internal::ScheduledTaskRef task = heap_.Pop();
    if (task->IsTaskDone()) {  // cancelled from another thread; its removal is queued
      task->DestroyBody();
      continue;
    }
    BeforeTask();
    bool again = task->RunOnLoop();
    ran = true;
    ++completed_local_;
    if (again && !IsShutdown()) {
      int64_t period = task->period_nanos();
      int64_t base = task->kind() == internal::ScheduledTask::Kind::kFixedRate
                         ? task->deadline_nanos()
                         : NanosNow();
      task->set_deadline_nanos(period > INT64_MAX - base ? INT64_MAX : base + period);
      heap_.Push(std::move(task));
    } else {
      if (again) task->CancelDetached();
      task->DestroyBody();
    }
  }
  PublishScheduledCount();
  return ran;
}

bool SingleThreadEventExecutor::RunAllTasks() { return RunTasksWithin(std::nullopt); }

bool SingleThreadEventExecutor::RunAllTasks(absl::Duration timeout) {
  return RunTasksWithin(timeout);
}

bool SingleThreadEventExecutor::RunTasksWithin(std::optional<absl::Duration> budget) {
  // Nothing queued, no timer kept or handed over: a loop calls this after every I/O
  // batch, mostly with nothing to run; then it reads no clock and stamps nothing (the
  // full path below would run nothing, and leave the same state). Relaxed peeks at the
  // timer stacks, as in AbsorbTimers; the queue's acquire load as in CountReady.
  if (local_.empty() && heap_.empty() &&
      incoming_timers_.load(std::memory_order_relaxed) == nullptr &&
      cancelled_timers_.load(std::memory_order_relaxed) == nullptr && queue_.NoVisibleNodes()) {
    return false;
  }
  // One clock read serves the deadline, the due timers and (with the system ticker) the
  // busy-time start: a loop calls this after every I/O batch.
  const int64_t now = NanosNow();
  const int64_t start = ticker_ == Ticker::System() ? now : RealNanos();
  const bool timed = budget.has_value();
  const int64_t deadline = timed ? internal::DeadlineNanos(now, *budget) : INT64_MAX;
  StampBatchStart();
  AbsorbTimers();
  // Timed, the due timers stop at the deadline too; the queued tasks below still get
  // their first round, so neither kind starves the other.
  bool ran = RunDueScheduled(now, deadline);
  // Count the batch out of pending() before running it, so a running (maybe blocking)
  // task no longer occupies a slot of a bounded queue.
  // Untimed, tasks queued by the batch itself (a task resubmitting itself) join it, up to
  // kMaxBatch, so the clock is read once per batch rather than once per task. Timed, each
  // round runs at most kTasksPerDeadlineCheck tasks from the two queues together, with
  // one clock read after it (B121). The local ring runs first: everything in it was
  // queued before anything now visible in the shared queue (see Offer).
  const size_t limit = timed ? SIZE_MAX : kMaxBatch;
  const size_t chunk = timed ? kTasksPerDeadlineCheck : kMaxBatch;
  size_t total = 0;
  while (total < limit) {
    const size_t ran_local = RunLocal(std::min(chunk, limit - total));
    total += ran_local;
    if (total >= limit) break;
    // The shared queue's share of this round: what the local ring left of it.
    const size_t quota = std::min(timed ? chunk - ran_local : chunk, limit - total);
    const size_t n = quota == 0 ? 0 : queue_.CountReady(quota);
    if (n != 0) {
      // Timers scheduled or cancelled before these tasks were queued must be in the heap
      // when they run (Schedule then Execute keeps its order, as a single queue would):
      // CountReady's acquire loads made those pushes visible; two relaxed peeks per batch.
      AbsorbTimers();
      // Relaxed: the count is only compared, never used to publish data.
      pending().fetch_sub(n, std::memory_order_relaxed);
      for (size_t i = 0; i < n; ++i) RunNode(queue_.Pop());
      total += n;
    } else if (timed ? ran_local == 0 : local_.empty()) {
      // Drained. A timed round that ran local tasks looks at both queues once more
      // (within its deadline), for tasks queued meanwhile.
      break;
    }
    if (timed && NanosNow() >= deadline) break;
  }
  queue_.FlushRetired();
  if (total != 0) {
    completed_local_ += total;
    ran = true;
  }
  FlushAccounting();
  ClearTaskStamp();
  if (ran) {
    last_execution_nanos_ = NanosNow();
    AddBusy(RealNanos() - start);
  }
  return ran;
}

void SingleThreadEventExecutor::FlushAccounting() {
  // Relaxed single-writer statistic.
  completed_.store(completed_local_, std::memory_order_relaxed);
}

void SingleThreadEventExecutor::AddBusy(int64_t nanos) {
  // Relaxed single-writer statistic.
  busy_nanos_.store(busy_nanos_.load(std::memory_order_relaxed) + nanos,
                    std::memory_order_relaxed);
}

void SingleThreadEventExecutor::AbsorbTimers() {
  // Relaxed peeks: an empty stack costs no RMW. Incoming first, so a timer cancelled
  // before it reached the heap is dropped there.
  if (incoming_timers_.load(std::memory_order_relaxed) != nullptr) {
    internal::ScheduledTask* chain = incoming_timers_.load(std::memory_order_relaxed);
    if (chain != kClosedStack) {
      // Acquire: pairs with the pushers' release CAS (their links and fields).
      AbsorbIncoming(incoming_timers_.exchange(nullptr, std::memory_order_acquire));
    }
  }
  if (cancelled_timers_.load(std::memory_order_relaxed) != nullptr &&
      cancelled_timers_.load(std::memory_order_relaxed) != kClosedStack) {
    // Relaxed: a wake-up pacing counter; reset before the take so no cancellation
    // pushed after it is forgotten by the next threshold.
    cancelled_count_.store(0, std::memory_order_relaxed);
    AbsorbCancelled(cancelled_timers_.exchange(nullptr, std::memory_order_acquire));
  }
}

void SingleThreadEventExecutor::AbsorbIncoming(internal::ScheduledTask* chain) {
  // The stack is LIFO; reverse it so timers from one thread keep their order.
  internal::ScheduledTask* fifo = nullptr;
  while (chain != nullptr) {
    internal::ScheduledTask* next = chain->incoming_next;
    chain->incoming_next = fifo;
    fifo = chain;
    chain = next;
  }
  while (fifo != nullptr) {
    internal::ScheduledTaskRef task(fifo);
    fifo = fifo->incoming_next;
    task->incoming_next = nullptr;
    if (task->IsTaskDone()) {  // cancelled before it reached the heap
      task->DestroyBody();
      continue;
    }
    heap_.Push(std::move(task));
  }
  PublishScheduledCount();
}

void SingleThreadEventExecutor::AbsorbCancelled(internal::ScheduledTask* chain) {
  // A timer in the wheel is unlinked in O(1), touching only its two neighbours. For
  // those in the binary heap, many at once (a mass cancellation) are cheaper as one
  // O(h) rebuild of the heap than as O(log h) removals that each touch ~log h others.
  size_t in_heap = 0;
  for (internal::ScheduledTask* t = chain; t != nullptr; t = t->cancelled_next) {
    if (heap_.InHeap(t)) ++in_heap;
  }
  if (in_heap != 0 && in_heap * 8 >= heap_.heap_size()) heap_.RemoveDoneFromHeap();
  while (chain != nullptr) {
    internal::ScheduledTaskRef ref(chain);  // the canceller's reference
    chain = chain->cancelled_next;
    ref->cancelled_next = nullptr;
    internal::ScheduledTaskRef removed = heap_.Remove(ref.get());
    if (removed) removed->DestroyBody();
  }
  PublishScheduledCount();
}

void SingleThreadEventExecutor::CloseTimerStacks() {
  // Acquire: as in AbsorbTimers. After this, pushers see kClosedStack and back off.
  internal::ScheduledTask* incoming = incoming_timers_.exchange(kClosedStack, std::memory_order_acquire);
  if (incoming != kClosedStack) AbsorbIncoming(incoming);
  internal::ScheduledTask* cancelled =
      cancelled_timers_.exchange(kClosedStack, std::memory_order_acquire);
  if (cancelled != kClosedStack) AbsorbCancelled(cancelled);
}

void SingleThreadEventExecutor::CancelScheduledTasks() {
  AbsorbTimers();
  if (heap_.empty()) return;
  std::vector<internal::ScheduledTaskRef> doomed;
  doomed.reserve(heap_.size());
  while (!heap_.empty()) doomed.push_back(heap_.Pop());
  PublishScheduledCount();
  for (auto& task : doomed) {
    task->CancelDetached();  // listeners may run here, outside any gyre lock
    task->DestroyBody();
  }
}

bool SingleThreadEventExecutor::RunShutdownHooks() {
  bool ran = false;
  for (;;) {
    std::vector<absl::AnyInvocable<void()>> hooks;
    {
      internal::MutexLock lock(&hooks_mu_);
      hooks.swap(hooks_);
    }
    if (hooks.empty()) return ran;
    for (auto& hook : hooks) {
      AbstractEventExecutor::SafeExecute(hook);
      hook = nullptr;
    }
    ran = true;
  }
}

absl::Status SingleThreadEventExecutor::AddShutdownHook(absl::AnyInvocable<void()> hook) {
  {
    internal::MutexLock lock(&hooks_mu_);
    if (!IsShutdown()) {
      hooks_.push_back(std::move(hook));
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError("executor is shut down; shutdown hook rejected");
}

bool SingleThreadEventExecutor::ConfirmShutdown() {
  if (!IsShuttingDown()) return false;
  GYRE_DCHECK(InEventLoop()) << "ConfirmShutdown must be called from the loop thread";
  confirm_shutdown_called_ = true;
  CancelScheduledTasks();
  if (!shutdown_started_) {
    shutdown_started_ = true;
    // Relaxed: written before the state transition we acquired.
    shutdown_start_nanos_ = requested_shutdown_nanos_.load(std::memory_order_relaxed);
    if (shutdown_start_nanos_ == 0) shutdown_start_nanos_ = NanosNow();
    // The quiet period starts with the shutdown (or with a later task run).
    last_execution_nanos_ = std::max(last_execution_nanos_, shutdown_start_nanos_);
  }
  int64_t quiet = quiet_nanos_.load(std::memory_order_relaxed);
  bool ran_tasks = RunAllTasks();
  // Shutdown hooks run later, in ThreadMain, once the state is kShutdown (new tasks,
  // including ones a hook submits, are rejected there).
  // The subclass's own shutdown work (an event loop's draining channels) holds the
  // executor up to the timeout; it does its own waiting, so no sleep here.
  if (in_run_ && !IsShutdown() && NanosUntilShutdownTimeout() > 0 && HasPendingShutdownWork()) {
    return false;
  }
  int64_t timeout = timeout_nanos_.load(std::memory_order_relaxed);
  if (ran_tasks) {
    // A task run restarts the quiet period, but never the hard timeout: an executor fed
    // without pause still shuts down once the timeout has passed.
    return IsShutdown() || quiet == 0 || NanosNow() - shutdown_start_nanos_ >= timeout;
  }
  int64_t now = NanosNow();
  if (IsShutdown() || now - shutdown_start_nanos_ >= timeout || quiet == 0) return true;
  int64_t quiet_left = quiet - (now - last_execution_nanos_);
  if (quiet_left > 0) {
    Sleep(std::min(quiet_left, timeout - (now - shutdown_start_nanos_)));
    return false;
  }
  return true;
}

int64_t SingleThreadEventExecutor::NanosUntilShutdownTimeout() const {
  if (!IsShuttingDown()) return INT64_MAX;
  // Relaxed: written before the state transition we acquired in IsShuttingDown().
  int64_t limit = timeout_nanos_.load(std::memory_order_relaxed);
  if (limit == INT64_MAX) return INT64_MAX;
  int64_t start = shutdown_started_ ? shutdown_start_nanos_
                                    : requested_shutdown_nanos_.load(std::memory_order_relaxed);
  int64_t now = NanosNow();
  if (start == 0) start = now;  // as ConfirmShutdown() will take it on its first call
  int64_t elapsed = now - start;
  return elapsed >= limit ? 0 : limit - elapsed;
}

Future<void> SingleThreadEventExecutor::ShutdownGracefully(absl::Duration quiet_period,
                                                           absl::Duration timeout) {
  absl::Status valid = ValidateShutdownArguments(quiet_period, timeout);
  if (!valid.ok()) return MakeFailedFuture<void>(nullptr, std::move(valid));
  if (IsShuttingDown()) return termination_;
  int64_t quiet = absl::ToInt64Nanoseconds(quiet_period);
  int64_t limit = timeout == absl::InfiniteDuration() ? INT64_MAX : absl::ToInt64Nanoseconds(timeout);
  bool terminate_here = false;
  {
    internal::MutexLock lock(&start_mu_);
    int s = state_.load(std::memory_order_acquire);
    if (s >= kShuttingDown) return termination_;
    // Relaxed: published by the state transition's release below.
    quiet_nanos_.store(quiet, std::memory_order_relaxed);
    timeout_nanos_.store(limit, std::memory_order_relaxed);
    requested_shutdown_nanos_.store(NanosNow(), std::memory_order_relaxed);
    if (s == kNotStarted) {
      // No thread, so (tasks start the thread first) nothing queued and no timers.
      pending().fetch_or(kRejectBit, std::memory_order_acq_rel);
      state_.store(kShutdown, std::memory_order_release);
      terminate_here = true;
    } else {
      while (s < kShuttingDown &&
             !state_.compare_exchange_weak(s, kShuttingDown, std::memory_order_acq_rel)) {
      }
    }
  }
  if (terminate_here) {
    // No loop thread will ever run: refuse timers from now on, and cancel any that a
    // racing Schedule pushed before the stacks closed. This thread has the loop's
    // state to itself.
    loop_affinity_.AssumeExclusive();
    CloseTimerStacks();
    CancelScheduledTasks();
    RunShutdownHooks();
    state_.store(kTerminated, std::memory_order_release);
    termination_.TrySuccess();
    return termination_;
  }
  Wakeup();
  return termination_;
}

bool SingleThreadEventExecutor::AwaitTermination(absl::Duration timeout) {
  if (IsTerminated()) return true;
  if (InEventLoop()) return false;
  termination_.AwaitFor(timeout);
  return IsTerminated();
}

void SingleThreadEventExecutor::ShutdownAndJoin() {
  if (!IsShuttingDown()) {
    ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15));
  } else if (!IsTerminated()) {
    // Already shutting down, maybe with a long quiet period: end it now.
    quiet_nanos_.store(0, std::memory_order_relaxed);
    Wakeup();
  }
  std::unique_ptr<Thread> thread;
  {
    internal::MutexLock lock(&start_mu_);
    thread = std::move(thread_);
  }
  if (thread != nullptr) {
    // From a termination listener the thread has finished its work and only unwinds:
    // detaching it is the expected end. Anywhere else it is a caller's bug.
    if (InEventLoop() && !IsTerminated()) {
      GYRE_LOG(ERROR) << "an executor was destroyed on its own thread; detaching it";
    }
    thread->Join();  // detaches when called on the thread itself
  }
  // Subclasses call this from their destructor before they release their wake-up
  // primitive (an event loop's eventfd): stop the ticker's wake-ups first.
  DetachFromTicker();
}

void SingleThreadEventExecutor::ThreadMain() {
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  loop_affinity_.AssertOnLoop();
  // Lets promise completion on this thread skip the virtual InEventLoop() call.
  internal::tls_current_executor = this;
#if GYRE_TIMER_ARENA
  // The timers this thread schedules live in an arena it owns while it runs.
  internal::TimerArena* const timer_arena = internal::TimerArena::Create(&timer_memory_bytes_);
  internal::tls_timer_arena = timer_arena;
#endif
  {
    internal::MutexLock lock(&info_mu_);
    thread_name_ = internal::CurrentThreadName();
    os_tid_ = internal::CurrentOsThreadId();
  }
  thread_start_nanos_.store(PreciseMonotonicNanos(), std::memory_order_relaxed);
  in_run_ = true;
  absl::Status run_status = internal::CatchAsStatus("Run()", [this] {
    loop_affinity_.AssertOnLoop();
    Run();
  });
  in_run_ = false;
  if (!run_status.ok()) GYRE_LOG(ERROR) << "an executor's " << run_status.message();
  int s = state_.load(std::memory_order_acquire);
  while (s < kShuttingDown &&
         !state_.compare_exchange_weak(s, kShuttingDown, std::memory_order_acq_rel)) {
  }
  if (!confirm_shutdown_called_ && run_status.ok()) {
    GYRE_LOG(ERROR) << "Buggy executor: Run() returned without ConfirmShutdown() returning "
                       "true; shutting down";
  }
  while (!ConfirmShutdown()) {
  }

  // kShutdown: from here on every admission sees the bit. The count says how many
  // accepted tasks are still to be taken, including ones whose push is in flight.
  FlushAccounting();
  uint64_t remaining = pending().fetch_or(kRejectBit, std::memory_order_acq_rel) & kCountMask;
  local_open_ = false;  // from here on, loop submissions meet the bit too
  s = state_.load(std::memory_order_acquire);
  while (s < kShutdown &&
         !state_.compare_exchange_weak(s, kShutdown, std::memory_order_acq_rel)) {
  }
  CloseTimerStacks();
  // The local ring first: it holds tasks queued before any now in the shared queue.
  StampBatchStart();
  completed_local_ += RunLocal(SIZE_MAX);
  while (remaining > 0) {
    internal::TaskNode* node = queue_.Pop();
    if (node == nullptr) {
      std::this_thread::yield();  // a producer is between its admission and its push
      // Defensive: never wait for more than the count still says is owed (an admission
      // that backed out after the bit was set is not a task).
      remaining = std::min<uint64_t>(remaining, pending().load(std::memory_order_acquire) &
                                                    kCountMask);
      continue;
    }
    pending().fetch_sub(1, std::memory_order_relaxed);
    RunNode(node);
    --remaining;
    ++completed_local_;
  }
  queue_.FlushRetired();
  FlushAccounting();
  ClearTaskStamp();
  RunShutdownHooks();
  CancelScheduledTasks();
  absl::Status cleanup = internal::CatchAsStatus("Cleanup()", [this] {
    loop_affinity_.AssertOnLoop();
    Cleanup();
  });
  if (!cleanup.ok()) GYRE_LOG(ERROR) << "an executor's " << cleanup.message();
  if (queue_.MaybeNonEmpty() || !local_.empty()) {
    GYRE_LOG(WARNING) << "an executor terminated with a non-empty task queue";
  }
  // B120: the thread's FastThreadLocal values die after Cleanup() and before the
  // termination is announced, as in Netty: a value holding a resource is gone once
  // TerminationFuture() completes, whatever ThreadFactory made the thread.
  FastThreadLocalRemoveAll();
#if GYRE_TIMER_ARENA
  // No more timers from this thread's arena; it goes once its last timer does (a
  // handle may outlive the loop).
  internal::tls_timer_arena = nullptr;
  timer_arena->Orphan();
#endif
  // Completed through a local handle: a termination listener may destroy this executor
  // (and with it the member), so nothing here touches `this` after the completion.
  Promise<void> termination = termination_;
  state_.store(kTerminated, std::memory_order_release);
  if (run_status.ok()) {
    termination.TrySuccess();
  } else {
    termination.TryFailure(run_status);
  }
}

absl::Status SingleThreadEventExecutor::ScheduleTask(internal::ScheduledTaskRef& task) {
  // The loop's own schedule is the common case, pushed inline; the other paths are out
  // of line.
  if (ABSL_PREDICT_FALSE(internal::tls_current_executor !=
                         static_cast<const EventExecutor*>(this))) {
    return ScheduleTaskFromOutside(task);
  }
  loop_affinity_.AssertOnLoop();
  if (ABSL_PREDICT_FALSE(IsShutdown())) return RejectScheduleOnLoop();
  task->set_host(this);
  heap_.Push(std::move(task));
  PublishScheduledCount();
  return absl::OkStatus();
}

absl::Status SingleThreadEventExecutor::RejectScheduleOnLoop() {
  rejected_.fetch_add(1, std::memory_order_relaxed);
  return ShutDownError();
}

absl::Status SingleThreadEventExecutor::ScheduleTaskFromOutside(internal::ScheduledTaskRef& task) {
  if (ABSL_PREDICT_FALSE(state_.load(std::memory_order_acquire) == kNotStarted)) {
    absl::Status started = StartOrCountRejection();
    if (!started.ok()) return started;
  }
  task->set_host(this);
  internal::ScheduledTask* t = task.get();
  const int64_t deadline = t->deadline_nanos();
  internal::ScheduledTask* head = incoming_timers_.load(std::memory_order_relaxed);
  do {
    if (head == kClosedStack) {
      t->set_host(nullptr);
      // Relaxed: a statistic.
      rejected_.fetch_add(1, std::memory_order_relaxed);
      return ShutDownError();  // `task` keeps (and drops) the executor's reference
    }
    t->incoming_next = head;
    // seq_cst on success: the Dekker pair with the loop's sleeping_ store (see Sleep);
    // it also releases the task's fields to the loop's acquire exchange.
  } while (!incoming_timers_.compare_exchange_weak(head, t, std::memory_order_seq_cst,
                                                   std::memory_order_relaxed));
  task.release();  // the stack owns the executor's reference now
  // Wake the loop only if it sleeps past this deadline. Relaxed deadline load: ordered
  // after the seq_cst load of sleeping_ that saw the loop's announcement.
  if (sleeping_.load(std::memory_order_seq_cst) &&
      deadline < sleep_deadline_nanos_.load(std::memory_order_relaxed)) {
    WakeIfSleeping();
  }
  return absl::OkStatus();
}

void SingleThreadEventExecutor::OnScheduledTaskCancelled(internal::ScheduledTask* task) {
  if (internal::tls_current_executor == static_cast<const EventExecutor*>(this)) {
    loop_affinity_.AssertOnLoop();
    internal::ScheduledTaskRef removed = heap_.Remove(task);
    if (removed) {
      removed->DestroyBody();
      PublishScheduledCount();
    }
    return;
  }
  task->Ref();  // the stack's reference
  internal::ScheduledTask* head = cancelled_timers_.load(std::memory_order_relaxed);
  do {
    if (head == kClosedStack) {  // terminated: the heap was cleared already
      task->Unref();
      return;
    }
    task->cancelled_next = head;
    // Release: the loop's acquire exchange sees the link.
  } while (!cancelled_timers_.compare_exchange_weak(head, task, std::memory_order_release,
                                                    std::memory_order_relaxed));
  // Not waking the loop for each: a cancelled timer has nothing to do but be freed. Once
  // kCancelWakeBatch of them wait, a sleeping loop is woken (and a loop about to sleep
  // sees the count in HasTasks()). seq_cst: that Dekker pair with sleeping_.
  if (cancelled_count_.fetch_add(1, std::memory_order_seq_cst) + 1 == kCancelWakeBatch) {
    WakeIfSleeping();
  }
}

size_t SingleThreadEventExecutor::PendingTasks() const {
  return static_cast<size_t>(pending().load(std::memory_order_relaxed) & kCountMask) +
         local_size_.load(std::memory_order_relaxed);
}

size_t SingleThreadEventExecutor::ScheduledTaskCount() const {
  return scheduled_count_.load(std::memory_order_relaxed);
}

ExecutorSnapshot SingleThreadEventExecutor::Snapshot() const {
  ExecutorSnapshot s;
  s.state = state();
  {
    internal::MutexLock lock(&info_mu_);
    s.thread_name = thread_name_;
    s.os_tid = os_tid_;
  }
  s.pending_tasks = PendingTasks();
  s.scheduled_tasks = ScheduledTaskCount();
  s.completed_tasks = completed_.load(std::memory_order_relaxed);
  s.rejected_tasks = rejected_.load(std::memory_order_relaxed);
  s.timer_memory_bytes = timer_memory_bytes_.load(std::memory_order_relaxed);
  s.busy_time = absl::Nanoseconds(busy_nanos_.load(std::memory_order_relaxed));
  // Relaxed: statistics. The stamp is read last so its age is measured from now.
  int64_t started = thread_start_nanos_.load(std::memory_order_relaxed);
  int64_t task_started = task_started_nanos_.load(std::memory_order_relaxed);
  int64_t now = CoarseMonotonicNanos();
  // Uptime on the precise clock (the coarse one can show no time passed for
  // milliseconds); the running-task stamp is coarse, so its age is too.
  if (started != 0) {
    s.uptime = absl::Nanoseconds(std::max<int64_t>(1, PreciseMonotonicNanos() - started));
  }
  if (task_started != 0) {
    s.running_task = true;
    s.running_task_age = absl::Nanoseconds(std::max<int64_t>(0, now - task_started));
  }
  return s;
}

}  // namespace gyre
