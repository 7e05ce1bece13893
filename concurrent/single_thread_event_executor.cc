#include "gyre/concurrent/single_thread_event_executor.h"

#include "gyre/concurrent/internal/future_core.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace {

constexpr int kNotStarted = static_cast<int>(ExecutorState::kNotStarted);
constexpr int kStarted = static_cast<int>(ExecutorState::kStarted);
constexpr int kShuttingDown = static_cast<int>(ExecutorState::kShuttingDown);
constexpr int kShutdown = static_cast<int>(ExecutorState::kShutdown);
constexpr int kTerminated = static_cast<int>(ExecutorState::kTerminated);

int64_t RealNanos() { return Ticker::System()->Nanos(); }

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
  ticker_->RemoveObserver(this);
}

bool SingleThreadEventExecutor::InEventLoop(std::thread::id thread) const {
  return thread == thread_id_.load(std::memory_order_relaxed);
}

absl::Status SingleThreadEventExecutor::Execute(absl::AnyInvocable<void()> task) {
  return Offer(task, /*wake=*/true, Admission::kNormal);
}

absl::Status SingleThreadEventExecutor::TryExecute(absl::AnyInvocable<void()>& task) {
  return Offer(task, /*wake=*/true, Admission::kNoHandler);
}

absl::Status SingleThreadEventExecutor::LazyExecute(absl::AnyInvocable<void()> task) {
  return Offer(task, /*wake=*/false, Admission::kNormal);
}

absl::Status SingleThreadEventExecutor::Offer(absl::AnyInvocable<void()>& task, bool wake,
                                              Admission admission) {
  if (ABSL_PREDICT_FALSE(state_.load(std::memory_order_acquire) == kNotStarted)) {
    absl::Status started = EnsureStarted();
    if (!started.ok()) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      return started;
    }
  }
  // acq_rel: the admission is ordered against the loop's fetch_or of kRejectBit (any
  // order of RMWs on one atomic is total; either we see the bit or the loop counts us).
  uint64_t old = pending_.fetch_add(1, std::memory_order_acq_rel);
  if (ABSL_PREDICT_FALSE((old & kRejectBit) != 0)) {
    pending_.fetch_sub(1, std::memory_order_relaxed);
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return ShutDownError();
  }
  if (max_pending_tasks_ != 0 && admission != Admission::kInternal &&
      (old & kCountMask) >= max_pending_tasks_) {
    pending_.fetch_sub(1, std::memory_order_relaxed);
    if (admission == Admission::kNormal) {
      absl::Status handled = rejected_handler_->Rejected(task, *this);
      if (!handled.ok()) rejected_.fetch_add(1, std::memory_order_relaxed);
      return handled;
    }
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("executor queue is full (", max_pending_tasks_, " pending tasks)"));
  }
  queue_.Push(new internal::TaskNode(std::move(task)));
  if (wake) WakeIfSleeping();
  return absl::OkStatus();
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
  sleeping_.store(true, std::memory_order_seq_cst);
  if (queue_.MaybeNonEmpty()) {
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
  const internal::ScheduledTask* next = heap_.Peek();
  if (next == nullptr) return INT64_MAX;
  int64_t left = next->deadline_nanos() - NanosNow();
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
  sleeping_.store(true, std::memory_order_seq_cst);
  if (!queue_.MaybeNonEmpty()) {
    absl::Duration timeout =
        timeout_nanos == INT64_MAX ? absl::InfiniteDuration() : absl::Nanoseconds(timeout_nanos);
    if (!wake_pending_) wake_cv_.WaitWithTimeout(&wake_mu_, timeout);
  }
  wake_pending_ = false;
  // Relaxed: only this thread sets it true; producers may race it to false harmlessly.
  sleeping_.store(false, std::memory_order_relaxed);
}

void SingleThreadEventExecutor::WaitForTasks() {
  if (queue_.MaybeNonEmpty()) return;
  int64_t timeout = INT64_MAX;
  if (internal::ScheduledTask* next = heap_.Peek()) {
    int64_t now = NanosNow();
    if (next->deadline_nanos() <= now) return;
    timeout = next->deadline_nanos() - now;
  }
  if (IsShuttingDown()) return;
  FlushAccounting();
  // Spin briefly before sleeping: a task that arrives within a few microseconds (a
  // request/response exchange between loops) then costs no futex round trip. Bounded,
  // so an idle loop does not burn its core.
  for (int i = 0; i < kSpinsBeforeSleep; ++i) {
    if (queue_.MaybeNonEmpty()) return;
    internal::TaskQueue::CpuRelax();
  }
  Sleep(timeout);
}

