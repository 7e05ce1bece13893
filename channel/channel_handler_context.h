// ChannelHandlerContext: a handler's place in a pipeline, and its way to pass events on.
//
//   void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
//     ctx.FireChannelRead(Transform(std::move(msg)));   // to the next inbound handler
//   }
//   void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
//     ctx.Write(Encode(std::move(msg)), std::move(p));   // to the next outbound handler
//   }
//
// Fire* methods pass an inbound event to the next inbound handler after this one;
// outbound methods pass an operation to the next outbound handler before this one
// (towards the head, which hands it to the transport). When the next handler runs on
// another executor, the event is queued there; otherwise it runs inline, before the call
// returns. Events from one context to the next keep their order.
//
// Thread safety: every method may be called from any thread; it hops to the right
// executor. Links between contexts are only followed on a context's own executor: a
// call from another thread is first queued there.
// Ownership and lifetime: owned by the pipeline. A context stays valid while its handler
// is in the pipeline and until its HandlerRemoved has returned; an event already on its
// way through it when it is removed still passes on. After that the pipeline frees it,
// once every executor of the pipeline has finished the task it was running and no queued
// event can reach it any more (see ChannelPipeline). Do not keep a context pointer past
// HandlerRemoved: a handler that schedules work holding its context cancels it there.
#ifndef GYRE_CHANNEL_CHANNEL_HANDLER_CONTEXT_H_
#define GYRE_CHANNEL_CHANNEL_HANDLER_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "gyre/channel/channel_future.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/message.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/loop_affinity.h"

namespace gyre {

class Channel;
class ChannelPipeline;
class EventExecutor;
template <typename Self>
class ChannelInboundInvoker;

class alignas(64) ChannelHandlerContext {
 public:
  ChannelHandlerContext(const ChannelHandlerContext&) = delete;
  ChannelHandlerContext& operator=(const ChannelHandlerContext&) = delete;

  Channel& channel() const;
  ChannelPipeline& pipeline() const { return *pipeline_; }
  // Where this handler's methods run.
  EventExecutor* executor() const;
  const std::string& name() const { return name_; }
  ChannelHandler* handler() const { return handler_.get(); }
  // True once the handler was removed from the pipeline.
  bool IsRemoved() const { return removed_.load(std::memory_order_acquire); }

  // Inbound: to the next inbound handler.
  void FireChannelRegistered();
  void FireChannelUnregistered();
  void FireChannelActive();
  void FireChannelInactive();
  void FireChannelRead(Message msg);
  void FireChannelReadComplete();
  void FireUserEventTriggered(Message event);
  void FireChannelWritabilityChanged();
  void FireExceptionCaught(absl::Status cause);

  // Outbound: to the next outbound handler, towards the transport.
  ChannelFuture Bind(const SocketAddress& local);
  ChannelFuture Connect(const SocketAddress& remote, const SocketAddress& local = {});
  ChannelFuture Disconnect();
  ChannelFuture Close();
  ChannelFuture Deregister();
  void Read();
  ChannelFuture Write(Message msg);
  void Flush();
  ChannelFuture WriteAndFlush(Message msg);

  // With a promise of the caller's: an operation given a promise that is already done
  // is not performed (B99, Netty's isNotValidPromise). A cancelled promise takes the
  // operation back; any other done promise is the caller's error, fired at the
  // pipeline's ExceptionCaught as InvalidArgument. A write's message is released then.
  void Bind(const SocketAddress& local, ChannelPromise promise);
  void Connect(const SocketAddress& remote, const SocketAddress& local, ChannelPromise promise);
  void Disconnect(ChannelPromise promise);
  void Close(ChannelPromise promise);
  void Deregister(ChannelPromise promise);
  void Write(Message msg, ChannelPromise promise);
  void WriteAndFlush(Message msg, ChannelPromise promise);

  // A promise on the channel's event loop.
  ChannelPromise NewPromise() const;
  // The void promise, for a write whose outcome the caller does not want (see
  // VoidPromise() in channel_future.h).
  ChannelPromise VoidPromise() const { return gyre::VoidPromise(); }
  // Netty's unvoid(): `promise` itself when it is a real one; for the void promise, a
  // real one whose failure fires ExceptionCaught as the void one's would. For a handler
  // that takes void promises (ChannelHandler::AcceptsVoidPromise) and must listen.
  ChannelPromise Unvoid(ChannelPromise promise) const {
    return promise.valid() ? promise : PromiseInPlaceOfVoid();
  }

 private:
  friend class ChannelPipeline;
  template <typename>
  friend class ChannelInboundInvoker;  // the pipeline's events enter at its head

  ChannelHandlerContext(ChannelPipeline* pipeline, std::string name,
                        std::shared_ptr<ChannelHandler> handler, EventExecutor* executor,
                        uint32_t mask);

  ChannelHandlerContext* NextInbound() const;
  ChannelHandlerContext* PrevOutbound() const;
  bool RunsOnThisThread() const;

  // Reference counting (see ChannelPipeline): a task queued to this context holds one.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref();
  class Hold;

