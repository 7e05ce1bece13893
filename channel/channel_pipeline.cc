#include "gyre/channel/channel_pipeline.h"

#include <exception>
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

void ChannelPipeline::CallHandlerAdded(ChannelHandlerContext* ctx) { ctx->InvokeHandlerAdded(); }

void ChannelPipeline::CallHandlerRemoved(ChannelHandlerContext* ctx) {
  ctx->InvokeHandlerRemoved();
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
