#include "gyre/concurrent/thread_per_task_executor.h"

#include <utility>

#include "gyre/concurrent/event_executor_group.h"

namespace gyre {

ThreadPerTaskExecutor::ThreadPerTaskExecutor(ThreadFactory* factory) : factory_(factory) {}

ThreadPerTaskExecutor::~ThreadPerTaskExecutor() { JoinAll(); }

absl::Status ThreadPerTaskExecutor::Execute(absl::AnyInvocable<void()> task) {
  if (factory_ == nullptr) return absl::InvalidArgumentError("ThreadPerTaskExecutor needs a factory");
  if (!task) return internal::EmptyTaskError();
  absl::StatusOr<std::unique_ptr<Thread>> thread = factory_->NewThread(std::move(task));
  if (!thread.ok()) return thread.status();
  internal::MutexLock lock(&mu_);
  threads_.push_back(*std::move(thread));
  return absl::OkStatus();
}

void ThreadPerTaskExecutor::JoinAll() {
  std::vector<std::unique_ptr<Thread>> threads;
  {
    internal::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t->Join();
}

}  // namespace gyre
