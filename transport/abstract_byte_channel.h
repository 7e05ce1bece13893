// AbstractByteChannel<Base, Derived>: what the transports' connected TCP channels
// (NioSocketChannel, OioSocketChannel) share on top of their transport's channel base
// (`Base`: AbstractNioChannel, AbstractOioChannel): the outbound buffer with its water
// marks, the Unsafe's write, flush, read and close (inline on the loop thread, a hop
// from elsewhere), writing queued bytes as far as the socket takes them, becoming
// active, closing with a cause, and the graceful-shutdown drain (flush what is
// queued, discard inbound bytes, close once the buffer is empty).
//
// `Derived` (CRTP; the final channel class, which befriends this template) supplies
// what depends on how its loop waits for the socket; each hook runs on the loop thread
// (and asserts so, as the loop's own callbacks do):
//   void BeginReadOnLoop();                  // Read() / auto-read: wait for bytes
//   void UpdateWriteInterest(bool pending);  // wait for room while `pending`
//   void WatchInboundWhileDraining(bool on); // the drain discards inbound bytes (on),
//                                            // or the peer's FIN ended them (off)
// and its own read path. The definitions are in
// transport/internal/abstract_byte_channel_impl.h; each transport instantiates the
// template once, in its own .cc.
//
// Thread safety: as AbstractSocketChannel: IsWritable and PendingOutboundBytes are
// thread-safe snapshots, the rest is loop-confined (ABSL_GUARDED_BY the loop affinity).
// Ownership: shared (std::shared_ptr); the loop holds a reference while registered.
#ifndef GYRE_TRANSPORT_ABSTRACT_BYTE_CHANNEL_H_
#define GYRE_TRANSPORT_ABSTRACT_BYTE_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/transport/channel_outbound_buffer.h"

namespace gyre {

template <typename Base, typename Derived>
class AbstractByteChannel : public Base {
 public:
  // An unconnected channel (its socket is made on connect or bind).
  static std::shared_ptr<Derived> Create() {
    return std::shared_ptr<Derived>(new Derived(nullptr, -1));
  }
  // A channel over the connected socket `fd` (which it owns), accepted by `parent`.
  static std::shared_ptr<Derived> CreateAccepted(Channel* parent, int fd);

  // Any thread (relaxed snapshots of loop-maintained state).
  bool IsWritable() const override { return ABSL_TS_UNCHECKED_READ(outbound_).IsWritable(); }
  // Bytes written and not yet handed to the kernel.
  int64_t PendingOutboundBytes() const {
    return ABSL_TS_UNCHECKED_READ(outbound_).pending_bytes();
  }

  Channel::Unsafe& unsafe() override { return unsafe_; }

 protected:
  // `name` labels the outbound buffer's log lines.
  AbstractByteChannel(Channel* parent, int fd, const char* name)
      : Base(parent, fd), outbound_(this, name) {}

  // Queues a write (failing it when the channel is closed or its output shut down);
  // while draining, flushes it at once. Takes both by reference: the message moves once,
  // into the outbound buffer.
  void WriteOnLoop(Message&& msg, ChannelPromise&& promise)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  // Flushes what was written; sends it now unless the channel is not active yet or
  // already waits for room (then the data goes when the socket takes it).
  void FlushOnLoop() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  // Hands flushed bytes to the socket as far as it takes them; closes on an error,
  // and ends a drain once the buffer is empty.
  void DoWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  // A readiness while draining: `writable` (or an error) writes, `readable` discards
  // inbound bytes, `failed` (error or hang-up) closes with the socket's error.
  void DrainEvent(bool writable, bool readable, bool failed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  // Channel
  bool BeginShutdownDrain() override;
  // AbstractSocketChannel
  void OnRegistered() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  void BecomeActive() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  void CloseWithCause(absl::Status cause) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  // Set by a transport that shuts the output down (nio's ShutdownOutput); later
  // writes fail. Relaxed: read as a snapshot by the transport's accessors.
  std::atomic<bool> output_shutdown_{false};

  // Loop-confined (guarded by the channel's loop affinity).
  // Its IsWritable() and pending_bytes() are thread-safe (read unchecked above).
  ChannelOutboundBuffer outbound_ ABSL_GUARDED_BY(this->loop_affinity_);
  // A read was asked for (Read() / auto-read) and not served yet.
  bool read_requested_ ABSL_GUARDED_BY(this->loop_affinity_) = false;
  // Set by BeginShutdownDrain: closes once outbound_ is empty.
  bool draining_ ABSL_GUARDED_BY(this->loop_affinity_) = false;

 private:
  class ByteUnsafe final : public Base::SocketUnsafe {
   public:
    explicit ByteUnsafe(AbstractByteChannel* ch) : Base::SocketUnsafe(ch), ch_(ch) {}
    void BeginRead() override;
    void Write(Message msg, ChannelPromise promise) override;
    void Flush() override;

   private:
    AbstractByteChannel* const ch_;
  };

  // The final class: calls through it (IsOpen, IsActive on the hot paths) are direct.
  Derived& derived() { return static_cast<Derived&>(*this); }
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
  // Reads and drops what the peer sends while draining (bounded per readiness).
  void DiscardInbound() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  ByteUnsafe unsafe_{this};
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_ABSTRACT_BYTE_CHANNEL_H_
