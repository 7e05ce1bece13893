// AbstractNioChannel: what the nio socket channels add to AbstractSocketChannel: a
// NioEventLoop to register with, and the channel's epoll interest, applied to the loop
// when it changes (and forgotten when the fd leaves the loop).
//
// Subclasses implement the Unsafe operations that differ (connect, bind, read, write)
// and OnIoEvent. A channel must not be used after its loop has terminated (the loop
// closes it then).
//
// Thread safety: as AbstractSocketChannel: the interest is loop-confined.
// Ownership: shared (std::shared_ptr); owns its fd and closes it on Close or destruction.
#ifndef GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_
#define GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/transport/abstract_socket_channel.h"
#include "gyre/transport/nio/nio_event_loop.h"

namespace gyre {

class AbstractNioChannel : public AbstractSocketChannel, protected NioIoHandler {
 public:
  // The loop this channel is registered with (null before), as a NioEventLoop.
  NioEventLoop* nio_loop() const { return static_cast<NioEventLoop*>(registered_loop()); }

 protected:
  // `fd` may be -1 (the socket is made on bind/connect).
  AbstractNioChannel(Channel* parent, int fd) : AbstractSocketChannel(parent, fd) {}

  // Adds / removes `events` from the epoll interest (loop thread; no-op unregistered).
  // Inline: most calls (a read re-armed after each read, write interest dropped after
  // each complete write) leave the registered set as it is.
  void AddInterest(uint32_t events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    interest_ |= events;
    if (interest_ != applied_interest_) ApplyInterest();
  }
  void RemoveInterest(uint32_t events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    interest_ &= ~events;
    if (interest_ != applied_interest_) ApplyInterest();
  }
  uint32_t interest() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return interest_; }

  // AbstractSocketChannel
  absl::Status CheckLoop(EventLoop* loop) const override {
    return RequireLoop<NioEventLoop>(loop, "a nio channel needs a NioEventLoop");
  }
  void JoinLoop(SingleThreadEventLoop* loop) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void ReleaseFd(SingleThreadEventLoop* loop, int fd) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void StopAutoRead() override;

 private:
  // Registers the interest set with the loop (when it differs from the one registered).
  void ApplyInterest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // No interest set is known to be registered with the loop (before registration, after
  // the fd was removed from it).
  static constexpr uint32_t kNoInterestApplied = ~uint32_t{0};

  uint32_t interest_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  // The interest set last registered with the loop: ApplyInterest skips the loop's
  // bookkeeping when nothing changed (every read re-arms read interest).
  uint32_t applied_interest_ ABSL_GUARDED_BY(loop_affinity_) = kNoInterestApplied;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_
