#include "gyre/channel/channel_pipeline.h"

#include <exception>

#include "absl/base/optimization.h"
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/event_executor_group.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

// ---------------------------------------------------------------------------------
// Head and tail.

// The head: outbound operations reach the transport here; inbound events start here.
class ChannelPipeline::HeadHandler final : public ChannelDuplexHandler {
 public:
  explicit HeadHandler(Channel* channel) : channel_(channel) {}

  void Bind(ChannelHandlerContext&, const SocketAddress& local, ChannelPromise p) override {
    channel_->unsafe().Bind(local, std::move(p));
  }
  void Connect(ChannelHandlerContext&, const SocketAddress& remote, const SocketAddress& local,
               ChannelPromise p) override {
    channel_->unsafe().Connect(remote, local, std::move(p));
  }
  void Disconnect(ChannelHandlerContext&, ChannelPromise p) override {
    channel_->unsafe().Disconnect(std::move(p));
  }
  void Close(ChannelHandlerContext&, ChannelPromise p) override {
    channel_->unsafe().Close(std::move(p));
  }
  void Deregister(ChannelHandlerContext&, ChannelPromise p) override {
    channel_->unsafe().Deregister(std::move(p));
  }
  void Read(ChannelHandlerContext&) override { channel_->unsafe().BeginRead(); }
  void Write(ChannelHandlerContext&, Message msg, ChannelPromise p) override {
    channel_->unsafe().Write(std::move(msg), std::move(p));
  }
  void Flush(ChannelHandlerContext&) override { channel_->unsafe().Flush(); }

  void ChannelActive(ChannelHandlerContext& ctx) override {
    ctx.FireChannelActive();
    if (channel_->config().auto_read()) channel_->Read();
  }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override {
    ctx.FireChannelReadComplete();
    if (channel_->config().auto_read()) channel_->Read();
  }

 private:
  Channel* const channel_;
};

// The tail: what no handler consumed ends here, logged and released.
class ChannelPipeline::TailHandler final : public ChannelInboundHandler {
 public:
  explicit TailHandler(ChannelPipeline* pipeline) : pipeline_(pipeline) {}

  void ChannelRegistered(ChannelHandlerContext&) override {}
  void ChannelUnregistered(ChannelHandlerContext&) override {}
  void ChannelActive(ChannelHandlerContext&) override {}
  void ChannelInactive(ChannelHandlerContext&) override {}
  void ChannelReadComplete(ChannelHandlerContext&) override {}
  void ChannelWritabilityChanged(ChannelHandlerContext&) override {}
  void UserEventTriggered(ChannelHandlerContext&, Message) override {}
  void ChannelRead(ChannelHandlerContext&, Message msg) override {
    pipeline_->OnUnhandledRead(std::move(msg));
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status cause) override {
    pipeline_->OnUnhandledException(std::move(cause));
  }

 private:
  ChannelPipeline* const pipeline_;
};

// ---------------------------------------------------------------------------------
// ChannelHandlerContext.

ChannelHandlerContext::ChannelHandlerContext(ChannelPipeline* pipeline, std::string name,
                                             std::shared_ptr<ChannelHandler> handler,
                                             EventExecutor* executor, uint32_t mask)
    : pipeline_(pipeline),
      name_(std::move(name)),
      handler_(std::move(handler)),
      executor_(executor),
      mask_(mask),
      loop_affinity_(executor) {}

Channel& ChannelHandlerContext::channel() const { return pipeline_->channel(); }

EventExecutor* ChannelHandlerContext::executor() const {
  if (executor_ != nullptr) return executor_;
  return pipeline_->channel().event_loop();
}

ChannelPromise ChannelHandlerContext::NewPromise() const { return channel().NewPromise(); }

