// NioEventLoopGroup: a fixed set of NioEventLoops; channels are spread over them
// round-robin.
//
//   absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> group = NioEventLoopGroup::Create(4);
//   if (!group.ok()) return group.status();
//   (*group)->SetIoRatio(70).IgnoreError();
//   EventLoop* loop = (*group)->Next();
//
// Thread safety: every method is thread-safe.
// Ownership: owns its loops; destroying the group shuts them down and joins them.
#ifndef GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_GROUP_H_
#define GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_GROUP_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/channel/multithread_event_loop_group.h"
#include "gyre/transport/nio/nio_event_loop.h"

namespace gyre {

class NioEventLoopGroup final : public MultithreadEventLoopGroup {
 public:
  // `n_threads` loops (0: twice the hardware concurrency). InvalidArgument when
  // n_threads < 0; a loop's creation error otherwise.
  static absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> Create(int n_threads = 0,
                                                                   GroupOptions options = {});
  ~NioEventLoopGroup() override;

  // Sets every loop's I/O ratio (see NioEventLoop::SetIoRatio); InvalidArgument outside
  // 1..100, and then no loop changes.
  absl::Status SetIoRatio(int ratio);
  // Rebuilds every loop's epoll instance; the future fails with the first error.
  Future<void> RebuildSelectors();

  std::string_view GroupKind() const override { return "nio"; }

  // The loops, in creation order.
  std::vector<NioEventLoop*> loops() const;

 protected:
  absl::StatusOr<std::unique_ptr<SingleThreadEventLoop>> NewEventLoop(
      int index, ExecutorOptions options) override;

 private:
  explicit NioEventLoopGroup(GroupOptions options) : MultithreadEventLoopGroup(std::move(options)) {}
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_GROUP_H_
