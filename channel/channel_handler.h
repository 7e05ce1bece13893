// ChannelHandler: a stage of a ChannelPipeline that handles inbound events and/or
// intercepts outbound operations.
//
//   class Echo : public ChannelInboundHandler {
//     void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
//       ctx.WriteAndFlush(std::move(msg));          // back out through the pipeline
//     }
//   };
//   pipeline.AddLast("echo", std::make_shared<Echo>());
//
// Every event method has a default that forwards the event to the next handler (inbound:
// towards the tail; outbound: towards the head), so a handler overrides only what it
// handles. A handler is visited only for the directions in its mask():
// ChannelInboundHandler is skipped by outbound operations, ChannelOutboundHandler by
// inbound events, ChannelDuplexHandler sees both.
//
// Exceptions: an inbound method that throws is reported to the same handler's
// ExceptionCaught (cause Internal with what()); an outbound method that throws fails that
// operation's promise. An exception thrown by ExceptionCaught itself is logged.
//
// Thread safety: a handler's methods are called on its context's executor (the channel's
// event loop, or the group it was added with), one at a time per context. A handler
// added to several pipelines at once must say so by returning true from IsSharable() and
// then be thread-safe itself.
// Ownership: pipelines hold handlers by shared_ptr.
#ifndef GYRE_CHANNEL_CHANNEL_HANDLER_H_
#define GYRE_CHANNEL_CHANNEL_HANDLER_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "gyre/channel/channel_future.h"
#include "gyre/channel/message.h"
#include "gyre/channel/socket_address.h"

namespace gyre {

class ChannelHandlerContext;

class ChannelHandler {
 public:
  enum Mask : uint32_t { kInbound = 1, kOutbound = 2, kBoth = 3 };

  ChannelHandler() = default;
  ChannelHandler(const ChannelHandler&) = delete;
  ChannelHandler& operator=(const ChannelHandler&) = delete;
  virtual ~ChannelHandler() = default;

  // Which directions visit this handler.
  virtual uint32_t mask() const { return kBoth; }
  // True if one instance may be added to several pipelines.
  virtual bool IsSharable() const { return false; }
  // True if this handler's Write takes the void promise as it is (VoidPromise() in
  // channel_future.h): it then neither reads it nor adds listeners to it, and reports a
  // failure with ctx.channel().FailWrite(promise, cause) or passes the promise on. A
  // handler that returns false (the default) receives a real promise in its place,
  // whose failure reaches ExceptionCaught as the void one's would. Asked once, when the
  // handler is added.
  virtual bool AcceptsVoidPromise() const { return false; }

  // Called on the context's executor once the handler is in the pipeline (for a
  // pipeline of a channel not yet registered: once it is registered), and once after it
  // was removed.
  virtual void HandlerAdded(ChannelHandlerContext& ctx) {}
  virtual void HandlerRemoved(ChannelHandlerContext& ctx) {}

  // Inbound events (head to tail).
  virtual void ChannelRegistered(ChannelHandlerContext& ctx);
  virtual void ChannelUnregistered(ChannelHandlerContext& ctx);
  virtual void ChannelActive(ChannelHandlerContext& ctx);
  virtual void ChannelInactive(ChannelHandlerContext& ctx);
  virtual void ChannelRead(ChannelHandlerContext& ctx, Message msg);
  virtual void ChannelReadComplete(ChannelHandlerContext& ctx);
  virtual void UserEventTriggered(ChannelHandlerContext& ctx, Message event);
  virtual void ChannelWritabilityChanged(ChannelHandlerContext& ctx);
  virtual void ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause);

  // Outbound operations (tail to head). `promise` completes when the operation does.
  virtual void Bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise promise);
  virtual void Connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                       const SocketAddress& local, ChannelPromise promise);
  virtual void Disconnect(ChannelHandlerContext& ctx, ChannelPromise promise);
  virtual void Close(ChannelHandlerContext& ctx, ChannelPromise promise);
  virtual void Deregister(ChannelHandlerContext& ctx, ChannelPromise promise);
  virtual void Read(ChannelHandlerContext& ctx);
  virtual void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise);
  virtual void Flush(ChannelHandlerContext& ctx);

 private:
  friend class ChannelPipeline;
  // Set while in a pipeline; guards against adding a non-sharable handler twice.
  // Exchanged with acq_rel so exactly one pipeline wins a racing add.
  std::atomic<int> pipelines_{0};
};

// A handler of inbound events only (outbound operations pass it by).
class ChannelInboundHandler : public ChannelHandler {
 public:
  uint32_t mask() const override { return kInbound; }
};

// A handler of outbound operations only (inbound events pass it by).
class ChannelOutboundHandler : public ChannelHandler {
 public:
  uint32_t mask() const override { return kOutbound; }
};

// A handler of both directions.
class ChannelDuplexHandler : public ChannelHandler {};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_HANDLER_H_
