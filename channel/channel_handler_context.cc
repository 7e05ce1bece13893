#include "gyre/channel/channel_handler_context.h"

#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

ChannelHandlerContext::ChannelHandlerContext(ChannelPipeline* pipeline, std::string name,
                                             std::shared_ptr<ChannelHandler> handler,
                                             EventExecutor* executor, uint32_t mask)
    : pipeline_(pipeline),
      handler_(std::move(handler)),
      executor_(executor),
      mask_(mask),
      accepts_void_(handler_->AcceptsVoidPromise()),
      name_(std::move(name)),
      loop_affinity_(executor) {}

Channel& ChannelHandlerContext::channel() const { return pipeline_->channel(); }

EventExecutor* ChannelHandlerContext::executor() const {
  if (executor_ != nullptr) return executor_;
  return pipeline_->channel().event_loop();
}

ChannelPromise ChannelHandlerContext::NewPromise() const { return channel().NewPromise(); }

// Inline: every hop asks it once or twice. It spells out executor()'s body: GCC keeps
// executor() an out-of-line call here (about 70 instructions per echoed message).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ChannelHandlerContext::RunsOnThisThread() const {
  EventExecutor* e = executor_ != nullptr ? executor_ : pipeline_->channel().event_loop();
  // Before registration there is no loop: events run on the calling thread.
  return e == nullptr || e->InEventLoop();
}

ChannelHandlerContext* ChannelHandlerContext::NextInbound() const {
  ChannelHandlerContext* c = next_.load(std::memory_order_acquire);
  while ((c->mask_ & ChannelHandler::kInbound) == 0) c = c->next_.load(std::memory_order_acquire);
  return c;
}

ChannelHandlerContext* ChannelHandlerContext::PrevOutbound() const {
  ChannelHandlerContext* c = prev_.load(std::memory_order_acquire);
  while ((c->mask_ & ChannelHandler::kOutbound) == 0) c = c->prev_.load(std::memory_order_acquire);
  return c;
}

void ChannelHandlerContext::LogRejected(const char* what, const std::string& name,
                                        const absl::Status& status) {
  GYRE_LOG(WARNING) << what << " for handler '" << name << "' dropped: its executor refused it ("
                    << status << ")";
}

void ChannelHandlerContext::Unref() { pipeline_->Unref(this); }

// A queued task's claim: keeps the channel (which owns the pipeline) and this context
// alive until the task is done with; the context is released first.
class ChannelHandlerContext::Hold {
 public:
  explicit Hold(ChannelHandlerContext* ctx) : keep_(ctx->channel().shared_from_this()), ctx_(ctx) {
    ctx->Ref();
  }
  Hold(Hold&& other) noexcept
      : keep_(std::move(other.keep_)), ctx_(std::exchange(other.ctx_, nullptr)) {}
  Hold& operator=(Hold&&) = delete;
  ~Hold() {
    if (ctx_ != nullptr) ctx_->Unref();
  }

 private:
  std::shared_ptr<Channel> keep_;  // declared first: released last
  ChannelHandlerContext* ctx_;
};

template <typename F, typename R>
void ChannelHandlerContext::RunOrPost(F&& fn, R&& on_rejected) {
  if (RunsOnThisThread()) {
    fn();
    return;
  }
  // A refused task is destroyed by Execute (releasing any message it carries); the
  // caller's `on_rejected` reports it. The caller is on an executor of the pipeline, in
  // the task that reached this context, or holds the context itself: `this` outlives
  // the refused task either way.
  absl::Status status =
      executor()->Execute([hold = Hold(this), f = std::forward<F>(fn)]() mutable { f(); });
  if (!status.ok()) on_rejected(status);
}

// Runs `step(args...)` here when this is the context's executor, else queues it there.
template <typename F, typename... Args>
void ChannelHandlerContext::FromHere(const char* what, F step, Args... args) {
  if (ABSL_PREDICT_TRUE(RunsOnThisThread())) {
    step(std::move(args)...);
    return;
  }
  absl::Status status = executor()->Execute(
      [hold = Hold(this), step, ... a = std::move(args)]() mutable { step(std::move(a)...); });
  if (!status.ok()) LogRejected(what, name_, status);
}

