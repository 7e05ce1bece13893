// ChannelOutboundInvoker: the outbound operations (bind, connect, disconnect, close,
// deregister, read, write, flush) of a Channel and of its ChannelPipeline, declared and
// written once. Each one enters the chain of handlers at its tail:
//
//   channel.Write(msg)  ->  pipeline.Write(msg)  ->  tail context's Write(msg)
//                                                      -> outbound handlers -> transport
//
// A ChannelHandlerContext offers the same operations with the same signatures; it is
// where they are carried out (from a context, an operation starts at the handler before
// it), so it implements them instead of forwarding.
//
// The forms without a promise make one on the channel's loop and return its future; the
// forms taking a promise complete that one. Read and Flush return the invoker, to chain.
// Write and WriteAndFlush also take VoidPromise(): nothing to allocate or complete.
//
// `Self` derives from ChannelOutboundInvoker<Self> and has a (private, with this class a
// friend) `OutboundTarget()` returning what it hands the operations to: the channel its
// pipeline, the pipeline its tail context.
//
// Thread safety: every operation may be called from any thread, as the target's.
// Ownership: a mixin without state.
#ifndef GYRE_CHANNEL_CHANNEL_OUTBOUND_INVOKER_H_
#define GYRE_CHANNEL_CHANNEL_OUTBOUND_INVOKER_H_

#include <utility>

#include "gyre/channel/channel_future.h"
#include "gyre/channel/message.h"
#include "gyre/channel/socket_address.h"

namespace gyre {

template <typename Self>
class ChannelOutboundInvoker {
 public:
  ChannelFuture Bind(const SocketAddress& local) { return Target().Bind(local); }
  ChannelFuture Connect(const SocketAddress& remote, const SocketAddress& local = {}) {
    return Target().Connect(remote, local);
  }
  ChannelFuture Disconnect() { return Target().Disconnect(); }
  ChannelFuture Close() { return Target().Close(); }
  ChannelFuture Deregister() { return Target().Deregister(); }
  // Requests one read (when AUTO_READ is off; with it on, reading is continuous).
  Self& Read() {
    Target().Read();
    return AsSelf();
  }
  ChannelFuture Write(Message msg) { return Target().Write(std::move(msg)); }
  Self& Flush() {
    Target().Flush();
    return AsSelf();
  }
  ChannelFuture WriteAndFlush(Message msg) { return Target().WriteAndFlush(std::move(msg)); }

  void Bind(const SocketAddress& local, ChannelPromise promise) {
    Target().Bind(local, std::move(promise));
  }
  void Connect(const SocketAddress& remote, const SocketAddress& local, ChannelPromise promise) {
    Target().Connect(remote, local, std::move(promise));
  }
  void Disconnect(ChannelPromise promise) { Target().Disconnect(std::move(promise)); }
  void Close(ChannelPromise promise) { Target().Close(std::move(promise)); }
  void Deregister(ChannelPromise promise) { Target().Deregister(std::move(promise)); }
  void Write(Message msg, ChannelPromise promise) {
    Target().Write(std::move(msg), std::move(promise));
  }
  void WriteAndFlush(Message msg, ChannelPromise promise) {
    Target().WriteAndFlush(std::move(msg), std::move(promise));
  }
  // The void promise, for a write whose outcome the caller does not want (see
  // VoidPromise() in channel_future.h).
  ChannelPromise VoidPromise() const { return gyre::VoidPromise(); }

 protected:
  ChannelOutboundInvoker() = default;
  ~ChannelOutboundInvoker() = default;

 private:
  Self& AsSelf() { return static_cast<Self&>(*this); }
  decltype(auto) Target() { return AsSelf().OutboundTarget(); }
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_OUTBOUND_INVOKER_H_
