#include "gyre/concurrent/abstract_event_executor.h"

#include <time.h>

#include <exception>

#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

absl::Status AbstractEventExecutorGroup::ValidateShutdownArguments(absl::Duration quiet_period,
                                                                   absl::Duration timeout) {
  if (quiet_period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("quiet_period must be >= 0");
  }
  if (timeout < quiet_period) {
    return absl::InvalidArgumentError("timeout must be >= quiet_period");
  }
  return absl::OkStatus();
}

// Every task runs through here, so it catches directly: going through
// internal::CatchAsStatus (a status made and destroyed per task) cost W6 about 30
// instructions per task.
void AbstractEventExecutor::SafeExecute(absl::AnyInvocable<void()>& task) {
  try {
    task();
  } catch (const std::exception& e) {
    GYRE_LOG(WARNING) << "A task raised an exception: " << e.what();
  } catch (...) {
    GYRE_LOG(WARNING) << "A task raised a non-std exception";
  }
}

int64_t CoarseMonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  int64_t n = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  return n > 0 ? n : 1;
}

std::string_view ExecutorStateName(ExecutorState state) {
  switch (state) {
    case ExecutorState::kNotStarted:
      return "NOT_STARTED";
    case ExecutorState::kStarted:
      return "STARTED";
    case ExecutorState::kShuttingDown:
      return "SHUTTING_DOWN";
    case ExecutorState::kShutdown:
      return "SHUTDOWN";
    case ExecutorState::kTerminated:
      return "TERMINATED";
  }
  return "UNKNOWN";
}

}  // namespace gyre