// The same for an outbound operation: `step(promise, args...)`; a refused hop fails it.
template <typename F, typename... Args>
void ChannelHandlerContext::FromHereOutbound(F step, ChannelPromise promise, Args... args) {
  if (ABSL_PREDICT_TRUE(RunsOnThisThread())) {
    step(std::move(promise), std::move(args)...);
    return;
  }
  ChannelPromise on_refusal = promise;
  absl::Status status =
      executor()->Execute([hold = Hold(this), step, p = std::move(promise),
                           ... a = std::move(args)]() mutable { step(std::move(p), std::move(a)...); });
  if (!status.ok()) pipeline_->channel().FailWrite(on_refusal, status);  // void: reported
}

template <ChannelHandlerContext* (ChannelHandlerContext::*kNext)() const,
          void (ChannelHandler::*kMethod)(ChannelHandlerContext&),
          void (ChannelHandlerContext::*kInvoke)()>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::Forward(const char* what) {
  if (ABSL_PREDICT_TRUE(RunsOnThisThread())) {
    ChannelHandlerContext* next = (this->*kNext)();
    if (ABSL_PREDICT_TRUE(next->executor_ == executor_)) return next->CallInbound(kMethod);
    return (next->*kInvoke)();
  }
  FromHere(what, [this] { ((this->*kNext)()->*kInvoke)(); });
}

void ChannelHandlerContext::CallExceptionCaught(const absl::Status& cause) {
  // A throwing ExceptionCaught is logged, never re-delivered.
  try {
    handler_->ExceptionCaught(*this, cause);
  } catch (const std::exception& e) {
    GYRE_LOG(WARNING) << "ExceptionCaught of handler '" << name_ << "' threw " << e.what()
                      << " while handling: " << cause;
  } catch (...) {
    GYRE_LOG(WARNING) << "ExceptionCaught of handler '" << name_
                      << "' threw a non-std exception while handling: " << cause;
  }
}

void ChannelHandlerContext::HandleInboundThrow(const char* what) {
  CallExceptionCaught(absl::InternalError(absl::StrCat("handler '", name_, "' threw: ", what)));
}

// ---------------------------------------------------------------------------------
// Calling the handler: one body per kind of method.

// An inbound method (and Read / Flush, which carry no promise): a throw goes to the
// handler's ExceptionCaught.
template <typename... Params, typename... Args>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::CallInbound(void (ChannelHandler::*method)(ChannelHandlerContext&,
                                                                      Params...),
                                        Args&&... args) {
  try {
    (handler_.get()->*method)(*this, std::forward<Args>(args)...);
  } catch (const std::exception& e) {
    HandleInboundThrow(e.what());
  } catch (...) {
    HandleInboundThrow("a non-std exception");
  }
}

// An outbound method taking a promise last: a throw fails the promise.
template <typename... Params, typename... Args>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::CallOutbound(void (ChannelHandler::*method)(ChannelHandlerContext&,
                                                                       Params...),
                                         ChannelPromise& promise, Args&&... args) {
  try {
    (handler_.get()->*method)(*this, std::forward<Args>(args)..., promise);
  } catch (const std::exception& e) {
    promise.TryFailure(
        absl::InternalError(absl::StrCat("handler '", name_, "' threw: ", e.what())));
  } catch (...) {
    promise.TryFailure(
        absl::InternalError(absl::StrCat("handler '", name_, "' threw a non-std exception")));
  }
}

// Runs an inbound method on this context's executor; a refused hop is logged as `event`.
template <typename... Params, typename... Args>
void ChannelHandlerContext::InvokeInbound(const char* event,
                                          void (ChannelHandler::*method)(ChannelHandlerContext&,
                                                                         Params...),
                                          Args... args) {
  RunOrPost([this, method, ... a = std::move(args)]() mutable { CallInbound(method, std::move(a)...); },
            [this, event](const absl::Status& s) { LogRejected(event, name_, s); });
}

