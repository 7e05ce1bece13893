#include "gyre/transport/nio/nio_event_loop_group.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> NioEventLoopGroup::Create(
    int n_threads, GroupOptions options) {
  if (n_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("n_threads must be >= 0, got ", n_threads));
  }
  if (n_threads == 0) {
    unsigned hw = std::thread::hardware_concurrency();
    n_threads = 2 * static_cast<int>(hw == 0 ? 1 : hw);
  }
  std::unique_ptr<NioEventLoopGroup> group(new NioEventLoopGroup(std::move(options)));
  GYRE_RETURN_IF_ERROR(group->Init(n_threads));
  return group;
}

NioEventLoopGroup::~NioEventLoopGroup() = default;

absl::StatusOr<std::unique_ptr<EventExecutor>> NioEventLoopGroup::NewChild(int index) {
  ExecutorOptions child;
  child.name = options().name.empty() ? "nio" : options().name;
  child.thread_factory = thread_factory();
  child.max_pending_tasks = options().max_pending_tasks;
  child.rejected_handler = options().rejected_handler;
  child.ticker = options().ticker;
  GYRE_ASSIGN_OR_RETURN(std::unique_ptr<NioEventLoop> loop,
                        NioEventLoop::Create(this, std::move(child)));
  loops_.push_back(loop.get());
  return std::unique_ptr<EventExecutor>(std::move(loop));
}

EventLoop* NioEventLoopGroup::NextEventLoop() {
  // Every child is a NioEventLoop (NewChild makes nothing else); EventExecutor is a
  // virtual base, so the way down is dynamic_cast.
  return dynamic_cast<NioEventLoop*>(MultithreadEventExecutorGroup::NextExecutor());
}

absl::Status NioEventLoopGroup::SetIoRatio(int ratio) {
  if (ratio < 1 || ratio > 100) {
    return absl::InvalidArgumentError(absl::StrCat("io ratio must be in 1..100, got ", ratio));
  }
  for (NioEventLoop* loop : loops_) GYRE_RETURN_IF_ERROR(loop->SetIoRatio(ratio));
  return absl::OkStatus();
}

Future<void> NioEventLoopGroup::RebuildSelectors() {
  std::vector<Future<void>> all;
  for (NioEventLoop* loop : loops_) all.push_back(loop->RebuildSelector());
  Promise<void> done(nullptr);
  auto left = std::make_shared<std::atomic<size_t>>(all.size());
  if (all.empty()) done.TrySuccess();
  for (Future<void>& f : all) {
    f.AddListener([done, left](const Future<void>& r) mutable {
      if (!r.IsSuccess()) done.TryFailure(r.Cause());
      // acq_rel: the last listener sees the others' completions.
      if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) done.TrySuccess();
    });
  }
  return done;
}

}  // namespace gyre
