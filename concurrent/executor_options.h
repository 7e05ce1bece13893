// Options for standalone executors and for executor groups. The rejected-execution
// handlers they name live in rejected_execution_handlers.h, included here.
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

#include "gyre/concurrent/rejected_execution_handlers.h"

namespace gyre {

class EventExecutorChooserFactory;
class ThreadFactory;
class Ticker;

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
