#include "gyre/concurrent/default_event_executor.h"

#include <utility>

#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

void DefaultEventExecutor::Run() {
  for (;;) {
    WaitForTasks();
    RunAllTasks();
    if (ConfirmShutdown()) break;
  }
}

absl::StatusOr<std::unique_ptr<DefaultEventExecutorGroup>> DefaultEventExecutorGroup::Create(
    int n_threads, GroupOptions options) {
  std::unique_ptr<DefaultEventExecutorGroup> group(
      new DefaultEventExecutorGroup(std::move(options)));
  GYRE_RETURN_IF_ERROR(group->Init(n_threads));
  return group;
}

absl::StatusOr<std::unique_ptr<EventExecutor>> DefaultEventExecutorGroup::NewChild(int index) {
  ExecutorOptions child;
  child.name = options().name;
  child.thread_factory = thread_factory();
  child.max_pending_tasks = options().max_pending_tasks;
  child.rejected_handler = options().rejected_handler;
  child.ticker = options().ticker;
  return std::unique_ptr<EventExecutor>(new DefaultEventExecutor(this, std::move(child)));
}

}  // namespace gyre
