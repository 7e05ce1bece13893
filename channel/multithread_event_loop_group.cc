#include "gyre/channel/multithread_event_loop_group.h"

#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

int MultithreadEventLoopGroup::DefaultLoopCount() {
  unsigned hw = std::thread::hardware_concurrency();
  return 2 * static_cast<int>(hw == 0 ? 1 : hw);
}

MultithreadEventLoopGroup::~MultithreadEventLoopGroup() = default;

absl::Status MultithreadEventLoopGroup::InitLoops(int n_threads) {
  if (n_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("n_threads must be >= 0, got ", n_threads));
  }
  absl::Status s = Init(n_threads == 0 ? DefaultLoopCount() : n_threads);
  if (!s.ok()) loops_.clear();
  return s;
}

absl::StatusOr<std::unique_ptr<EventExecutor>> MultithreadEventLoopGroup::NewChild(int index) {
  ExecutorOptions child;
  child.name = options().name.empty() ? std::string(GroupKind()) : options().name;
  child.thread_factory = thread_factory();
  child.max_pending_tasks = options().max_pending_tasks;
  child.rejected_handler = options().rejected_handler;
  child.ticker = options().ticker;
  GYRE_ASSIGN_OR_RETURN(std::unique_ptr<SingleThreadEventLoop> loop,
                        NewEventLoop(index, std::move(child)));
  if (loop == nullptr) return absl::InternalError("NewEventLoop returned null");
  loops_.push_back(loop.get());
  return std::unique_ptr<EventExecutor>(std::move(loop));
}

EventLoop* MultithreadEventLoopGroup::NextEventLoop() {
  // Every child is a SingleThreadEventLoop (NewChild makes nothing else); EventExecutor
  // is a virtual base, so the way down is dynamic_cast.
  return dynamic_cast<SingleThreadEventLoop*>(MultithreadEventExecutorGroup::NextExecutor());
}

}  // namespace gyre
