#include "gyre/channel/channel_pipeline.h"

#include <exception>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"

#include "absl/strings/str_cat.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/event_executor_group.h"
#include "gyre/concurrent/immediate_event_executor.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

// ---------------------------------------------------------------------------------
// Head and tail.

// The head: outbound operations reach the transport here; inbound events start here.
class ChannelPipeline::HeadHandler final : public ChannelDuplexHandler {
 public:
  HeadHandler(ChannelPipeline* pipeline, Channel* channel)
      : pipeline_(pipeline), channel_(channel) {}

  // The transport takes writes with the void promise.
  bool AcceptsVoidPromise() const override { return true; }

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

  // On a closed channel (not merely deregistered), the pipeline is torn down once the
  // event has passed on (B97, B98).
  void ChannelUnregistered(ChannelHandlerContext& ctx) override {
    ctx.FireChannelUnregistered();
    if (!channel_->IsOpen()) pipeline_->Destroy();
  }
  void ChannelActive(ChannelHandlerContext& ctx) override {
    ctx.FireChannelActive();
    if (channel_->config().auto_read()) channel_->Read();
  }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override {
    ctx.FireChannelReadComplete();
    if (!channel_->config().auto_read()) return;
    // The next read, from the tail. With no outbound handler between the tail and this
    // context, that read would come straight back here: begin it without the walk.
    if (pipeline_->tail_->PrevOutbound() == &ctx) {
      channel_->unsafe().BeginRead();
    } else {
      channel_->Read();
    }
  }

 private:
  ChannelPipeline* const pipeline_;
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
  head_ = NewContextLocked("head", std::make_shared<HeadHandler>(this, channel), nullptr,
                           ChannelHandler::kBoth);
  tail_ = NewContextLocked("tail", std::make_shared<TailHandler>(this), nullptr,
                           ChannelHandler::kInbound);
  head_->next_.store(tail_, std::memory_order_release);
  tail_->prev_.store(head_, std::memory_order_release);
  // Not shared with any thread yet.
  head_->loop_affinity_.AssumeExclusive();
  tail_->loop_affinity_.AssumeExclusive();
  head_->added_called_ = true;
  tail_->added_called_ = true;
}

ChannelPipeline::~ChannelPipeline() {
  // Nothing else refers to the pipeline any more: a queued event keeps the channel (and
  // so the pipeline) alive, and a grace period's task holds it weakly and does nothing
  // once it is gone.
  absl::flat_hash_set<ChannelHandlerContext*> contexts;
  {
    internal::MutexLock lock(&mu_);
    contexts.swap(contexts_);
  }
  for (ChannelHandlerContext* ctx : contexts) {
    if (ctx != head_ && ctx != tail_ && !ctx->removed_.load(std::memory_order_acquire)) {
      ctx->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
    }
    delete ctx;
  }
}

ChannelHandlerContext* ChannelPipeline::NewContextLocked(std::string name,
                                                         std::shared_ptr<ChannelHandler> handler,
                                                         EventExecutor* executor, uint32_t mask) {
  auto* ctx = new ChannelHandlerContext(this, std::move(name), std::move(handler), executor, mask);
  contexts_.insert(ctx);
  return ctx;
}

ChannelHandlerContext* ChannelPipeline::FindLocked(absl::string_view name) const {
  for (ChannelHandlerContext* c = head_->next_.load(std::memory_order_relaxed); c != tail_;
       c = c->next_.load(std::memory_order_relaxed)) {
    if (c->name_ == name) return c;
  }
  return nullptr;
}

