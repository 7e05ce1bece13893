// The definitions of AbstractByteChannel<Base, Derived>'s members. Included only by
// the .cc file of each transport's socket channel, which instantiates the template
// explicitly (its public header declares it extern).
#ifndef GYRE_TRANSPORT_INTERNAL_ABSTRACT_BYTE_CHANNEL_IMPL_H_
#define GYRE_TRANSPORT_INTERNAL_ABSTRACT_BYTE_CHANNEL_IMPL_H_

#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "gyre/transport/abstract_byte_channel.h"
#include "gyre/transport/internal/io_syscalls.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

template <typename Base, typename Derived>
std::shared_ptr<Derived> AbstractByteChannel<Base, Derived>::CreateAccepted(Channel* parent,
                                                                            int fd) {
  std::shared_ptr<Derived> ch(new Derived(parent, fd));
  ch->loop_affinity_.AssertOnLoop();  // not registered yet: this thread has it
  ch->MarkConnected();
  return ch;
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::ByteUnsafe::BeginRead() {
  AbstractByteChannel* ch = ch_;
  // On the loop (auto-read re-arming after every read): inline, no task.
  if (ch->OnLoopOrUnregistered()) {
    ch->derived().BeginReadOnLoop();
    return;
  }
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop([ch, self] { ch->derived().BeginReadOnLoop(); }, nullptr);
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::ByteUnsafe::Write(Message msg, ChannelPromise promise) {
  AbstractByteChannel* ch = ch_;
  // On the loop (the common case: a handler writing): no task, no allocation.
  if (ch->OnLoopOrUnregistered()) {
    ch->loop_affinity_.AssertOnLoop();
    ch->WriteOnLoop(std::move(msg), std::move(promise));
    return;
  }
  ch->RunOnLoop(
      [ch, m = std::move(msg), promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        ch->WriteOnLoop(std::move(m), std::move(promise));
      },
      &promise);
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::ByteUnsafe::Flush() {
  AbstractByteChannel* ch = ch_;
  if (ch->OnLoopOrUnregistered()) {
    ch->loop_affinity_.AssertOnLoop();
    ch->FlushOnLoop();
    return;
  }
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        ch->FlushOnLoop();
      },
      nullptr);
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::WriteOnLoop(Message&& msg, ChannelPromise&& promise) {
  if (!derived().IsOpen()) {
    this->FailWrite(promise, internal_transport::ClosedError());
    return;
  }
  if (output_shutdown_.load(std::memory_order_relaxed)) {
    this->FailWrite(promise, internal_transport::OutputShutdownError());
    return;
  }
  outbound_.Add(std::move(msg), std::move(promise));
  // Draining: nothing may be left unflushed when the buffer empties.
  if (draining_) FlushOnLoop();
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::FlushOnLoop() {
  if (!derived().IsOpen()) return;
  // Flushed data not yet written means the loop waits for room, or an outer DoWrite
  // runs (a listener flushing from inside WriteTo): either picks the new data up.
  const bool waiting = outbound_.HasFlushed();
  outbound_.AddFlush();
  // Not yet connected: the data goes once the connect succeeds (BecomeActive).
  if (!derived().IsActive() || waiting) return;
  DoWrite();
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::DoWrite() {
  absl::Status written = outbound_.WriteTo(this->fd());
  if (!written.ok()) {
    CloseWithCause(written);
    return;
  }
  if (!derived().IsOpen()) return;
  const bool pending = outbound_.HasFlushed();
  derived().UpdateWriteInterest(pending);
  // A graceful shutdown's drain is done once every queued write was handed over.
  if (!pending && draining_ && outbound_.empty()) CloseWithCause(absl::OkStatus());
}

template <typename Base, typename Derived>
bool AbstractByteChannel<Base, Derived>::BeginShutdownDrain() {
  this->loop_affinity_.AssertOnLoop();  // called by the loop
  if (!derived().IsOpen()) return false;
  if (draining_) return true;
  if (!derived().IsActive() || this->IsConnecting() ||
      output_shutdown_.load(std::memory_order_relaxed) || outbound_.empty()) {
    CloseWithCause(absl::OkStatus());
    return false;
  }
  draining_ = true;
  // No new inbound messages while draining; inbound bytes are read and discarded (see
  // DiscardInbound), so none are left unread when the channel closes.
  read_requested_ = false;
  derived().WatchInboundWhileDraining(true);
  // Flushes the unflushed writes; DoWrite closes the channel if it empties the buffer.
  FlushOnLoop();
  return derived().IsOpen();
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::DrainEvent(bool writable, bool readable, bool failed) {
  // Writable, or an error or hang-up: a send reports the socket's error (and closes).
  if (writable) DoWrite();
  if (derived().IsOpen() && readable) DiscardInbound();
  if (!derived().IsOpen() || !failed) return;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(this->fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  CloseWithCause(err != 0 ? internal_transport::ErrnoStatus(err, "socket")
                          : absl::UnavailableError("connection hung up while draining writes"));
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::DiscardInbound() {
  // Closing a socket with unread inbound bytes sends a reset, and the kernel then drops
  // what it still holds of the drained writes: so read (bounded per readiness; the
  // loops report readiness again while bytes are left) and drop what the peer sends,
  // delivering nothing.
  constexpr int kDiscardReadsPerEvent = 16;
  char scratch[16 * 1024];
  for (int i = 0; i < kDiscardReadsPerEvent; ++i) {
    ssize_t n = internal_transport::Recv(this->fd(), scratch, sizeof(scratch), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0) {
      derived().WatchInboundWhileDraining(false);  // the peer's FIN: nothing more comes
      return;
    }
    CloseWithCause(internal_transport::ErrnoStatus(errno, "recv"));
    return;
  }
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::OnRegistered() {
  // An accepted channel is active from the start.
  if (derived().IsActive()) this->pipeline().FireChannelActive();
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::BecomeActive() {
  this->pipeline().FireChannelActive();
  // Writes flushed while connecting go now.
  if (derived().IsOpen() && outbound_.HasFlushed()) DoWrite();
}

template <typename Base, typename Derived>
void AbstractByteChannel<Base, Derived>::CloseWithCause(absl::Status cause) {
  if (!derived().IsOpen()) return;
  std::shared_ptr<Channel> self = this->shared_from_this();
  this->AbortConnect(cause);
  read_requested_ = false;
  this->CloseCommon();
  // Writes still queued fail (a closed channel fires no writability change).
  outbound_.FailAll(cause.ok() ? internal_transport::ClosedError() : cause);
}

}  // namespace gyre

#endif  // GYRE_TRANSPORT_INTERNAL_ABSTRACT_BYTE_CHANNEL_IMPL_H_
