// ChannelInboundInvoker: the inbound events (registered, active, read, ...) a
// ChannelPipeline fires, declared and written once. Each one is delivered to the handler
// of Self's first context, the pipeline's head, which passes it on:
//
//   pipeline.FireChannelActive()  ->  head's ChannelActive  ->  inbound handlers -> tail
//
// A ChannelHandlerContext offers the same events with the same signatures; from a context
// an event goes to the next inbound handler after it, so it implements them instead of
// forwarding.
//
// `Self` derives from ChannelInboundInvoker<Self> and has a (private, with this class a
// friend) `InboundTarget()` returning that first context. A read is not among these:
// Self declares its own `FireChannelRead(Message)`, because where a read enters is
// Self's choice (the pipeline starts it after its head, which would pass it on
// unchanged, one hop fewer on the hottest path).
//
// Thread safety: every event may be fired from any thread; it runs on the handler's
// executor (queued there from another thread).
// Ownership: a mixin without state.
#ifndef GYRE_CHANNEL_CHANNEL_INBOUND_INVOKER_H_
#define GYRE_CHANNEL_CHANNEL_INBOUND_INVOKER_H_

#include <utility>

#include "absl/status/status.h"
#include "gyre/channel/message.h"

namespace gyre {

template <typename Self>
class ChannelInboundInvoker {
 public:
  void FireChannelRegistered() { Target().InvokeChannelRegistered(); }
  void FireChannelUnregistered() { Target().InvokeChannelUnregistered(); }
  void FireChannelActive() { Target().InvokeChannelActive(); }
  void FireChannelInactive() { Target().InvokeChannelInactive(); }
  void FireChannelReadComplete() { Target().InvokeChannelReadComplete(); }
  void FireUserEventTriggered(Message event) { Target().InvokeUserEventTriggered(std::move(event)); }
  void FireChannelWritabilityChanged() { Target().InvokeChannelWritabilityChanged(); }
  void FireExceptionCaught(absl::Status cause) { Target().InvokeExceptionCaught(std::move(cause)); }

 protected:
  ChannelInboundInvoker() = default;
  ~ChannelInboundInvoker() = default;

 private:
  decltype(auto) Target() { return static_cast<Self&>(*this).InboundTarget(); }
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_INBOUND_INVOKER_H_
