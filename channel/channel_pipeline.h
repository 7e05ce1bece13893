// ChannelPipeline: the chain of handlers a channel's events and operations go through.
//
//   head <-> [decoder] <-> [business] <-> tail
//   inbound events (read, active, ...)  : head -> tail
//   outbound operations (write, close...): tail -> head -> transport
//
//   pipeline.AddLast("decoder", std::make_shared<LineDecoder>()).IgnoreError();
//   pipeline.AddLast(blocking_group, "db", std::make_shared<DbHandler>());  // runs there
//   pipeline.Replace("decoder", "decoder2", std::make_shared<OtherDecoder>());
//
// The head hands outbound operations to the channel's transport; the tail logs and
// releases an inbound message or exception nobody handled (never a silent leak).
//
// Modifications (Add*, Remove, Replace) may happen from any thread, also while events
// flow: they are serialized by a mutex and linked in with release stores; an event
// already past a point keeps going. HandlerAdded / HandlerRemoved run on the handler's
// executor; for a channel not registered yet, HandlerAdded waits for registration.
// Names are unique within a pipeline; an empty name gets a generated one.
//
// Thread safety: every method is thread-safe, except SetUnhandledHooks, which must be
// called before the channel is registered (before any event flows).
// Ownership: owned by its channel; holds its handlers by shared_ptr. A removed handler's
// context (and with it the pipeline's reference to the handler) is freed once no event
// can reach it any more: after its HandlerRemoved, after every executor the pipeline's
// handlers run on (the channel's loop and each pinned executor) has finished the task it
// was running when the handler was removed, and after the last event queued to it or
// to a removed neighbour that leads to it has passed. So a channel that adds and removes
// a handler per request stays the same size. Until then an event on its way through a
// removed handler passes on, as in Netty. (A pipeline with a handler pinned to an
// executor that runs tasks inline, such as ImmediateEventExecutor, keeps removed contexts
// until it is destroyed: there is no task boundary to wait for.)
#ifndef GYRE_CHANNEL_CHANNEL_PIPELINE_H_
#define GYRE_CHANNEL_CHANNEL_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gyre/channel/channel_future.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_inbound_invoker.h"
#include "gyre/channel/channel_outbound_invoker.h"
#include "gyre/channel/message.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {

class Channel;
class EventExecutor;
class EventExecutorGroup;

