#include "gyre/testing/embedded_event_loop.h"

#include <utility>

namespace gyre {
namespace testing {

absl::Status EmbeddedEventLoop::Execute(absl::AnyInvocable<void()> task) {
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
    task();
    ++ran;
  }
}

Future<void> EmbeddedEventLoop::ShutdownGracefully(absl::Duration quiet_period,
                                                    absl::Duration timeout) {
  if (quiet_period < absl::ZeroDuration() || timeout < absl::ZeroDuration() ||
      quiet_period > timeout) {
    return MakeFailedFuture<void>(
        nullptr, absl::InvalidArgumentError("need 0 <= quiet_period <= timeout"));
  }
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