ChannelHandlerContext* ChannelPipeline::FindLocked(const ChannelHandler* handler) const {
  for (ChannelHandlerContext* c = head_->next_.load(std::memory_order_relaxed); c != tail_;
       c = c->next_.load(std::memory_order_relaxed)) {
    if (c->handler() == handler) return c;
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
  // An inline executor runs a handler on whichever thread calls it: no task boundary
  // there to end a grace period at.
  if (dynamic_cast<ImmediateEventExecutor*>(e) != nullptr) reclaim_disabled_ = true;
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
  // ctx keeps its own links, so an event inside it continues along the pipeline; the
  // contexts they point at stay alive as long as ctx does.
  prev->Ref();
  next->Ref();
  ctx->removed_.store(true, std::memory_order_release);
}

void ChannelPipeline::Retire(absl::Span<ChannelHandlerContext* const> contexts) {
  {
    internal::MutexLock lock(&mu_);
    retiring_.insert(retiring_.end(), contexts.begin(), contexts.end());
  }
  StartGracePeriod();
}

// The state of one grace period, shared by its tasks (one per executor, in turn).
struct ChannelPipeline::GracePeriod {
  // The pinned executors, then the channel's event loop: the period ends on the loop, so
  // contexts (and handlers) are freed there and the channel is let go there.
  std::vector<EventExecutor*> executors;
  std::vector<ChannelHandlerContext*> batch;
  size_t next = 0;
};

void ChannelPipeline::StartGracePeriod() {
  std::vector<EventExecutor*> executors;
  std::vector<ChannelHandlerContext*> batch;
  {
    internal::MutexLock lock(&mu_);
    if (grace_period_running_ || retiring_.empty() || reclaim_disabled_ || !registered_) return;
    EventLoop* loop = channel_->event_loop();
    if (loop == nullptr) return;
    grace_period_running_ = true;
    batch.swap(retiring_);
    for (const auto& [group, executor] : child_executors_) executors.push_back(executor);
    executors.push_back(loop);
  }
  auto period = std::make_shared<GracePeriod>();
  period->executors = std::move(executors);
  period->batch = std::move(batch);
  Visit(std::move(period));
}

void ChannelPipeline::Visit(std::shared_ptr<GracePeriod> period) {
  if (period->next == period->executors.size()) {
    // The channel may have moved to another loop meanwhile: then go round again.
    EndGracePeriod(*period, channel_->event_loop() == period->executors.back());
    return;
  }
  EventExecutor* executor = period->executors[period->next++];
  // Always a task, also on the executor we are on: the task running now may itself
  // be inside a removed context. The task does not keep the channel (owner of this
  // pipeline): a channel dropped meanwhile frees every context with its pipeline, and a
  // task queued on a loop the channel owns (an embedded one) must not keep it alive.
  absl::Status status = executor->Execute(
      [this, period, weak = channel_->weak_from_this()]() mutable {
        if (std::shared_ptr<Channel> keep = weak.lock()) Visit(std::move(period));
      });
  if (!status.ok()) EndGracePeriod(*period, /*completed=*/false);
}

void ChannelPipeline::EndGracePeriod(GracePeriod& period, bool completed) {
  if (completed) {
    for (ChannelHandlerContext* ctx : period.batch) Unref(ctx);
    period.batch.clear();
  }
  {
    internal::MutexLock lock(&mu_);
    grace_period_running_ = false;
    // Not completed (an executor refused the task, or the loop changed): the batch
    // waits for the next removal, or for the pipeline's destruction.
    retiring_.insert(retiring_.end(), period.batch.begin(), period.batch.end());
    if (!completed) return;
  }
  StartGracePeriod();  // for the contexts removed meanwhile
}

void ChannelPipeline::Unref(ChannelHandlerContext* ctx) {
  if (ctx->refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Freeing a removed context drops its references to its neighbours, which may free them.
  absl::InlinedVector<ChannelHandlerContext*, 4> to_free = {ctx};
  while (!to_free.empty()) {
    ChannelHandlerContext* c = to_free.back();
    to_free.pop_back();
    ChannelHandlerContext* prev = c->prev_.load(std::memory_order_relaxed);
    ChannelHandlerContext* next = c->next_.load(std::memory_order_relaxed);
    {
      internal::MutexLock lock(&mu_);
      contexts_.erase(c);
    }
    delete c;
    for (ChannelHandlerContext* n : {prev, next}) {
      if (n->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) to_free.push_back(n);
    }
  }
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
    ctx = NewContextLocked(std::move(actual), std::move(handler), ChildExecutorLocked(group), mask);
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
    // A concurrent Remove must not free it before HandlerAdded is called below.
    if (call_now) ctx->Ref();
  }
  if (call_now) {
    CallHandlerAdded(ctx);
    Unref(ctx);
  }
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

void ChannelPipeline::RemoveLocked(ChannelHandlerContext* ctx) {
  UnlinkLocked(ctx);
  for (auto it = pending_added_.begin(); it != pending_added_.end(); ++it) {
    if (*it == ctx) {
      pending_added_.erase(it);
      break;
    }
  }
  ctx->handler_->pipelines_.fetch_sub(1, std::memory_order_acq_rel);
}

absl::StatusOr<std::shared_ptr<ChannelHandler>> ChannelPipeline::Remove(absl::string_view name) {
  ChannelHandlerContext* ctx;
  {
    internal::MutexLock lock(&mu_);
    ctx = FindLocked(name);
    if (ctx == nullptr) return absl::NotFoundError(absl::StrCat("no handler named '", name, "'"));
    RemoveLocked(ctx);
  }
  // ctx is alive until Retire hands over its membership reference.
  std::shared_ptr<ChannelHandler> handler = ctx->handler_;
  CallHandlerRemoved(ctx);
  Retire({ctx});
  return handler;
}

absl::Status ChannelPipeline::Remove(ChannelHandler* handler) {
  ChannelHandlerContext* ctx;
  {
    internal::MutexLock lock(&mu_);
    ctx = FindLocked(handler);
    if (ctx == nullptr) return absl::NotFoundError("handler not in this pipeline");
    RemoveLocked(ctx);
  }
  CallHandlerRemoved(ctx);
  Retire({ctx});
  return absl::OkStatus();
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
    ctx = NewContextLocked(std::move(actual), std::move(handler), old_ctx->executor_, mask);
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
    if (call_now) ctx->Ref();  // as in Add
  }
  std::shared_ptr<ChannelHandler> old_handler = old_ctx->handler_;
  // As Netty: the new handler is added before the old one is told it was removed.
  if (call_now) {
    CallHandlerAdded(ctx);
    Unref(ctx);
  }
  CallHandlerRemoved(old_ctx);
  Retire({old_ctx});
  return old_handler;
}

ChannelHandler* ChannelPipeline::Get(absl::string_view name) const {
  internal::MutexLock lock(&mu_);
  ChannelHandlerContext* ctx = FindLocked(name);
  return ctx != nullptr ? ctx->handler() : nullptr;
}

ChannelHandlerContext* ChannelPipeline::Context(absl::string_view name) const {
  internal::MutexLock lock(&mu_);
  return FindLocked(name);
}

ChannelHandlerContext* ChannelPipeline::Context(const ChannelHandler* handler) const {
  internal::MutexLock lock(&mu_);
  return FindLocked(handler);
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
    for (ChannelHandlerContext* ctx : pending) {
      if (ctx != nullptr) ctx->Ref();  // as in Add
    }
  }
  for (ChannelHandlerContext* ctx : pending) {
    if (ctx == nullptr) continue;
    if (!ctx->IsRemoved()) CallHandlerAdded(ctx);
    Unref(ctx);
  }
  StartGracePeriod();  // for handlers removed before registration
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
int64_t ChannelPipeline::ContextCount() const {
  internal::MutexLock lock(&mu_);
  return static_cast<int64_t>(contexts_.size());
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
  Retire(removed);
}

}  // namespace gyre
