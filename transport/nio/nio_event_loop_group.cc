#include "gyre/transport/nio/nio_event_loop_group.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> NioEventLoopGroup::Create(
    int n_threads, GroupOptions options) {
  std::unique_ptr<NioEventLoopGroup> group(new NioEventLoopGroup(std::move(options)));
  GYRE_RETURN_IF_ERROR(group->InitLoops(n_threads));
  return group;
}

NioEventLoopGroup::~NioEventLoopGroup() = default;

absl::StatusOr<std::unique_ptr<SingleThreadEventLoop>> NioEventLoopGroup::NewEventLoop(
    int index, ExecutorOptions options) {
  (void)index;
  GYRE_ASSIGN_OR_RETURN(std::unique_ptr<NioEventLoop> loop,
                        NioEventLoop::Create(this, std::move(options)));
  return std::unique_ptr<SingleThreadEventLoop>(std::move(loop));
}

std::vector<NioEventLoop*> NioEventLoopGroup::loops() const {
  std::vector<NioEventLoop*> loops;
  loops.reserve(event_loops().size());
  // NewEventLoop makes every loop of this group.
  for (SingleThreadEventLoop* loop : event_loops()) loops.push_back(static_cast<NioEventLoop*>(loop));
  return loops;
}

absl::Status NioEventLoopGroup::SetIoRatio(int ratio) {
  if (ratio < 1 || ratio > 100) {
    return absl::InvalidArgumentError(absl::StrCat("io ratio must be in 1..100, got ", ratio));
  }
  for (NioEventLoop* loop : loops()) GYRE_RETURN_IF_ERROR(loop->SetIoRatio(ratio));
  return absl::OkStatus();
}

Future<void> NioEventLoopGroup::RebuildSelectors() {
  std::vector<Future<void>> all;
  for (NioEventLoop* loop : loops()) all.push_back(loop->RebuildSelector());
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
