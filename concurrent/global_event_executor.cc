#include "gyre/concurrent/global_event_executor.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gyre {

GlobalEventExecutor* GlobalEventExecutor::Instance() {
  static GlobalEventExecutor* const instance = [] {
    auto* g = new GlobalEventExecutor(Ticker::System(), absl::Seconds(1));
    g->detach_workers_ = true;
    return g;
  }();
  return instance;
}

GlobalEventExecutor::GlobalEventExecutor(Ticker* ticker, absl::Duration quiet_period)
    : AbstractUnstoppableEventExecutor("GlobalEventExecutor cannot be shut down"),
      ticker_(ticker != nullptr ? ticker : Ticker::System()),
      quiet_nanos_(absl::ToInt64Nanoseconds(quiet_period)),
      factory_(ToPoolName("GlobalEventExecutor")) {
  ticker_->AddObserver(this);
}

GlobalEventExecutor::~GlobalEventExecutor() {
  std::unique_ptr<Thread> thread;
  {
    internal::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
    thread = std::move(thread_);
  }
  if (thread != nullptr) thread->Join();
  ticker_->RemoveObserver(this);
  std::vector<internal::ScheduledTaskRef> doomed;
  {
    internal::MutexLock lock(&mu_);
    while (!heap_.empty()) doomed.push_back(heap_.Pop());
  }
  for (auto& t : doomed) {
    t->CancelDetached();
    t->DestroyBody();
  }
}

bool GlobalEventExecutor::InEventLoop(std::thread::id thread) const {
  return thread == worker_id_.load(std::memory_order_relaxed);
}

absl::Status GlobalEventExecutor::StartLocked() {
  if (running_) return absl::OkStatus();
  std::unique_ptr<Thread> previous = std::move(thread_);
  absl::StatusOr<std::unique_ptr<Thread>> thread = factory_.NewThread([this] { Worker(); });
  if (!thread.ok()) {
    thread_ = std::move(previous);
    return thread.status();
  }
  running_ = true;
  ++threads_started_;
  thread_ = *std::move(thread);
  if (detach_workers_) {
    thread_->Detach();
    thread_ = nullptr;
  }
  // The previous worker has left its loop (running_ was false); it only has to return.
  if (previous != nullptr) previous->Join();
  return absl::OkStatus();
}

template <typename Add>
absl::Status GlobalEventExecutor::StartAndAdd(Add add) {
  internal::MutexLock lock(&mu_);
  absl::Status started = StartLocked();
  if (!started.ok()) return started;
  add();
  cv_.Signal();
  return absl::OkStatus();
}

absl::Status GlobalEventExecutor::Execute(absl::AnyInvocable<void()> task) {
  if (!task) return internal::EmptyTaskError();
  return StartAndAdd([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    queue_.push_back(std::move(task));
  });
}

absl::Status GlobalEventExecutor::ScheduleTask(internal::ScheduledTaskRef& task) {
  task->set_host(this);
  return StartAndAdd([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { heap_.Push(std::move(task)); });
}

void GlobalEventExecutor::OnTimeAdvanced() {
  internal::MutexLock lock(&mu_);
  wake_ = true;
  cv_.SignalAll();
}

void GlobalEventExecutor::OnScheduledTaskCancelled(internal::ScheduledTask* task) {
  internal::ScheduledTaskRef removed;
  {
    internal::MutexLock lock(&mu_);
    removed = heap_.Remove(task);
  }
  if (removed) removed->DestroyBody();  // user destructors run outside the lock
}

void GlobalEventExecutor::Worker() {
  worker_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  int64_t idle_since = ticker_->Nanos();
  for (;;) {
    absl::AnyInvocable<void()> task;
    internal::ScheduledTaskRef due;
    {
      internal::MutexLock lock(&mu_);
      for (;;) {
        if (stopping_) {
          running_ = false;
          worker_id_.store(std::thread::id(), std::memory_order_relaxed);
          idle_cv_.SignalAll();
          return;
        }
        int64_t now = ticker_->Nanos();
        if (!heap_.empty() && heap_.Peek()->deadline_nanos() <= now) {
          due = heap_.Pop();
          break;
        }
        if (!queue_.empty()) {
          task = std::move(queue_.front());
          queue_.pop_front();
          break;
        }
        if (heap_.empty() && now - idle_since >= quiet_nanos_) {
          running_ = false;  // a later Execute starts a new worker
          worker_id_.store(std::thread::id(), std::memory_order_relaxed);
          idle_cv_.SignalAll();
          return;
        }
        int64_t wait = heap_.empty() ? quiet_nanos_ - (now - idle_since)
                                     : heap_.Peek()->deadline_nanos() - now;
        if (!heap_.empty() && quiet_nanos_ - (now - idle_since) < wait) {
          wait = std::max<int64_t>(wait, 0);
        }
        if (!wake_) {
          cv_.WaitWithTimeout(&mu_, wait == INT64_MAX ? absl::InfiniteDuration()
                                                      : absl::Nanoseconds(wait));
        }
        wake_ = false;
      }
    }
    if (due) {
      if (due->RunOnLoop()) {
        int64_t period = due->period_nanos();
        int64_t base = due->kind() == internal::ScheduledTask::Kind::kFixedRate
                           ? due->deadline_nanos()
                           : ticker_->Nanos();
        due->set_deadline_nanos(period > INT64_MAX - base ? INT64_MAX : base + period);
        internal::MutexLock lock(&mu_);
        heap_.Push(std::move(due));
      } else {
        due->DestroyBody();
      }
    } else {
      SafeExecute(task);
      task = nullptr;
    }
    idle_since = ticker_->Nanos();
  }
}

bool GlobalEventExecutor::AwaitInactivity(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  internal::MutexLock lock(&mu_);
  while (running_) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    idle_cv_.WaitWithTimeout(&mu_, left);
  }
  return !running_;
}

int GlobalEventExecutor::ThreadsStarted() const {
  internal::MutexLock lock(&mu_);
  return threads_started_;
}

size_t GlobalEventExecutor::PendingTasks() const {
  internal::MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace gyre
