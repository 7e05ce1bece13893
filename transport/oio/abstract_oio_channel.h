// AbstractOioChannel: what the oio socket channels add to AbstractSocketChannel: a
// ThreadPerChannelEventLoop of their own to register with, which polls the channel's
// fd and terminates once the channel has closed or deregistered (operations after
// that fail their futures with FailedPrecondition).
//
// Subclasses implement the Unsafe operations that differ (connect, bind, read, write)
// and the OioIoHandler side (which poll events they want, what to do when ready).
//
// Thread safety: as AbstractSocketChannel.
// Ownership: shared (std::shared_ptr); owns its fd and closes it on Close or
// destruction; holds its loop (shared_ptr) from registration on, so event_loop() stays
// valid for the channel's life.
#ifndef GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_
#define GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/transport/abstract_socket_channel.h"
#include "gyre/transport/oio/thread_per_channel_event_loop.h"

namespace gyre {

class AbstractOioChannel : public AbstractSocketChannel, protected OioIoHandler {
 public:
  // The loop this channel is registered with (null before).
  ThreadPerChannelEventLoop* oio_loop() const {
    return static_cast<ThreadPerChannelEventLoop*>(registered_loop());
  }

 protected:
  // `fd` may be -1 (the socket is made on bind/connect).
  AbstractOioChannel(Channel* parent, int fd) : AbstractSocketChannel(parent, fd) {}

  // OioIoHandler
  int PollFd() const override {
    loop_affinity_.AssertOnLoop();  // called by the loop
    return fd();
  }

  // AbstractSocketChannel
  absl::Status CheckLoop(EventLoop* loop) const override {
    return RequireLoop<ThreadPerChannelEventLoop>(loop, "an oio channel needs a ThreadPerChannelEventLoop");
  }
  void OnLoopClaimed(SingleThreadEventLoop* loop) override;
  void JoinLoop(SingleThreadEventLoop* loop) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Detaches from the loop, which then terminates.
  void LeaveLoop(SingleThreadEventLoop* loop) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

 private:
  // Keeps the loop alive for this channel's life; written once, on the registering
  // thread, before the loop runs anything of this channel (the Execute that hands
  // registration over orders it).
  std::shared_ptr<ThreadPerChannelEventLoop> loop_ref_;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_
