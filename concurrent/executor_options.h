// Options for standalone executors and for executor groups.
//
//   GroupOptions options;
//   options.name = "workers";                 // listed in the executor-group registry
//   options.max_pending_tasks = 10000;        // bounded queues
//   options.rejected_handler = RejectedExecutionHandlers::BackoffAndRetry(3, absl::Milliseconds(1));
//   auto group = DefaultEventExecutorGroup::Create(4, options);
//
// Thread safety: plain value types; the handlers they point to are thread-safe.
#ifndef GYRE_CONCURRENT_EXECUTOR_OPTIONS_H_
#define GYRE_CONCURRENT_EXECUTOR_OPTIONS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gyre {

class EventExecutorChooserFactory;
class SingleThreadEventExecutor;
class ThreadFactory;
class Ticker;

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

// A standalone executor (DefaultEventExecutor).
struct ExecutorOptions {
  // The thread pool name used for the default thread factory (empty: the class name).
  std::string name;
  // Where the thread comes from; null: a DefaultThreadFactory named after `name`.
  std::shared_ptr<ThreadFactory> thread_factory;
  // 0: unbounded queue; otherwise Execute beyond this many pending tasks goes to
  // `rejected_handler`.
  size_t max_pending_tasks = 0;
  // Null: RejectedExecutionHandlers::Reject().
  std::shared_ptr<RejectedExecutionHandler> rejected_handler;
  // Null: Ticker::System(). Not owned; must outlive the executor.
  Ticker* ticker = nullptr;
};

// A group (DefaultEventExecutorGroup, and event-loop groups).
struct GroupOptions {
  // The group's name in the executor-group registry (empty: not registered); also the
  // thread pool name when `thread_factory` is null.
  std::string name;
  // Shared by every child; null: one DefaultThreadFactory for the group.
  std::shared_ptr<ThreadFactory> thread_factory;
  // Null: DefaultEventExecutorChooserFactory::Instance(). Not owned; used during Create.
  EventExecutorChooserFactory* chooser_factory = nullptr;
  // Per child; see ExecutorOptions.
  size_t max_pending_tasks = 0;
  std::shared_ptr<RejectedExecutionHandler> rejected_handler;
  Ticker* ticker = nullptr;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EXECUTOR_OPTIONS_H_
