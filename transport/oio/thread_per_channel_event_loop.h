// ThreadPerChannelEventLoop: an event loop with its own thread that serves exactly one
// channel, for that channel's whole life (the OIO, thread-per-connection model).
//
//   auto group = OioEventLoopGroup::Create();        // the usual way to get loops
//   group->get()->Register(channel);                 // a fresh loop for this channel
//   channel->event_loop()->Execute([] { /* on the channel's own thread */ });
//
// The run loop blocks in poll(2) on two fds: the channel's socket (with the events the
// channel wants now: POLLIN while reading, POLLOUT while writes are pending or a connect
// is in flight, nothing while idle) and an eventfd. A task queued from another thread
// writes the eventfd (only when the loop announced it may block, the same Dekker pair
// the executor uses for its own sleep), so a loop idle-blocked waiting for bytes still
// runs foreign tasks (a Close, a write) at once: there is no timeout to wait out and no
// polling interval. Timers bound the poll timeout.
//
// Lifecycle: the first Register claims the loop; a second fails with
// FailedPrecondition. When its channel deregisters or closes (or its registration
// fails) the loop shuts itself down (quiet period zero): it runs the tasks already
// queued and terminates; later tasks are refused with FailedPrecondition. Shutting the
// loop (or its group) down gracefully closes the channel: at once when it has nothing
// queued (or is a server channel); otherwise the channel first drains its queued
// writes (see OioSocketChannel) and the loop does not terminate before it closed or
// the shutdown timeout (on the executor's ticker) elapsed, which force-closes it.
//
// See docs/transport.md.
//
// Thread safety: public methods are thread-safe. Attach/Detach are loop thread only
// (the oio channels call them).
// Ownership: shared (std::shared_ptr): its group and its channel hold references, so
// a channel's event_loop() stays valid for the channel's life. Holds its channel
// (shared_ptr) while registered. The destructor shuts down and joins; it must not run
// on the loop's own thread (the group and the channel make sure it does not).
#ifndef GYRE_TRANSPORT_OIO_THREAD_PER_CHANNEL_EVENT_LOOP_H_
#define GYRE_TRANSPORT_OIO_THREAD_PER_CHANNEL_EVENT_LOOP_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/single_thread_event_executor.h"

namespace gyre {

class OioEventLoopGroup;

// The socket side of an oio channel, as its loop sees it.
// Thread safety: every method runs on the loop thread.
// Ownership: the loop holds the channel that implements it while attached.
class OioIoHandler {
 public:
  // The fd to poll; ignored when PollEvents() is 0.
  virtual int PollFd() const = 0;
  // The poll(2) events wanted now (0: do not poll the socket).
  virtual short PollEvents() const = 0;
  // Handles `revents` from poll(2) (POLLIN, POLLOUT, POLLERR, POLLHUP, ...).
  virtual void OnPollEvent(short revents) = 0;

 protected:
  ~OioIoHandler() = default;
};

class ThreadPerChannelEventLoop final
    : public SingleThreadEventLoop,
      public std::enable_shared_from_this<ThreadPerChannelEventLoop> {
 public:
  // A loop of `parent` (null: standalone, no channel cap). Returns the errno status
  // when the eventfd cannot be created.
  static absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> Create(
      OioEventLoopGroup* parent, ExecutorOptions options = {});
  ~ThreadPerChannelEventLoop() override;

  // Registers `channel` (an oio channel) as this loop's one channel. The future fails
  // with InvalidArgument for a null or non-oio channel, FailedPrecondition when the
  // loop already has (or had) a channel or is shut down, and ResourceExhausted when the
  // group's channel cap is reached. Any failure but the second shuts the loop down.
  ChannelFuture Register(std::shared_ptr<Channel> channel) override;

  // True if this loop holds one of its group's channel slots (given back by a
  // shutdown hook, before the termination future completes).
  bool holds_slot() const {
    // Acquire: pairs with the release store in Register.
    return holds_slot_.load(std::memory_order_acquire);
  }

  // Shuts down and joins the thread (for the group's destructor; not on this loop's
  // own thread).
  void ShutdownAndJoinForGroup() { ShutdownAndJoin(); }

  // --- Loop thread only: for the oio channels. ---

  // Makes `channel` (whose socket side is `handler`) the loop's channel.
  void Attach(std::shared_ptr<Channel> channel, OioIoHandler* handler);
  // Drops the channel (after the current event, so it stays alive through its
  // handler) and starts this loop's shutdown.
  void Detach();

  // Test hook: poll(2) calls made.
  int64_t PollCountForTesting() const { return poll_count_.load(std::memory_order_relaxed); }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void OnWakeupRequested() override;

 private:
  ThreadPerChannelEventLoop(OioEventLoopGroup* parent, ExecutorOptions options, int event_fd);

  OioEventLoopGroup* const parent_;
  const int event_fd_;
  // Set once by the first Register (any thread); acq_rel CAS.
  std::atomic<bool> claimed_{false};
  // Release/acquire: see holds_slot().
  std::atomic<bool> holds_slot_{false};
  // Relaxed: a test hook.
  std::atomic<int64_t> poll_count_{0};

  // Loop-confined. The attached channel (held by the base) and its socket side.
  Channel* channel_ ABSL_GUARDED_BY(loop_affinity_) = nullptr;
  OioIoHandler* handler_ ABSL_GUARDED_BY(loop_affinity_) = nullptr;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_THREAD_PER_CHANNEL_EVENT_LOOP_H_
