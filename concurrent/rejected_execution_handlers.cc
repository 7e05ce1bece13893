#include "gyre/concurrent/rejected_execution_handlers.h"

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "gyre/concurrent/single_thread_event_executor.h"

namespace gyre {
namespace {

absl::Status QueueFull() { return absl::ResourceExhaustedError("executor queue is full"); }

class RejectHandler final : public RejectedExecutionHandler {
 public:
  absl::Status Rejected(absl::AnyInvocable<void()>& task, SingleThreadEventExecutor&) override {
    return QueueFull();
  }
};

class RunInCallerHandler final : public RejectedExecutionHandler {
 public:
  absl::Status Rejected(absl::AnyInvocable<void()>& task, SingleThreadEventExecutor&) override {
    AbstractEventExecutor::SafeExecute(task);
    task = nullptr;
    return absl::OkStatus();
  }
};

class BackoffHandler final : public RejectedExecutionHandler {
 public:
  BackoffHandler(int retries, absl::Duration backoff) : retries_(retries), backoff_(backoff) {}
  absl::Status Rejected(absl::AnyInvocable<void()>& task,
                        SingleThreadEventExecutor& executor) override {
    if (executor.InEventLoop()) return QueueFull();
    for (int i = 0; i < retries_; ++i) {
      absl::SleepFor(backoff_);
      absl::Status s = executor.TryExecute(task);
      if (s.ok() || s.code() != absl::StatusCode::kResourceExhausted) return s;
    }
    return QueueFull();
  }

 private:
  const int retries_;
  const absl::Duration backoff_;
};

}  // namespace

std::shared_ptr<RejectedExecutionHandler> RejectedExecutionHandlers::Reject() {
  static auto* const handler = new std::shared_ptr<RejectedExecutionHandler>(
      std::make_shared<RejectHandler>());
  return *handler;
}

std::shared_ptr<RejectedExecutionHandler> RejectedExecutionHandlers::RunInCaller() {
  return std::make_shared<RunInCallerHandler>();
}

std::shared_ptr<RejectedExecutionHandler> RejectedExecutionHandlers::BackoffAndRetry(
    int retries, absl::Duration backoff) {
  return std::make_shared<BackoffHandler>(retries < 0 ? 0 : retries, backoff);
}

}  // namespace gyre
