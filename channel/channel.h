// Channel: a connection (or a listening socket) with its pipeline, bound to one event
// loop for life.
//
//   std::shared_ptr<Channel> ch = ...;           // from a Bootstrap
//   ch->WriteAndFlush(std::string("hello")).AddListener([](const ChannelFuture& f) {
//     if (!f.IsSuccess()) Log(f.Cause());
//   });
//   ch->Close();
//   ch->CloseFuture().Await();
//
// States: created -> registered (has an event loop) -> active (bound / connected) ->
// inactive (closed) -> unregistered. IsOpen() is false once closed; CloseFuture()
// completes then, and never fails.
//
// Every operation may be called from any thread: it enters the pipeline at the tail and
// hops to the channel's loop where needed; each returns a future completed on the loop.
//
// Thread safety: thread-safe.
// Ownership: shared (std::shared_ptr); the event loop holds a reference while the
// channel is registered, and a queued task for the channel holds one too.
#ifndef GYRE_CHANNEL_CHANNEL_H_
#define GYRE_CHANNEL_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "gyre/channel/channel_future.h"
#include "gyre/channel/channel_option.h"
#include "gyre/channel/channel_outbound_invoker.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/channel/message.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/loop_affinity.h"

namespace gyre {

class EventLoop;
class SingleThreadEventLoop;

// A process-unique channel id.
struct ChannelId {
  uint64_t value = 0;
  std::string AsShortText() const;
  friend bool operator==(ChannelId a, ChannelId b) { return a.value == b.value; }
};

class Channel : public std::enable_shared_from_this<Channel>,
                public ChannelOutboundInvoker<Channel> {
 public:
  // The transport side of a channel: what the pipeline's head calls. Loop thread only.
  class Unsafe {
   public:
    virtual ~Unsafe() = default;
    virtual void Register(EventLoop* loop, ChannelPromise promise) = 0;
    virtual void Bind(const SocketAddress& local, ChannelPromise promise) = 0;
    virtual void Connect(const SocketAddress& remote, const SocketAddress& local,
                         ChannelPromise promise) = 0;
    virtual void Disconnect(ChannelPromise promise) = 0;
    virtual void Close(ChannelPromise promise) = 0;
    virtual void Deregister(ChannelPromise promise) = 0;
    virtual void BeginRead() = 0;
    virtual void Write(Message msg, ChannelPromise promise) = 0;
    virtual void Flush() = 0;
  };

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  virtual ~Channel();

  ChannelId id() const { return id_; }
  // The loop this channel is registered with; null before registration.
  EventLoop* event_loop() const { return loop_.load(std::memory_order_acquire); }
  // The server channel that accepted this one; null otherwise.
  Channel* parent() const { return parent_; }
  ChannelPipeline& pipeline() { return pipeline_; }
  ChannelConfig& config() { return config_; }

  bool IsRegistered() const { return event_loop() != nullptr && registered_.load(std::memory_order_acquire); }
  virtual bool IsOpen() const = 0;
  virtual bool IsActive() const = 0;
  virtual SocketAddress local_address() const = 0;
  virtual SocketAddress remote_address() const = 0;
  // False while the bytes queued for writing exceed the high water mark (until they
  // drop below the low one).
  virtual bool IsWritable() const { return true; }
  // Completes (successfully) when the channel has closed.
  ChannelFuture CloseFuture() const { return close_future_; }

  // Outbound operations (ChannelOutboundInvoker: Bind, Connect, Disconnect, Close,
  // Deregister, Read, Write, Flush, WriteAndFlush) enter the pipeline at its tail.

  virtual Unsafe& unsafe() = 0;

  // A promise on this channel's loop (or without executor before registration).
  ChannelPromise NewPromise() const;
  // For transports: fails a write's `promise` with `cause`; a void promise's failure is
  // fired at the pipeline's ExceptionCaught instead (see VoidPromise()).
  void FailWrite(ChannelPromise& promise, absl::Status cause);

 protected:
  friend class SingleThreadEventLoop;

  explicit Channel(Channel* parent);

  // Loop thread only; asked by the loop when its graceful shutdown begins (and on each
  // later turn while the channel is registered and not draining). True: the channel
  // drains its queued writes, stops reading, and closes itself once they are written
  // (or fail). False: the loop closes the channel if it is still open. The default
  // (server channels, channels with nothing queued) is false.
  virtual bool BeginShutdownDrain() { return false; }

  // For transports: set on registration / deregistration (loop thread).
  void set_event_loop(EventLoop* loop);
  void set_registered(bool registered) { registered_.store(registered, std::memory_order_release); }
  // Completes CloseFuture() (once).
  void CompleteCloseFuture() { close_future_.TrySuccess(); }

  // The channel's loop thread, as a capability (see LoopAffinity): transports guard
  // their loop-confined state (fd, interest set, outbound queue) with it. Bound to the
  // loop by set_event_loop; before that, any thread (the one holding the unregistered
  // channel) passes its check.
  LoopAffinity loop_affinity_;

 private:
  friend class ChannelOutboundInvoker<Channel>;
  ChannelPipeline& OutboundTarget() { return pipeline_; }

  const ChannelId id_;
  Channel* const parent_;
  // Release/acquire: a thread that sees the loop sees the registration state made
  // before it was published.
  std::atomic<EventLoop*> loop_{nullptr};
  std::atomic<bool> registered_{false};
  ChannelConfig config_;
  ChannelPromise close_future_;
  ChannelPipeline pipeline_;
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_H_
