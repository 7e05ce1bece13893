// RejectedExecutionHandler and the built-in policies (RejectedExecutionHandlers): what a
// bounded executor does with a task that finds its queue full.
//
//   GroupOptions options;                     // executor_options.h
//   options.max_pending_tasks = 10000;        // bounded queues
//   options.rejected_handler = RejectedExecutionHandlers::BackoffAndRetry(3, absl::Milliseconds(1));
//
// Thread safety: handlers are called concurrently from any submitting thread, also the
// loop's own.
// Ownership: shared (std::shared_ptr) by the options and the executors built from them.
#ifndef GYRE_CONCURRENT_REJECTED_EXECUTION_HANDLERS_H_
#define GYRE_CONCURRENT_REJECTED_EXECUTION_HANDLERS_H_

#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gyre {

class SingleThreadEventExecutor;

// What a bounded executor does with a task that finds its queue full. Never called for
// an executor that is shut down (that is always FailedPrecondition).
//
// Thread safety: called concurrently from any submitting thread, also the loop's own.
class RejectedExecutionHandler {
 public:
  virtual ~RejectedExecutionHandler() = default;
  // Decides the fate of `task`: run it, hand it to `executor.TryExecute`, or leave it
  // and return a non-OK status (the caller then destroys it). Returning OK means the
  // task ran or was queued.
  virtual absl::Status Rejected(absl::AnyInvocable<void()>& task,
                                SingleThreadEventExecutor& executor) = 0;
};

// The built-in policies.
struct RejectedExecutionHandlers {
  // Rejects with ResourceExhausted (the default).
  static std::shared_ptr<RejectedExecutionHandler> Reject();
  // Runs the task on the submitting thread before Execute returns.
  static std::shared_ptr<RejectedExecutionHandler> RunInCaller();
  // Retries up to `retries` times, sleeping `backoff` before each try, then rejects with
  // ResourceExhausted. On the loop's own thread it rejects at once (waiting there could
  // never free space).
  static std::shared_ptr<RejectedExecutionHandler> BackoffAndRetry(int retries,
                                                                   absl::Duration backoff);
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_REJECTED_EXECUTION_HANDLERS_H_