class ChannelPipeline final : public ChannelInboundInvoker<ChannelPipeline>,
                              public ChannelOutboundInvoker<ChannelPipeline> {
 public:
  explicit ChannelPipeline(Channel* channel);
  ChannelPipeline(const ChannelPipeline&) = delete;
  ChannelPipeline& operator=(const ChannelPipeline&) = delete;
  ~ChannelPipeline();

  Channel& channel() const { return *channel_; }

  // Adds `handler` named `name`. Returns InvalidArgument for a duplicate name or a null
  // handler, FailedPrecondition for a non-sharable handler already in a pipeline, and
  // NotFound when `base` does not exist; nothing changes then. The `group` forms run
  // the handler on one executor of `group` (the same one for every handler of this
  // pipeline added with that group).
  absl::Status AddFirst(absl::string_view name, std::shared_ptr<ChannelHandler> handler);
  absl::Status AddLast(absl::string_view name, std::shared_ptr<ChannelHandler> handler);
  absl::Status AddFirst(EventExecutorGroup* group, absl::string_view name,
                        std::shared_ptr<ChannelHandler> handler);
  absl::Status AddLast(EventExecutorGroup* group, absl::string_view name,
                       std::shared_ptr<ChannelHandler> handler);
  absl::Status AddBefore(absl::string_view base, absl::string_view name,
                         std::shared_ptr<ChannelHandler> handler);
  absl::Status AddAfter(absl::string_view base, absl::string_view name,
                        std::shared_ptr<ChannelHandler> handler);

  // Removes the named handler and returns it; NotFound if absent.
  absl::StatusOr<std::shared_ptr<ChannelHandler>> Remove(absl::string_view name);
  // Removes `handler` (by identity); NotFound if absent.
  absl::Status Remove(ChannelHandler* handler);
  // Puts `handler` (named `new_name`, or `old_name` if empty) where `old_name` was and
  // returns the old handler. Errors as Add* and Remove.
  absl::StatusOr<std::shared_ptr<ChannelHandler>> Replace(absl::string_view old_name,
                                                          absl::string_view new_name,
                                                          std::shared_ptr<ChannelHandler> handler);

  // The named handler / context, or null. A context pointer stays valid until its
  // handler's HandlerRemoved has returned (see the class comment).
  ChannelHandler* Get(absl::string_view name) const;
  ChannelHandlerContext* Context(absl::string_view name) const;
  ChannelHandlerContext* Context(const ChannelHandler* handler) const;
  // Handler names, head to tail (without head and tail).
  std::vector<std::string> Names() const;

  // Inbound events (ChannelInboundInvoker) enter at the head; FireChannelUnregistered on
  // a closed channel (not merely deregistered, which it may survive to register again)
  // then tears the pipeline down as Netty does (B97, B98): every handler is removed, and
  // its HandlerRemoved runs once, tail to head, each on its handler's executor.
  // Outbound operations (ChannelOutboundInvoker) enter at the tail.
  //
  // A read starts at the context after the head (which passes reads on unchanged): one
  // hop fewer per read.
  void FireChannelRead(Message msg) { head_->FireChannelRead(std::move(msg)); }

  // Called by the channel on its event loop when it is first registered: runs the
  // HandlerAdded calls that waited for registration. Loop thread only.
  void InvokeHandlerAddedIfNeeded();

  // Replaces what the tail does with unhandled messages and exceptions (default: log and
  // release). For test channels that collect them. Call before events flow.
  void SetUnhandledHooks(absl::AnyInvocable<void(Message)> on_read,
                         absl::AnyInvocable<void(absl::Status)> on_exception);

  // Counts for tests and diagnostics.
  int64_t DiscardedInboundMessages() const;
  int64_t UnhandledExceptions() const;
  // Contexts held, head and tail included: those of the handlers in the pipeline and
  // those of removed handlers not freed yet.
  int64_t ContextCount() const;

 private:
  friend class ChannelHandlerContext;
  friend class ChannelInboundInvoker<ChannelPipeline>;
  friend class ChannelOutboundInvoker<ChannelPipeline>;
  class HeadHandler;

  ChannelHandlerContext& InboundTarget() const { return *head_; }
  ChannelHandlerContext& OutboundTarget() const { return *tail_; }

  class TailHandler;

  enum class Where { kFirst, kLast, kBefore, kAfter };
  absl::Status Add(Where where, absl::string_view base, EventExecutorGroup* group,
                   absl::string_view name, std::shared_ptr<ChannelHandler> handler);
  ChannelHandlerContext* FindLocked(absl::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChannelHandlerContext* FindLocked(const ChannelHandler* handler) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string GenerateNameLocked(const ChannelHandler& handler) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  EventExecutor* ChildExecutorLocked(EventExecutorGroup* group) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LinkAfterLocked(ChannelHandlerContext* prev, ChannelHandlerContext* ctx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `ctx` out of the chain; it keeps its own links (and references to the contexts
  // they point at), so an event inside it goes on.
  void UnlinkLocked(ChannelHandlerContext* ctx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ChannelHandlerContext* NewContextLocked(std::string name, std::shared_ptr<ChannelHandler> handler,
                                          EventExecutor* executor, uint32_t mask)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reclaiming removed contexts. Retire() hands over the membership reference of an
  // unlinked context whose HandlerRemoved has been called; a grace period then visits
  // every executor of the pipeline in turn (a task on each), after which no executor can
  // still hold a pointer it read from a link before the unlink, and drops those
  // references. Unref() frees a context at zero, and with it its references to its
  // neighbours.
  struct GracePeriod;
  void Retire(absl::Span<ChannelHandlerContext* const> contexts);
  void StartGracePeriod();
  void Visit(std::shared_ptr<GracePeriod> period);
  void EndGracePeriod(GracePeriod& period, bool completed);
  void Unref(ChannelHandlerContext* ctx);
  // Unlinks `ctx` for Remove / Replace: no HandlerAdded for it any more.
  void RemoveLocked(ChannelHandlerContext* ctx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes every handler (tail to head) and calls their HandlerRemoved.
  void Destroy();
  void CallHandlerAdded(ChannelHandlerContext* ctx);
  void CallHandlerRemoved(ChannelHandlerContext* ctx);
  void OnUnhandledRead(Message msg);
  void OnUnhandledException(absl::Status cause);

  Channel* const channel_;
  mutable internal::Mutex mu_;
  // Every context not freed yet (in the chain or removed); the pipeline owns them.
  absl::flat_hash_set<ChannelHandlerContext*> contexts_ ABSL_GUARDED_BY(mu_);
  // Removed contexts waiting for the next grace period, whether one is running, and
  // whether reclaiming is off (a handler runs on an inline executor).
  std::vector<ChannelHandlerContext*> retiring_ ABSL_GUARDED_BY(mu_);
  bool grace_period_running_ ABSL_GUARDED_BY(mu_) = false;
  bool reclaim_disabled_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<EventExecutorGroup*, EventExecutor*> child_executors_ ABSL_GUARDED_BY(mu_);
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ChannelHandlerContext*> pending_added_ ABSL_GUARDED_BY(mu_);
  int64_t name_counter_ ABSL_GUARDED_BY(mu_) = 0;
  ChannelHandlerContext* head_;
  ChannelHandlerContext* tail_;
  absl::AnyInvocable<void(Message)> unhandled_read_hook_;
  absl::AnyInvocable<void(absl::Status)> unhandled_exception_hook_;
  // Relaxed: statistics.
  std::atomic<int64_t> discarded_reads_{0};
  std::atomic<int64_t> unhandled_exceptions_{0};
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_CHANNEL_PIPELINE_H_