// Runs an outbound method on this context's executor; a refused hop fails the promise.
template <typename... Params, typename... Args>
void ChannelHandlerContext::InvokeOutbound(void (ChannelHandler::*method)(ChannelHandlerContext&,
                                                                         Params...),
                                           ChannelPromise promise, Args... args) {
  RunOrPost(
      [this, method, promise, ... a = std::move(args)]() mutable {
        CallOutbound(method, promise, std::move(a)...);
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}

// ---------------------------------------------------------------------------------
// Inbound invocations.

void ChannelHandlerContext::InvokeChannelRegistered() {
  InvokeInbound("ChannelRegistered", &ChannelHandler::ChannelRegistered);
}
void ChannelHandlerContext::InvokeChannelUnregistered() {
  InvokeInbound("ChannelUnregistered", &ChannelHandler::ChannelUnregistered);
}
void ChannelHandlerContext::InvokeChannelActive() {
  InvokeInbound("ChannelActive", &ChannelHandler::ChannelActive);
}
void ChannelHandlerContext::InvokeChannelInactive() {
  InvokeInbound("ChannelInactive", &ChannelHandler::ChannelInactive);
}
void ChannelHandlerContext::InvokeChannelRead(Message msg) {
  if (RunsOnThisThread()) return ChannelReadHere(std::move(msg));
  RunOrPost([this, m = std::move(msg)]() mutable { ChannelReadHere(std::move(m)); },
            [this](const absl::Status& s) { LogRejected("ChannelRead (message released)", name_, s); });
}
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::ChannelReadHere(Message&& msg) {
  // A handler removed while this read was on its way passes it on, as Netty does.
  if (ABSL_PREDICT_FALSE(IsRemoved())) return FireChannelRead(std::move(msg));
  CallInbound(&ChannelHandler::ChannelRead, std::move(msg));
}
void ChannelHandlerContext::InvokeChannelReadComplete() {
  if (RunsOnThisThread()) return CallInbound(&ChannelHandler::ChannelReadComplete);
  InvokeInbound("ChannelReadComplete", &ChannelHandler::ChannelReadComplete);
}
void ChannelHandlerContext::InvokeUserEventTriggered(Message event) {
  InvokeInbound("UserEventTriggered", &ChannelHandler::UserEventTriggered, std::move(event));
}
void ChannelHandlerContext::InvokeChannelWritabilityChanged() {
  InvokeInbound("ChannelWritabilityChanged", &ChannelHandler::ChannelWritabilityChanged);
}
void ChannelHandlerContext::InvokeExceptionCaught(absl::Status cause) {
  RunOrPost([this, cause]() { CallExceptionCaught(cause); },
      [this, cause](const absl::Status& s) {
        GYRE_LOG(WARNING) << "exception for handler '" << name_ << "' not delivered (" << s
                          << "): " << cause;
      });
}

void ChannelHandlerContext::InvokeHandlerAdded() {
  RunOrPost(
      [this] {
        loop_affinity_.AssertOnLoop();  // run on the context's executor
        if (added_called_ || IsRemoved()) return;
        added_called_ = true;
        CallInbound(&ChannelHandler::HandlerAdded);
      },
      [this](const absl::Status& s) { LogRejected("HandlerAdded", name_, s); });
}

void ChannelHandlerContext::InvokeHandlerRemoved() {
  RunOrPost(
      [this] {
        loop_affinity_.AssertOnLoop();  // run on the context's executor
        if (!added_called_) return;     // never told it was added
        try {
          handler_->HandlerRemoved(*this);
        } catch (const std::exception& e) {
          GYRE_LOG(WARNING) << "HandlerRemoved of '" << name_ << "' threw: " << e.what();
        } catch (...) {
          GYRE_LOG(WARNING) << "HandlerRemoved of '" << name_ << "' threw";
        }
      },
      [this](const absl::Status& s) { LogRejected("HandlerRemoved", name_, s); });
}

// ---------------------------------------------------------------------------------
// Outbound invocations: a refused hop fails the operation's promise.

void ChannelHandlerContext::InvokeBind(const SocketAddress& local, ChannelPromise promise) {
  InvokeOutbound(&ChannelHandler::Bind, std::move(promise), local);
}
void ChannelHandlerContext::InvokeConnect(const SocketAddress& remote, const SocketAddress& local,
                                          ChannelPromise promise) {
  InvokeOutbound(&ChannelHandler::Connect, std::move(promise), remote, local);
}
void ChannelHandlerContext::InvokeDisconnect(ChannelPromise promise) {
  InvokeOutbound(&ChannelHandler::Disconnect, std::move(promise));
}
void ChannelHandlerContext::InvokeClose(ChannelPromise promise) {
  InvokeOutbound(&ChannelHandler::Close, std::move(promise));
}
void ChannelHandlerContext::InvokeDeregister(ChannelPromise promise) {
  InvokeOutbound(&ChannelHandler::Deregister, std::move(promise));
}
void ChannelHandlerContext::InvokeRead() {
  if (RunsOnThisThread()) return CallInbound(&ChannelHandler::Read);
  InvokeInbound("Read", &ChannelHandler::Read);
}
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ChannelHandlerContext::RefusesDonePromise(
    const ChannelPromise& promise, const char* op) {
  // The void promise (invalid handle) is never done.
  if (ABSL_PREDICT_TRUE(!promise.valid() || !promise.IsDone())) return false;
  if (!promise.IsCancelled()) ReportDonePromise(op);
  return true;
}
void ChannelHandlerContext::ReportDonePromise(const char* op) {
  pipeline_->FireExceptionCaught(absl::InvalidArgumentError(absl::StrCat(
      op, " given a promise that is already complete; the operation was not performed")));
}

ChannelPromise ChannelHandlerContext::PromiseInPlaceOfVoid() const {
  ChannelPromise p = NewPromise();
  p.AddListener([weak = pipeline_->channel().weak_from_this()](const ChannelFuture& f) {
    if (f.IsSuccess() || f.IsCancelled()) return;
    if (std::shared_ptr<Channel> ch = weak.lock()) ch->pipeline().FireExceptionCaught(f.Cause());
  });
  return p;
}

// A void promise goes on only to a handler that takes it (the head's, which hands it to
// the transport, and those whose AcceptsVoidPromise() says so); any other gets a real
// one, whose failure reaches ExceptionCaught as the void one's would.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::UnvoidUnlessAccepted(
    ChannelPromise& promise) const {
  if (ABSL_PREDICT_FALSE(!promise.valid()) && !accepts_void_) {
    promise = PromiseInPlaceOfVoid();
  }
}

void ChannelHandlerContext::InvokeWrite(Message msg, ChannelPromise promise) {
  if (RunsOnThisThread()) return WriteHere(std::move(msg), std::move(promise));
  UnvoidUnlessAccepted(promise);
  RunOrPost(
      [this, m = std::move(msg), promise]() mutable { WriteHere(std::move(m), std::move(promise)); },
      [this, promise](const absl::Status& s) mutable {
        pipeline_->channel().FailWrite(promise, s);  // void (a handler that takes it): reported
      });
}
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ChannelHandlerContext::WriteHere(Message&& msg,
                                                                      ChannelPromise&& promise) {
  if (ABSL_PREDICT_FALSE(IsRemoved())) return Write(std::move(msg), std::move(promise));
  UnvoidUnlessAccepted(promise);
  CallOutbound(&ChannelHandler::Write, promise, std::move(msg));
}
void ChannelHandlerContext::InvokeFlush() {
  if (RunsOnThisThread()) return CallInbound(&ChannelHandler::Flush);
  InvokeInbound("Flush", &ChannelHandler::Flush);
}

// ---------------------------------------------------------------------------------
// Fire* / outbound entry points of a context.

// Following a link happens on this context's executor (see FromHere), so that only
// executors of the pipeline ever hold a pointer read from a link.
void ChannelHandlerContext::FireChannelRegistered() {
  FromHere("ChannelRegistered", [this] { NextInbound()->InvokeChannelRegistered(); });
}
void ChannelHandlerContext::FireChannelUnregistered() {
  FromHere("ChannelUnregistered", [this] { NextInbound()->InvokeChannelUnregistered(); });
}
void ChannelHandlerContext::FireChannelActive() {
  FromHere("ChannelActive", [this] { NextInbound()->InvokeChannelActive(); });
}
void ChannelHandlerContext::FireChannelInactive() {
  FromHere("ChannelInactive", [this] { NextInbound()->InvokeChannelInactive(); });
}
void ChannelHandlerContext::FireChannelRead(Message msg) {
  // The hot path: on this context's executor, and the next handler runs here too.
  if (ABSL_PREDICT_TRUE(RunsOnThisThread())) {
    ChannelHandlerContext* next = NextInbound();
    if (ABSL_PREDICT_TRUE(next->executor_ == executor_)) return next->ChannelReadHere(std::move(msg));
    return next->InvokeChannelRead(std::move(msg));
  }
  FromHere(
      "ChannelRead (message released)",
      [this](Message m) { NextInbound()->InvokeChannelRead(std::move(m)); }, std::move(msg));
}
void ChannelHandlerContext::FireChannelReadComplete() {
  Forward<&ChannelHandlerContext::NextInbound, &ChannelHandler::ChannelReadComplete,
          &ChannelHandlerContext::InvokeChannelReadComplete>("ChannelReadComplete");
}
void ChannelHandlerContext::FireUserEventTriggered(Message event) {
  FromHere(
      "UserEventTriggered",
      [this](Message e) { NextInbound()->InvokeUserEventTriggered(std::move(e)); },
      std::move(event));
}
void ChannelHandlerContext::FireChannelWritabilityChanged() {
  FromHere("ChannelWritabilityChanged",
           [this] { NextInbound()->InvokeChannelWritabilityChanged(); });
}
void ChannelHandlerContext::FireExceptionCaught(absl::Status cause) {
  FromHere(
      "ExceptionCaught",
      [this](absl::Status c) { NextInbound()->InvokeExceptionCaught(std::move(c)); },
      std::move(cause));
}

ChannelFuture ChannelHandlerContext::Bind(const SocketAddress& local) {
  ChannelPromise p = NewPromise();
  Bind(local, p);
  return p;
}
ChannelFuture ChannelHandlerContext::Connect(const SocketAddress& remote,
                                             const SocketAddress& local) {
  ChannelPromise p = NewPromise();
  Connect(remote, local, p);
  return p;
}
ChannelFuture ChannelHandlerContext::Disconnect() {
  ChannelPromise p = NewPromise();
  Disconnect(p);
  return p;
}
ChannelFuture ChannelHandlerContext::Close() {
  ChannelPromise p = NewPromise();
  Close(p);
  return p;
}
ChannelFuture ChannelHandlerContext::Deregister() {
  ChannelPromise p = NewPromise();
  Deregister(p);
  return p;
}
ChannelFuture ChannelHandlerContext::Write(Message msg) {
  ChannelPromise p = NewPromise();
  Write(std::move(msg), p);
  return p;
}
ChannelFuture ChannelHandlerContext::WriteAndFlush(Message msg) {
  ChannelPromise p = NewPromise();
  WriteAndFlush(std::move(msg), p);
  return p;
}

void ChannelHandlerContext::Bind(const SocketAddress& local, ChannelPromise promise) {
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Bind"))) return;
  FromHereOutbound(
      [this](ChannelPromise p, SocketAddress l) { PrevOutbound()->InvokeBind(l, std::move(p)); },
      std::move(promise), local);
}
void ChannelHandlerContext::Connect(const SocketAddress& remote, const SocketAddress& local,
                                    ChannelPromise promise) {
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Connect"))) return;
  FromHereOutbound(
      [this](ChannelPromise p, SocketAddress r, SocketAddress l) {
        PrevOutbound()->InvokeConnect(r, l, std::move(p));
      },
      std::move(promise), remote, local);
}
void ChannelHandlerContext::Disconnect(ChannelPromise promise) {
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Disconnect"))) return;
  FromHereOutbound([this](ChannelPromise p) { PrevOutbound()->InvokeDisconnect(std::move(p)); },
                   std::move(promise));
}
void ChannelHandlerContext::Close(ChannelPromise promise) {
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Close"))) return;
  FromHereOutbound([this](ChannelPromise p) { PrevOutbound()->InvokeClose(std::move(p)); },
                   std::move(promise));
}
void ChannelHandlerContext::Deregister(ChannelPromise promise) {
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Deregister"))) return;
  FromHereOutbound([this](ChannelPromise p) { PrevOutbound()->InvokeDeregister(std::move(p)); },
                   std::move(promise));
}
void ChannelHandlerContext::Read() {
  Forward<&ChannelHandlerContext::PrevOutbound, &ChannelHandler::Read,
          &ChannelHandlerContext::InvokeRead>("Read");
}
void ChannelHandlerContext::Write(Message msg, ChannelPromise promise) {
  // Refused: `msg` is released on return.
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "Write"))) return;
  if (ABSL_PREDICT_TRUE(RunsOnThisThread())) {
    ChannelHandlerContext* next = PrevOutbound();
    if (ABSL_PREDICT_TRUE(next->executor_ == executor_)) {
      return next->WriteHere(std::move(msg), std::move(promise));
    }
    return next->InvokeWrite(std::move(msg), std::move(promise));
  }
  FromHereOutbound(
      [this](ChannelPromise p, Message m) { PrevOutbound()->InvokeWrite(std::move(m), std::move(p)); },
      std::move(promise), std::move(msg));
}
void ChannelHandlerContext::Flush() {
  Forward<&ChannelHandlerContext::PrevOutbound, &ChannelHandler::Flush,
          &ChannelHandlerContext::InvokeFlush>("Flush");
}
void ChannelHandlerContext::WriteAndFlush(Message msg, ChannelPromise promise) {
  // Refused: `msg` is released on return.
  if (ABSL_PREDICT_FALSE(RefusesDonePromise(promise, "WriteAndFlush"))) return;
  FromHereOutbound(
      [this](ChannelPromise p, Message m) {
        ChannelHandlerContext* next = PrevOutbound();
        next->InvokeWrite(std::move(m), std::move(p));
        next->InvokeFlush();
      },
      std::move(promise), std::move(msg));
}

}  // namespace gyre