bool ChannelHandlerContext::RunsOnThisThread() const {
  EventExecutor* e = executor();
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

template <typename F, typename R>
void ChannelHandlerContext::RunOrPost(F&& fn, R&& on_rejected) {
  if (RunsOnThisThread()) {
    fn();
    return;
  }
  // The task keeps the channel (and so this context) alive until it has run.
  // A refused task is destroyed by Execute (releasing any message it carries); the
  // caller's `on_rejected` reports it.
  absl::Status status = executor()->Execute(
      [keep = channel().shared_from_this(), f = std::forward<F>(fn)]() mutable { f(); });
  if (!status.ok()) on_rejected(status);
}

void ChannelHandlerContext::HandleInboundThrow(const char* what) {
  absl::Status cause = absl::InternalError(absl::StrCat("handler '", name_, "' threw: ", what));
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

namespace {

void LogRejected(const char* what, const std::string& name, const absl::Status& status) {
  GYRE_LOG(WARNING) << what << " for handler '" << name << "' dropped: its executor refused it ("
                    << status << ")";
}

// Runs an inbound handler method, reporting a throw to its ExceptionCaught.
#define GYRE_INVOKE_INBOUND(ctx, call)                  \
  do {                                                  \
    try {                                               \
      call;                                             \
    } catch (const std::exception& e) {                 \
      (ctx)->HandleInboundThrow(e.what());              \
    } catch (...) {                                     \
      (ctx)->HandleInboundThrow("a non-std exception"); \
    }                                                   \
  } while (false)

// Runs an outbound handler method, failing its promise on a throw.
#define GYRE_INVOKE_OUTBOUND(ctx, promise, call)                                             \
  do {                                                                                       \
    try {                                                                                    \
      call;                                                                                  \
    } catch (const std::exception& e) {                                                      \
      (promise).TryFailure(absl::InternalError(                                             \
          absl::StrCat("handler '", (ctx)->name(), "' threw: ", e.what())));                 \
    } catch (...) {                                                                          \
      (promise).TryFailure(absl::InternalError(                                             \
          absl::StrCat("handler '", (ctx)->name(), "' threw a non-std exception")));         \
    }                                                                                        \
  } while (false)

}  // namespace

// Inbound invocations.

void ChannelHandlerContext::InvokeChannelRegistered() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelRegistered(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelRegistered", name_, s); });
}
void ChannelHandlerContext::InvokeChannelUnregistered() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelUnregistered(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelUnregistered", name_, s); });
}
void ChannelHandlerContext::InvokeChannelActive() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelActive(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelActive", name_, s); });
}
void ChannelHandlerContext::InvokeChannelInactive() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelInactive(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelInactive", name_, s); });
}
void ChannelHandlerContext::InvokeChannelRead(Message msg) {
  if (RunsOnThisThread()) {
    // A handler removed while this read was on its way passes it on, as Netty does.
    if (ABSL_PREDICT_FALSE(IsRemoved())) return FireChannelRead(std::move(msg));
    GYRE_INVOKE_INBOUND(this, handler_->ChannelRead(*this, std::move(msg)));
    return;
  }
  RunOrPost(
      [this, m = std::move(msg)]() mutable {
        if (IsRemoved()) return FireChannelRead(std::move(m));
        GYRE_INVOKE_INBOUND(this, handler_->ChannelRead(*this, std::move(m)));
      },
      [this](const absl::Status& s) { LogRejected("ChannelRead (message released)", name_, s); });
}
void ChannelHandlerContext::InvokeChannelReadComplete() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelReadComplete(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelReadComplete", name_, s); });
}
void ChannelHandlerContext::InvokeUserEventTriggered(Message event) {
  RunOrPost(
      [this, e = std::move(event)]() mutable {
        GYRE_INVOKE_INBOUND(this, handler_->UserEventTriggered(*this, std::move(e)));
      },
      [this](const absl::Status& s) { LogRejected("UserEventTriggered", name_, s); });
}
void ChannelHandlerContext::InvokeChannelWritabilityChanged() {
  RunOrPost([this] { GYRE_INVOKE_INBOUND(this, handler_->ChannelWritabilityChanged(*this)); },
            [this](const absl::Status& s) { LogRejected("ChannelWritabilityChanged", name_, s); });
}
void ChannelHandlerContext::InvokeExceptionCaught(absl::Status cause) {
  RunOrPost(
      [this, cause]() {
        try {
          handler_->ExceptionCaught(*this, cause);
        } catch (const std::exception& e) {
          GYRE_LOG(WARNING) << "ExceptionCaught of handler '" << name_ << "' threw " << e.what()
                            << " while handling: " << cause;
        } catch (...) {
          GYRE_LOG(WARNING) << "ExceptionCaught of handler '" << name_
                            << "' threw while handling: " << cause;
        }
      },
      [this, cause](const absl::Status& s) {
        GYRE_LOG(WARNING) << "exception for handler '" << name_ << "' not delivered (" << s
                          << "): " << cause;
      });
}

// Outbound invocations: a refused hop fails the operation's promise.

void ChannelHandlerContext::InvokeBind(const SocketAddress& local, ChannelPromise promise) {
  RunOrPost(
      [this, local, promise]() mutable {
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Bind(*this, local, promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeConnect(const SocketAddress& remote, const SocketAddress& local,
                                          ChannelPromise promise) {
  RunOrPost(
      [this, remote, local, promise]() mutable {
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Connect(*this, remote, local, promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeDisconnect(ChannelPromise promise) {
  RunOrPost(
      [this, promise]() mutable {
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Disconnect(*this, promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeClose(ChannelPromise promise) {
  RunOrPost(
      [this, promise]() mutable {
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Close(*this, promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeDeregister(ChannelPromise promise) {
  RunOrPost(
      [this, promise]() mutable {
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Deregister(*this, promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeRead() {
  RunOrPost(
      [this] {
        try {
          handler_->Read(*this);
        } catch (const std::exception& e) {
          HandleInboundThrow(e.what());
        } catch (...) {
          HandleInboundThrow("a non-std exception");
        }
      },
      [this](const absl::Status& s) { LogRejected("Read", name_, s); });
}
void ChannelHandlerContext::InvokeWrite(Message msg, ChannelPromise promise) {
  if (RunsOnThisThread()) {
    if (ABSL_PREDICT_FALSE(IsRemoved())) return Write(std::move(msg), std::move(promise));
    GYRE_INVOKE_OUTBOUND(this, promise, handler_->Write(*this, std::move(msg), promise));
    return;
  }
  RunOrPost(
      [this, m = std::move(msg), promise]() mutable {
        if (IsRemoved()) return Write(std::move(m), std::move(promise));
        GYRE_INVOKE_OUTBOUND(this, promise, handler_->Write(*this, std::move(m), promise));
      },
      [promise](const absl::Status& s) mutable { promise.TryFailure(s); });
}
void ChannelHandlerContext::InvokeFlush() {
  RunOrPost(
      [this] {
        try {
          handler_->Flush(*this);
        } catch (const std::exception& e) {
          HandleInboundThrow(e.what());
        } catch (...) {
          HandleInboundThrow("a non-std exception");
        }
      },
      [this](const absl::Status& s) { LogRejected("Flush", name_, s); });
}

// Fire* / outbound entry points of a context.

void ChannelHandlerContext::FireChannelRegistered() { NextInbound()->InvokeChannelRegistered(); }
void ChannelHandlerContext::FireChannelUnregistered() {
  NextInbound()->InvokeChannelUnregistered();
}
void ChannelHandlerContext::FireChannelActive() { NextInbound()->InvokeChannelActive(); }
void ChannelHandlerContext::FireChannelInactive() { NextInbound()->InvokeChannelInactive(); }
void ChannelHandlerContext::FireChannelRead(Message msg) {
  NextInbound()->InvokeChannelRead(std::move(msg));
}
void ChannelHandlerContext::FireChannelReadComplete() {
  NextInbound()->InvokeChannelReadComplete();
}
void ChannelHandlerContext::FireUserEventTriggered(Message event) {
  NextInbound()->InvokeUserEventTriggered(std::move(event));
}
void ChannelHandlerContext::FireChannelWritabilityChanged() {
  NextInbound()->InvokeChannelWritabilityChanged();
}
void ChannelHandlerContext::FireExceptionCaught(absl::Status cause) {
  NextInbound()->InvokeExceptionCaught(std::move(cause));
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
  PrevOutbound()->InvokeBind(local, std::move(promise));
}
void ChannelHandlerContext::Connect(const SocketAddress& remote, const SocketAddress& local,
                                    ChannelPromise promise) {
  PrevOutbound()->InvokeConnect(remote, local, std::move(promise));
}
void ChannelHandlerContext::Disconnect(ChannelPromise promise) {
  PrevOutbound()->InvokeDisconnect(std::move(promise));
}
void ChannelHandlerContext::Close(ChannelPromise promise) {
  PrevOutbound()->InvokeClose(std::move(promise));
}
void ChannelHandlerContext::Deregister(ChannelPromise promise) {
  PrevOutbound()->InvokeDeregister(std::move(promise));
}
void ChannelHandlerContext::Read() { PrevOutbound()->InvokeRead(); }
void ChannelHandlerContext::Write(Message msg, ChannelPromise promise) {
  PrevOutbound()->InvokeWrite(std::move(msg), std::move(promise));
}
void ChannelHandlerContext::Flush() { PrevOutbound()->InvokeFlush(); }
void ChannelHandlerContext::WriteAndFlush(Message msg, ChannelPromise promise) {
  ChannelHandlerContext* next = PrevOutbound();
  next->InvokeWrite(std::move(msg), std::move(promise));
  next->InvokeFlush();
}

// ---------------------------------------------------------------------------------
// ChannelPipeline.

ChannelPipeline::ChannelPipeline(Channel* channel) : channel_(channel) {
  internal::MutexLock lock(&mu_);
  contexts_.emplace_back(new ChannelHandlerContext(
      this, "head", std::make_shared<HeadHandler>(channel), nullptr, ChannelHandler::kBoth));
  head_ = contexts_.back().get();
  contexts_.emplace_back(new ChannelHandlerContext(
      this, "tail", std::make_shared<TailHandler>(this), nullptr, ChannelHandler::kInbound));
  tail_ = contexts_.back().get();
  head_->next_.store(tail_, std::memory_order_release);
  tail_->prev_.store(head_, std::memory_order_release);
  // Not shared with any thread yet.
  head_->loop_affinity_.AssumeExclusive();
  tail_->loop_affinity_.AssumeExclusive();
  head_->added_called_ = true;
  tail_->added_called_ = true;
}

ChannelPipeline::~ChannelPipeline() {
  internal::MutexLock lock(&mu_);
  for (auto& ctx : contexts_) {
    if (ctx.get() != head_ && ctx.get() != tail_ && !ctx->removed_.load()) {
      ctx->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

ChannelHandlerContext* ChannelPipeline::FindLocked(absl::string_view name) const {
  for (ChannelHandlerContext* c = head_->next_.load(std::memory_order_relaxed); c != tail_;
       c = c->next_.load(std::memory_order_relaxed)) {
    if (c->name_ == name) return c;
  }
  return nullptr;
}

std::string ChannelPipeline::GenerateNameLocked(const ChannelHandler& handler) {
  for (;;) {
    std::string name = absl::StrCat("handler#", name_counter_++);
    if (FindLocked(name) == nullptr) return name;
  }
}

EventExecutor* ChannelPipeline::ChildExecutorLocked(EventExecutorGroup* group) {
  if (group == nullptr) return nullptr;
  auto it = child_executors_.find(group);
  if (it != child_executors_.end()) return it->second;
  EventExecutor* e = group->Next();
  child_executors_[group] = e;
  return e;
}

void ChannelPipeline::LinkAfterLocked(ChannelHandlerContext* prev, ChannelHandlerContext* ctx) {
  ChannelHandlerContext* next = prev->next_.load(std::memory_order_relaxed);
  ctx->prev_.store(prev, std::memory_order_relaxed);
  ctx->next_.store(next, std::memory_order_relaxed);
  // Publish: a traversal that sees `ctx` sees it fully linked.
  next->prev_.store(ctx, std::memory_order_release);
  prev->next_.store(ctx, std::memory_order_release);
}

void ChannelPipeline::UnlinkLocked(ChannelHandlerContext* ctx) {
  ChannelHandlerContext* prev = ctx->prev_.load(std::memory_order_relaxed);
  ChannelHandlerContext* next = ctx->next_.load(std::memory_order_relaxed);
  prev->next_.store(next, std::memory_order_release);
  next->prev_.store(prev, std::memory_order_release);
  // ctx keeps its own links, so an event inside it continues along the pipeline.
  ctx->removed_.store(true, std::memory_order_release);
}

absl::Status ChannelPipeline::Add(Where where, absl::string_view base, EventExecutorGroup* group,
                                  absl::string_view name, std::shared_ptr<ChannelHandler> handler) {
  if (handler == nullptr) return absl::InvalidArgumentError("null handler");
  ChannelHandlerContext* ctx;
  bool call_now;
  {
    internal::MutexLock lock(&mu_);
    ChannelHandlerContext* base_ctx = nullptr;
    if (where == Where::kBefore || where == Where::kAfter) {
      base_ctx = FindLocked(base);
      if (base_ctx == nullptr) {
        return absl::NotFoundError(absl::StrCat("no handler named '", base, "'"));
      }
    }
    std::string actual = name.empty() ? GenerateNameLocked(*handler) : std::string(name);
    if (FindLocked(actual) != nullptr || actual == "head" || actual == "tail") {
      return absl::InvalidArgumentError(absl::StrCat("duplicate handler name '", actual, "'"));
    }
    // acq_rel: of two pipelines racing to add one non-sharable handler, one sees the other.
    if (handler->pipelines_.fetch_add(1, std::memory_order_acq_rel) > 0 && !handler->IsSharable()) {
      handler->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
      return absl::FailedPreconditionError(
          absl::StrCat("handler for '", actual, "' is not sharable and already in a pipeline"));
    }
    uint32_t mask = handler->mask();
    contexts_.emplace_back(new ChannelHandlerContext(this, std::move(actual), std::move(handler),
                                                     ChildExecutorLocked(group), mask));
    ctx = contexts_.back().get();
    switch (where) {
      case Where::kFirst:
        LinkAfterLocked(head_, ctx);
        break;
      case Where::kLast:
        LinkAfterLocked(tail_->prev_.load(std::memory_order_relaxed), ctx);
        break;
      case Where::kBefore:
        LinkAfterLocked(base_ctx->prev_.load(std::memory_order_relaxed), ctx);
        break;
      case Where::kAfter:
        LinkAfterLocked(base_ctx, ctx);
        break;
    }
    call_now = registered_;
    if (!call_now) pending_added_.push_back(ctx);
  }
  if (call_now) CallHandlerAdded(ctx);
  return absl::OkStatus();
}

absl::Status ChannelPipeline::AddFirst(absl::string_view name, std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kFirst, {}, nullptr, name, std::move(h));
}
absl::Status ChannelPipeline::AddLast(absl::string_view name, std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kLast, {}, nullptr, name, std::move(h));
}
absl::Status ChannelPipeline::AddFirst(EventExecutorGroup* group, absl::string_view name,
                                       std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kFirst, {}, group, name, std::move(h));
}
absl::Status ChannelPipeline::AddLast(EventExecutorGroup* group, absl::string_view name,
                                      std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kLast, {}, group, name, std::move(h));
}
absl::Status ChannelPipeline::AddBefore(absl::string_view base, absl::string_view name,
                                        std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kBefore, base, nullptr, name, std::move(h));
}
absl::Status ChannelPipeline::AddAfter(absl::string_view base, absl::string_view name,
                                       std::shared_ptr<ChannelHandler> h) {
  return Add(Where::kAfter, base, nullptr, name, std::move(h));
}

absl::StatusOr<std::shared_ptr<ChannelHandler>> ChannelPipeline::Remove(absl::string_view name) {
  ChannelHandlerContext* ctx;
  {
    internal::MutexLock lock(&mu_);
    ctx = FindLocked(name);
    if (ctx == nullptr) return absl::NotFoundError(absl::StrCat("no handler named '", name, "'"));
    UnlinkLocked(ctx);
    for (auto it = pending_added_.begin(); it != pending_added_.end(); ++it) {
      if (*it == ctx) {
        pending_added_.erase(it);
        break;
      }
    }
    ctx->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
  }
  CallHandlerRemoved(ctx);
  return ctx->handler_;
}

absl::Status ChannelPipeline::Remove(ChannelHandler* handler) {
  ChannelHandlerContext* ctx = Context(handler);
  if (ctx == nullptr) return absl::NotFoundError("handler not in this pipeline");
  return Remove(ctx->name()).status();
}

absl::StatusOr<std::shared_ptr<ChannelHandler>> ChannelPipeline::Replace(
    absl::string_view old_name, absl::string_view new_name, std::shared_ptr<ChannelHandler> handler) {
  if (handler == nullptr) return absl::InvalidArgumentError("null handler");
  ChannelHandlerContext* old_ctx;
  ChannelHandlerContext* ctx;
  bool call_now;
  {
    internal::MutexLock lock(&mu_);
    old_ctx = FindLocked(old_name);
    if (old_ctx == nullptr) {
      return absl::NotFoundError(absl::StrCat("no handler named '", old_name, "'"));
    }
    std::string actual = new_name.empty() ? std::string(old_name) : std::string(new_name);
    if (actual != old_name && (FindLocked(actual) != nullptr || actual == "head" || actual == "tail")) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate handler name '", actual, "'"));
    }
    if (handler->pipelines_.fetch_add(1, std::memory_order_acq_rel) > 0 && !handler->IsSharable()) {
      handler->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
      return absl::FailedPreconditionError("handler is not sharable and already in a pipeline");
    }
    uint32_t mask = handler->mask();
    contexts_.emplace_back(new ChannelHandlerContext(this, std::move(actual), std::move(handler),
                                                     old_ctx->executor_, mask));
    ctx = contexts_.back().get();
    LinkAfterLocked(old_ctx, ctx);
    UnlinkLocked(old_ctx);
    old_ctx->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
    call_now = registered_;
    if (!call_now) {
      for (auto& p : pending_added_) {
        if (p == old_ctx) p = nullptr;
      }
      pending_added_.push_back(ctx);
    }
  }
  // As Netty: the new handler is added before the old one is told it was removed.
  if (call_now) CallHandlerAdded(ctx);
  CallHandlerRemoved(old_ctx);
  return old_ctx->handler_;
}

ChannelHandler* ChannelPipeline::Get(absl::string_view name) const {
  ChannelHandlerContext* ctx = Context(name);
  return ctx != nullptr ? ctx->handler() : nullptr;
}

ChannelHandlerContext* ChannelPipeline::Context(absl::string_view name) const {
  internal::MutexLock lock(&mu_);
  return FindLocked(name);
}

ChannelHandlerContext* ChannelPipeline::Context(const ChannelHandler* handler) const {
  internal::MutexLock lock(&mu_);
  for (ChannelHandlerContext* c = head_->next_.load(std::memory_order_relaxed); c != tail_;
       c = c->next_.load(std::memory_order_relaxed)) {
    if (c->handler() == handler) return c;
  }
  return nullptr;
}

std::vector<std::string> ChannelPipeline::Names() const {
  internal::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (ChannelHandlerContext* c = head_->next_.load(std::memory_order_relaxed); c != tail_;
       c = c->next_.load(std::memory_order_relaxed)) {
    names.push_back(c->name_);
  }
  return names;
}

void ChannelPipeline::CallHandlerAdded(ChannelHandlerContext* ctx) {
  ctx->RunOrPost(
      [ctx] {
        ctx->loop_affinity_.AssertOnLoop();  // run on the context's executor
        if (ctx->added_called_ || ctx->IsRemoved()) return;
        ctx->added_called_ = true;
        try {
          ctx->handler_->HandlerAdded(*ctx);
        } catch (const std::exception& e) {
          ctx->HandleInboundThrow(e.what());
        } catch (...) {
          ctx->HandleInboundThrow("a non-std exception");
        }
      },
      [ctx](const absl::Status& s) { LogRejected("HandlerAdded", ctx->name_, s); });
}

void ChannelPipeline::CallHandlerRemoved(ChannelHandlerContext* ctx) {
  ctx->RunOrPost(
      [ctx] {
        ctx->loop_affinity_.AssertOnLoop();  // run on the context's executor
        if (!ctx->added_called_) return;  // never told it was added
        try {
          ctx->handler_->HandlerRemoved(*ctx);
        } catch (const std::exception& e) {
          GYRE_LOG(WARNING) << "HandlerRemoved of '" << ctx->name_ << "' threw: " << e.what();
        } catch (...) {
          GYRE_LOG(WARNING) << "HandlerRemoved of '" << ctx->name_ << "' threw";
        }
      },
      [ctx](const absl::Status& s) { LogRejected("HandlerRemoved", ctx->name_, s); });
}

void ChannelPipeline::InvokeHandlerAddedIfNeeded() {
  std::vector<ChannelHandlerContext*> pending;
  {
    internal::MutexLock lock(&mu_);
    if (registered_) return;
    registered_ = true;
    pending.swap(pending_added_);
  }
  for (ChannelHandlerContext* ctx : pending) {
    if (ctx != nullptr && !ctx->IsRemoved()) CallHandlerAdded(ctx);
  }
}

void ChannelPipeline::SetUnhandledHooks(absl::AnyInvocable<void(Message)> on_read,
                                        absl::AnyInvocable<void(absl::Status)> on_exception) {
  unhandled_read_hook_ = std::move(on_read);
  unhandled_exception_hook_ = std::move(on_exception);
}

void ChannelPipeline::OnUnhandledRead(Message msg) {
  if (unhandled_read_hook_) {
    unhandled_read_hook_(std::move(msg));
    return;
  }
  discarded_reads_.fetch_add(1, std::memory_order_relaxed);
  GYRE_LOG(INFO) << "channel " << channel_->id().AsShortText()
                 << ": an inbound message of type " << msg.type_name()
                 << " reached the end of the pipeline; released. Add a handler that consumes it.";
  msg.Reset();
}

void ChannelPipeline::OnUnhandledException(absl::Status cause) {
  if (unhandled_exception_hook_) {
    unhandled_exception_hook_(std::move(cause));
    return;
  }
  unhandled_exceptions_.fetch_add(1, std::memory_order_relaxed);
  GYRE_LOG(WARNING) << "channel " << channel_->id().AsShortText()
                    << ": an exception reached the end of the pipeline (no handler handled it): "
                    << cause;
}

int64_t ChannelPipeline::DiscardedInboundMessages() const {
  return discarded_reads_.load(std::memory_order_relaxed);
}
int64_t ChannelPipeline::UnhandledExceptions() const {
  return unhandled_exceptions_.load(std::memory_order_relaxed);
}

void ChannelPipeline::FireChannelRegistered() { head_->InvokeChannelRegistered(); }
void ChannelPipeline::FireChannelUnregistered() {
  head_->InvokeChannelUnregistered();
  if (!channel_->IsOpen()) Destroy();
}

void ChannelPipeline::Destroy() {
  std::vector<ChannelHandlerContext*> removed;
  {
    internal::MutexLock lock(&mu_);
    for (ChannelHandlerContext* c = tail_->prev_.load(std::memory_order_relaxed); c != head_;) {
      ChannelHandlerContext* prev = c->prev_.load(std::memory_order_relaxed);
      UnlinkLocked(c);
      c->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
      removed.push_back(c);
      c = prev;
    }
    for (ChannelHandlerContext*& p : pending_added_) p = nullptr;
  }
  // Tail to head; an event still inside a removed context goes on along its own links.
  for (ChannelHandlerContext* ctx : removed) CallHandlerRemoved(ctx);
}
void ChannelPipeline::FireChannelActive() { head_->InvokeChannelActive(); }
void ChannelPipeline::FireChannelInactive() { head_->InvokeChannelInactive(); }
void ChannelPipeline::FireChannelRead(Message msg) { head_->InvokeChannelRead(std::move(msg)); }
void ChannelPipeline::FireChannelReadComplete() { head_->InvokeChannelReadComplete(); }
void ChannelPipeline::FireUserEventTriggered(Message event) {
  head_->InvokeUserEventTriggered(std::move(event));
}
void ChannelPipeline::FireChannelWritabilityChanged() {
  head_->InvokeChannelWritabilityChanged();
}
void ChannelPipeline::FireExceptionCaught(absl::Status cause) {
  head_->InvokeExceptionCaught(std::move(cause));
}

ChannelFuture ChannelPipeline::Bind(const SocketAddress& local) { return tail_->Bind(local); }
ChannelFuture ChannelPipeline::Connect(const SocketAddress& remote, const SocketAddress& local) {
  return tail_->Connect(remote, local);
}
ChannelFuture ChannelPipeline::Disconnect() { return tail_->Disconnect(); }
ChannelFuture ChannelPipeline::Close() { return tail_->Close(); }
ChannelFuture ChannelPipeline::Deregister() { return tail_->Deregister(); }
void ChannelPipeline::Read() { tail_->Read(); }
ChannelFuture ChannelPipeline::Write(Message msg) { return tail_->Write(std::move(msg)); }
void ChannelPipeline::Flush() { tail_->Flush(); }
ChannelFuture ChannelPipeline::WriteAndFlush(Message msg) {
  return tail_->WriteAndFlush(std::move(msg));
}
void ChannelPipeline::Write(Message msg, ChannelPromise promise) {
  tail_->Write(std::move(msg), std::move(promise));
}
void ChannelPipeline::WriteAndFlush(Message msg, ChannelPromise promise) {
  tail_->WriteAndFlush(std::move(msg), std::move(promise));
}
void ChannelPipeline::Close(ChannelPromise promise) { tail_->Close(std::move(promise)); }

}  // namespace gyre