absl::AnyInvocable<void()> SingleThreadEventExecutor::TakeTask() {
  for (int pass = 0; pass < 2; ++pass) {
    if (internal::ScheduledTask* next = heap_.Peek();
        next != nullptr && next->deadline_nanos() <= NanosNow()) {
      return [this] { RunDueScheduled(NanosNow()); };
    }
    if (internal::TaskNode* node = queue_.Pop()) {
      // Relaxed: as in RunAllTasks().
      pending_.fetch_sub(1, std::memory_order_relaxed);
      ++completed_local_;
      absl::AnyInvocable<void()> task = std::move(node->fn);
      node->fn = nullptr;
      return task;
    }
    if (pass == 0) WaitForTasks();
  }
  return nullptr;
}

void SingleThreadEventExecutor::RunNode(internal::TaskNode* node) {
  AbstractEventExecutor::SafeExecute(node->fn);
  node->fn = nullptr;  // the captures die here, on the loop thread
}

bool SingleThreadEventExecutor::RunDueScheduled(int64_t now) {
  bool ran = false;
  while (internal::ScheduledTask* next = heap_.Peek()) {
    if (next->deadline_nanos() > now) break;
    internal::ScheduledTaskRef task = heap_.Pop();
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

bool SingleThreadEventExecutor::RunAllTasks() {
  int64_t start = RealNanos();
  bool ran = RunDueScheduled(NanosNow());
  // Count the batch out of pending_ before running it, so a running (maybe blocking)
  // task no longer occupies a slot of a bounded queue.
  // Tasks queued by the batch itself (a task resubmitting itself) join it, up to
  // kMaxBatch, so the clock is read once per batch rather than once per task.
  size_t total = 0;
  while (total < kMaxBatch) {
    size_t n = queue_.CountReady(kMaxBatch - total);
    if (n == 0) break;
    // Relaxed: the count is only compared, never used to publish data.
    pending_.fetch_sub(n, std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i) RunNode(queue_.Pop());
    total += n;
  }
  if (total != 0) {
    completed_local_ += total;
    ran = true;
  }
  FlushAccounting();
  if (ran) {
    last_execution_nanos_ = NanosNow();
    AddBusy(RealNanos() - start);
  }
  return ran;
}

bool SingleThreadEventExecutor::RunAllTasks(absl::Duration timeout) {
  int64_t start = RealNanos();
  int64_t deadline = internal::DeadlineNanos(NanosNow(), timeout);
  bool ran = RunDueScheduled(NanosNow());
  size_t total = 0;
  for (;;) {
    size_t n = queue_.CountReady(64);
    if (n == 0) break;
    // Relaxed: as in RunAllTasks().
    pending_.fetch_sub(n, std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i) RunNode(queue_.Pop());
    total += n;
    if (NanosNow() >= deadline) break;
  }
  if (total != 0) {
    completed_local_ += total;
    ran = true;
  }
  FlushAccounting();
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

void SingleThreadEventExecutor::CancelScheduledTasks() {
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
  bool ran_hooks = RunShutdownHooks();
  if (ran_tasks || ran_hooks) {
    if (IsShutdown() || quiet == 0) return true;
    return false;
  }
  int64_t now = NanosNow();
  int64_t timeout = timeout_nanos_.load(std::memory_order_relaxed);
  if (IsShutdown() || now - shutdown_start_nanos_ >= timeout || quiet == 0) return true;
  int64_t quiet_left = quiet - (now - last_execution_nanos_);
  if (quiet_left > 0) {
    Sleep(std::min(quiet_left, timeout - (now - shutdown_start_nanos_)));
    return false;
  }
  return true;
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
      pending_.fetch_or(kRejectBit, std::memory_order_acq_rel);
      state_.store(kShutdown, std::memory_order_release);
      terminate_here = true;
    } else {
      while (s < kShuttingDown &&
             !state_.compare_exchange_weak(s, kShuttingDown, std::memory_order_acq_rel)) {
      }
    }
  }
  if (terminate_here) {
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
  if (thread == nullptr) return;
  if (InEventLoop()) {
    GYRE_LOG(ERROR) << "an executor was destroyed on its own thread; detaching it";
  }
  thread->Join();  // detaches when called on the thread itself
}

void SingleThreadEventExecutor::ThreadMain() {
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  // Lets promise completion on this thread skip the virtual InEventLoop() call.
  internal::tls_current_executor = this;
  {
    internal::MutexLock lock(&info_mu_);
    thread_name_ = internal::CurrentThreadName();
    os_tid_ = internal::CurrentOsThreadId();
  }
  absl::Status run_status;
  try {
    Run();
  } catch (const std::exception& e) {
    GYRE_LOG(ERROR) << "an executor's Run() threw: " << e.what();
    run_status = absl::InternalError(absl::StrCat("Run() threw: ", e.what()));
  } catch (...) {
    GYRE_LOG(ERROR) << "an executor's Run() threw a non-std exception";
    run_status = absl::InternalError("Run() threw a non-std exception");
  }
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
  uint64_t remaining = pending_.fetch_or(kRejectBit, std::memory_order_acq_rel) & kCountMask;
  s = state_.load(std::memory_order_acquire);
  while (s < kShutdown &&
         !state_.compare_exchange_weak(s, kShutdown, std::memory_order_acq_rel)) {
  }
  while (remaining > 0) {
    internal::TaskNode* node = queue_.Pop();
    if (node == nullptr) {
      std::this_thread::yield();  // a producer is between its admission and its push
      continue;
    }
    pending_.fetch_sub(1, std::memory_order_relaxed);
    RunNode(node);
    --remaining;
    ++completed_local_;
  }
  FlushAccounting();
  RunShutdownHooks();
  CancelScheduledTasks();
  try {
    Cleanup();
  } catch (const std::exception& e) {
    GYRE_LOG(ERROR) << "an executor's Cleanup() threw: " << e.what();
  } catch (...) {
    GYRE_LOG(ERROR) << "an executor's Cleanup() threw a non-std exception";
  }
  if (queue_.MaybeNonEmpty()) {
    GYRE_LOG(WARNING) << "an executor terminated with a non-empty task queue";
  }
  state_.store(kTerminated, std::memory_order_release);
  if (run_status.ok()) {
    termination_.TrySuccess();
  } else {
    termination_.TryFailure(run_status);
  }
}

absl::Status SingleThreadEventExecutor::ScheduleTask(internal::ScheduledTaskRef& task) {
  if (InEventLoop()) {
    if (IsShutdown()) return ShutDownError();
    task->set_host(this);
    heap_.Push(std::move(task));
    PublishScheduledCount();
    return absl::OkStatus();
  }
  task->set_host(this);
  absl::AnyInvocable<void()> add = [this, t = std::move(task)]() mutable {
    if (t->IsTaskDone()) {  // cancelled before it reached the heap
      t->DestroyBody();
      return;
    }
    heap_.Push(std::move(t));
    PublishScheduledCount();
  };
  return Offer(add, /*wake=*/true, Admission::kNoHandler);  // refused: `add` drops the ref
}

void SingleThreadEventExecutor::OnScheduledTaskCancelled(internal::ScheduledTask* task) {
  if (InEventLoop()) {
    internal::ScheduledTaskRef removed = heap_.Remove(task);
    if (removed) {
      removed->DestroyBody();
      PublishScheduledCount();
    }
    return;
  }
  task->Ref();
  absl::AnyInvocable<void()> remove = [this, t = internal::ScheduledTaskRef(task)]() mutable {
    internal::ScheduledTaskRef removed = heap_.Remove(t.get());
    if (removed) {
      removed->DestroyBody();
      PublishScheduledCount();
    }
  };
  // Not waking the loop: a cancelled timer has nothing to do but be freed. Refused
  // (shut down): termination cancels the heap anyway.
  Offer(remove, /*wake=*/false, Admission::kInternal).IgnoreError();
}

size_t SingleThreadEventExecutor::PendingTasks() const {
  return static_cast<size_t>(pending_.load(std::memory_order_relaxed) & kCountMask);
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
  s.busy_time = absl::Nanoseconds(busy_nanos_.load(std::memory_order_relaxed));
  return s;
}

}  // namespace gyre
