// OioEventLoopGroup: the blocking (OIO) transport's group: every registered channel
// gets a ThreadPerChannelEventLoop of its own, with its own thread, for its whole life.
//
//   absl::StatusOr<std::unique_ptr<OioEventLoopGroup>> group =
//       OioEventLoopGroup::Create(/*max_channels=*/1000);
//   if (!group.ok()) return group.status();
//   ServerBootstrap server;
//   server.Group(group->get()).Channel<OioServerSocketChannel>().ChildHandler(handler);
//
// Register(channel) makes a fresh loop and registers the channel with it. With a
// channel cap (max_channels > 0), a registration beyond it fails its future with
// ResourceExhausted and the channel is left unregistered (the bootstraps close it);
// a slot frees when a channel's loop terminates, i.e. just after the channel closes or
// deregisters. Next() also makes a fresh loop (its first Register takes a slot);
// Execute / Submit on the group itself are refused with Unimplemented, as Netty's
// ThreadPerChannelEventLoopGroup refuses next(): run tasks on a channel's loop.
//
// Shutdown: ShutdownGracefully shuts every live loop down (closing their channels),
// refuses new registrations with FailedPrecondition, and the termination future
// completes once every loop has terminated. Terminated loops are freed on a later
// registration (or with the group) once no channel refers to them any more.
//
// The group is not listed in the executor-group registry.
//
// See docs/transport.md.
//
// Thread safety: every method is thread-safe.
// Ownership: owns its loops (shared with their channels); destroying the group shuts
// every loop down and joins its thread. It must outlive its channels' use.
#ifndef GYRE_TRANSPORT_OIO_OIO_EVENT_LOOP_GROUP_H_
#define GYRE_TRANSPORT_OIO_OIO_EVENT_LOOP_GROUP_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/thread_factory.h"
#include "gyre/transport/oio/thread_per_channel_event_loop.h"

namespace gyre {

class OioEventLoopGroup final : public EventLoopGroup {
 public:
  // A group allowing at most `max_channels` registered channels at a time (0: no
  // cap). InvalidArgument when max_channels < 0.
  static absl::StatusOr<std::unique_ptr<OioEventLoopGroup>> Create(int max_channels = 0,
                                                                   GroupOptions options = {});
  ~OioEventLoopGroup() override;

  // A fresh loop (see the file comment). If it cannot be made (no fds left) the
  // error is logged and a loop that refuses everything with FailedPrecondition is
  // returned, never null.
  EventLoop* Next() { return NextEventLoop(); }
  EventLoop* NextEventLoop() override;
  EventExecutor* NextExecutor() override { return NextEventLoop(); }
  // The loops that have not terminated yet. A pointer stays valid while its loop has
  // not terminated (and after, while a channel refers to it).
  std::vector<EventExecutor*> executors() const override;

  // Registers `channel` with a fresh loop. The future fails with InvalidArgument for a
  // null channel, ResourceExhausted beyond the channel cap, FailedPrecondition once
  // shutting down, and with the errno status if the loop cannot be made.
  ChannelFuture Register(std::shared_ptr<Channel> channel) override;

  // Unimplemented: a thread-per-channel group has no loop to pick for a bare task.
  absl::Status Execute(absl::AnyInvocable<void()> task) override;

  using EventExecutorGroup::ShutdownGracefully;
  Future<void> ShutdownGracefully(absl::Duration quiet_period, absl::Duration timeout) override;
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override {
    // Acquire: pairs with the release store in ShutdownGracefully.
    return shutting_down_.load(std::memory_order_acquire);
  }
  bool IsShutdown() const override;
  bool IsTerminated() const override { return termination_.IsDone(); }
  bool AwaitTermination(absl::Duration timeout) override;

  // The cap (0: none) and the channels registered now (holding a slot).
  int max_channels() const { return max_channels_; }
  int ActiveChannels() const {
    // Relaxed: a statistic.
    return active_.load(std::memory_order_relaxed);
  }

  // For ThreadPerChannelEventLoop::Register: takes a channel slot. ResourceExhausted
  // at the cap, FailedPrecondition when shutting down.
  absl::Status AcquireSlot();
  // Gives a slot back (the loop's shutdown hook calls it, once per slot).
  void ReleaseSlot();

 private:
  OioEventLoopGroup(int max_channels, GroupOptions options);
  absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> NewLoop();
  void OnLoopTerminated(ThreadPerChannelEventLoop* loop);
  // Completes termination_ if shutting down and no loop is live (outside mu_).
  void MaybeTerminate();

  const int max_channels_;
  const GroupOptions options_;
  std::shared_ptr<ThreadFactory> thread_factory_;
  // A loop that was shut down at creation: what Next() returns when a loop cannot be
  // made.
  std::shared_ptr<ThreadPerChannelEventLoop> refusing_loop_;
  // Registered channels holding a slot. acq_rel increments so the cap is exact.
  std::atomic<int> active_{0};
  // Release/acquire: see IsShuttingDown().
  std::atomic<bool> shutting_down_{false};
  absl::Duration quiet_period_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration timeout_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  Promise<void> termination_;

  mutable internal::Mutex mu_;
  absl::flat_hash_map<ThreadPerChannelEventLoop*, std::shared_ptr<ThreadPerChannelEventLoop>>
      live_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<ThreadPerChannelEventLoop>> terminated_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_OIO_EVENT_LOOP_GROUP_H_