  // Invoke*: run this context's handler method now (on its executor), or queue it there.
  void InvokeChannelRegistered();
  void InvokeChannelUnregistered();
  void InvokeChannelActive();
  void InvokeChannelInactive();
  void InvokeChannelRead(Message msg);
  void InvokeChannelReadComplete();
  void InvokeUserEventTriggered(Message event);
  void InvokeChannelWritabilityChanged();
  void InvokeExceptionCaught(absl::Status cause);
  void InvokeBind(const SocketAddress& local, ChannelPromise promise);
  void InvokeConnect(const SocketAddress& remote, const SocketAddress& local,
                     ChannelPromise promise);
  void InvokeDisconnect(ChannelPromise promise);
  void InvokeClose(ChannelPromise promise);
  void InvokeDeregister(ChannelPromise promise);
  void InvokeRead();
  void InvokeWrite(Message msg, ChannelPromise promise);
  void InvokeFlush();
  // The hot paths, once on this context's executor (defined inline in the .cc, where
  // every caller is).
  // By reference: the value moves once, into the handler's parameter.
  inline void ChannelReadHere(Message&& msg);
  inline void WriteHere(Message&& msg, ChannelPromise&& promise);
  // What a handler other than the head receives instead of a void promise: a promise
  // that fires ExceptionCaught on the pipeline if the write fails.
  ChannelPromise PromiseInPlaceOfVoid() const;
  // True when outbound operation `op` must not go on because `promise` is already done
  // (see Bind); reports a done promise that was not cancelled.
  inline bool RefusesDonePromise(const ChannelPromise& promise, const char* op);
  void ReportDonePromise(const char* op);
  // Replaces a void `promise` with PromiseInPlaceOfVoid() unless the handler takes it.
  inline void UnvoidUnlessAccepted(ChannelPromise& promise) const;
  // HandlerAdded (once, unless removed first) / HandlerRemoved (only after an add).
  void InvokeHandlerAdded();
  void InvokeHandlerRemoved();

  // The bodies every Invoke* shares, over the handler method to call: Call* run it
  // here (a throw goes to ExceptionCaught, or fails the promise for an outbound method
  // that takes one, passed last); Invoke* run or post it to the context's executor
  // (a refused hop is logged as `event`, or fails the promise).
  template <typename... Params, typename... Args>
  void CallInbound(void (ChannelHandler::*method)(ChannelHandlerContext&, Params...),
                   Args&&... args);
  template <typename... Params, typename... Args>
  void CallOutbound(void (ChannelHandler::*method)(ChannelHandlerContext&, Params...),
                    ChannelPromise& promise, Args&&... args);
  template <typename... Params, typename... Args>
  void InvokeInbound(const char* event,
                     void (ChannelHandler::*method)(ChannelHandlerContext&, Params...),
                     Args... args);
  template <typename... Params, typename... Args>
  void InvokeOutbound(void (ChannelHandler::*method)(ChannelHandlerContext&, Params...),
                      ChannelPromise promise, Args... args);

  // Logs a handler call dropped because its executor refused the hop.
  static void LogRejected(const char* what, const std::string& name, const absl::Status& status);

  // Runs `fn` on this context's executor: inline when already there, else as a task
  // that keeps the channel and this context alive. If the executor refuses the task,
  // `on_rejected` runs here with the reason.
  template <typename F, typename R>
  void RunOrPost(F&& fn, R&& on_rejected);
  // Passes an event on from this context: `step` follows the links, so it runs on this
  // context's executor (queued there, with `args`, from another thread). A refused hop is
  // logged as `what`; the outbound form fails the promise instead.
  template <typename F, typename... Args>
  void FromHere(const char* what, F step, Args... args);
  template <typename F, typename... Args>
  void FromHereOutbound(F step, ChannelPromise promise, Args... args);
  // The hot path of an event or operation with no arguments (ReadComplete, Read,
  // Flush): on this context's thread, straight to the context `kNext` names, into its
  // handler's `kMethod` when that runs on the same executor, else through `kInvoke`;
  // from another thread, FromHere (`what` names it).
  template <ChannelHandlerContext* (ChannelHandlerContext::*kNext)() const,
            void (ChannelHandler::*kMethod)(ChannelHandlerContext&),
            void (ChannelHandlerContext::*kInvoke)()>
  void Forward(const char* what);

  // Reports an exception thrown by this handler's inbound method.
  void HandleInboundThrow(const char* what);
  // Calls the handler's ExceptionCaught; a throw from it is logged.
  void CallExceptionCaught(const absl::Status& cause);

  // What every event and operation reads comes first, in the context's first cache
  // line (the class is aligned to one): a hop then touches one line of each context.
  ChannelPipeline* const pipeline_;
  const std::shared_ptr<ChannelHandler> handler_;
  EventExecutor* const executor_;  // null: the channel's event loop
  // Links, written under the pipeline's mutex and read lock-free while events flow.
  // Release stores / acquire loads: a reader that sees a new context sees it built.
  std::atomic<ChannelHandlerContext*> next_{nullptr};
  std::atomic<ChannelHandlerContext*> prev_{nullptr};
  const uint32_t mask_;
  const bool accepts_void_;  // handler_->AcceptsVoidPromise()
  std::atomic<bool> removed_{false};
  // One reference for membership of the pipeline (dropped a grace period after removal),
  // one per queued task to this context, and one per removed context whose links point
  // here. At zero the pipeline frees the context.
  std::atomic<int32_t> refs_{1};
  const std::string name_;
  // The thread this context's handler runs on, as a capability: bound to a pinned
  // executor; for a context on the channel's loop the check accepts any thread (the
  // channel's own affinity covers the loop).
  const LoopAffinity loop_affinity_;
  // Whether HandlerAdded has been called.
  bool added_called_ ABSL_GUARDED_BY(loop_affinity_) = false;
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_HANDLER_CONTEXT_H_
