#include "gyre/testing/embedded_event_loop.h"

#include <utility>

#include "gyre/concurrent/abstract_event_executor.h"
#include "gyre/concurrent/abstract_event_executor_group.h"

namespace gyre {
namespace testing {

absl::Status EmbeddedEventLoop::Execute(absl::AnyInvocable<void()> task) {
  if (!task) return internal::EmptyTaskError();
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return absl::FailedPreconditionError("embedded event loop is shut down");
  tasks_.push_back(std::move(task));
  return absl::OkStatus();
}

bool EmbeddedEventLoop::HasPendingTasks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !tasks_.empty();
}

int EmbeddedEventLoop::RunPendingTasks() {
  int ran = 0;
  for (;;) {
    absl::AnyInvocable<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (tasks_.empty()) return ran;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    AbstractEventExecutor::SafeExecute(task);  // a throwing task is logged, as on a real loop
    ++ran;
  }
}

Future<void> EmbeddedEventLoop::ShutdownGracefully(absl::Duration quiet_period,
                                                    absl::Duration timeout) {
  absl::Status valid = AbstractEventExecutorGroup::ValidateShutdownArguments(quiet_period, timeout);
  if (!valid.ok()) return MakeFailedFuture<void>(nullptr, std::move(valid));
  RunPendingTasks();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  termination_.TrySuccess();
  return termination_;
}

}  // namespace testing
}  // namespace gyre
