#include "gyre/transport/oio/oio_event_loop_group.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

absl::StatusOr<std::unique_ptr<OioEventLoopGroup>> OioEventLoopGroup::Create(
    int max_channels, GroupOptions options) {
  if (max_channels < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_channels must be >= 0, got ", max_channels));
  }
  std::unique_ptr<OioEventLoopGroup> group(new OioEventLoopGroup(max_channels, std::move(options)));
  // Standalone (no parent): it never takes a slot. Never started: shutting it down
  // terminates it here, on this thread.
  GYRE_ASSIGN_OR_RETURN(group->refusing_loop_, ThreadPerChannelEventLoop::Create(nullptr, {}));
  group->refusing_loop_->ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration())
      .Await()
      .IgnoreError();
  return group;
}

OioEventLoopGroup::OioEventLoopGroup(int max_channels, GroupOptions options)
    : max_channels_(max_channels), options_(std::move(options)) {
  thread_factory_ = options_.thread_factory;
  if (thread_factory_ == nullptr) {
    thread_factory_ = std::make_shared<DefaultThreadFactory>(
        options_.name.empty() ? std::string("oio") : options_.name);
  }
}

OioEventLoopGroup::~OioEventLoopGroup() {
  ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  std::vector<std::shared_ptr<ThreadPerChannelEventLoop>> all;
  {
    internal::MutexLock lock(&mu_);
    for (auto& [ptr, loop] : live_) all.push_back(loop);
    for (auto& loop : terminated_) all.push_back(loop);
  }
  // Outside mu_: a terminating loop's listener takes it.
  for (auto& loop : all) loop->ShutdownAndJoinForGroup();
  internal::MutexLock lock(&mu_);
  live_.clear();
  terminated_.clear();
}

absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> OioEventLoopGroup::NewLoop() {
  std::vector<std::shared_ptr<ThreadPerChannelEventLoop>> reaped;
  {
    internal::MutexLock lock(&mu_);
    // Terminated loops nobody else refers to any more are joined and freed here.
    for (size_t i = 0; i < terminated_.size();) {
      if (terminated_[i].use_count() == 1) {
        reaped.push_back(std::move(terminated_[i]));
        terminated_[i] = std::move(terminated_.back());
        terminated_.pop_back();
      } else {
        ++i;
      }
    }
  }
  reaped.clear();  // outside mu_: joins the (finished) threads
  ExecutorOptions child;
  child.name = options_.name.empty() ? "oio" : options_.name;
  child.thread_factory = thread_factory_;
  child.max_pending_tasks = options_.max_pending_tasks;
  child.rejected_handler = options_.rejected_handler;
  child.ticker = options_.ticker;
  GYRE_ASSIGN_OR_RETURN(std::shared_ptr<ThreadPerChannelEventLoop> loop,
                        ThreadPerChannelEventLoop::Create(this, std::move(child)));
  bool shutting_down;
  absl::Duration quiet, timeout;
  {
    internal::MutexLock lock(&mu_);
    live_.emplace(loop.get(), loop);
    shutting_down = IsShuttingDown();
    quiet = quiet_period_;
    timeout = timeout_;
  }
  ThreadPerChannelEventLoop* raw = loop.get();
  // Runs on the loop's thread as it terminates (or here, for a loop that never
  // started); the group's destructor joins every loop first, so `this` is alive.
  loop->TerminationFuture().AddListener([this, raw](const Future<void>&) { OnLoopTerminated(raw); });
  if (shutting_down) loop->ShutdownGracefully(quiet, timeout);
  return loop;
}

void OioEventLoopGroup::OnLoopTerminated(ThreadPerChannelEventLoop* loop) {
  {
    internal::MutexLock lock(&mu_);
    auto it = live_.find(loop);
    if (it != live_.end()) {
      terminated_.push_back(std::move(it->second));
      live_.erase(it);
    }
  }
  MaybeTerminate();
}

void OioEventLoopGroup::MaybeTerminate() {
  if (!IsShuttingDown()) return;
  {
    internal::MutexLock lock(&mu_);
    if (!live_.empty()) return;
  }
  termination_.TrySuccess();
}

EventLoop* OioEventLoopGroup::NextEventLoop() {
  absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> loop = NewLoop();
  if (!loop.ok()) {
    GYRE_LOG(WARNING) << "OioEventLoopGroup: cannot make a loop: " << loop.status();
    return refusing_loop_.get();
  }
  // The group keeps it (in live_) until it terminates.
  return loop->get();
}

std::vector<EventExecutor*> OioEventLoopGroup::executors() const {
  internal::MutexLock lock(&mu_);
  std::vector<EventExecutor*> out;
  out.reserve(live_.size());
  for (const auto& [ptr, loop] : live_) out.push_back(ptr);
  return out;
}

absl::Status OioEventLoopGroup::AcquireSlot() {
  if (IsShuttingDown()) return absl::FailedPreconditionError("OioEventLoopGroup is shut down");
  // acq_rel: every slot holder sees the count it incremented exactly.
  int now = active_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (max_channels_ > 0 && now > max_channels_) {
    active_.fetch_sub(1, std::memory_order_acq_rel);
    return absl::ResourceExhaustedError(absl::StrCat(
        "OioEventLoopGroup: ", max_channels_, " channels registered, the maximum"));
  }
  return absl::OkStatus();
}

void OioEventLoopGroup::ReleaseSlot() {
  // acq_rel: pairs with AcquireSlot's increments.
  active_.fetch_sub(1, std::memory_order_acq_rel);
}

ChannelFuture OioEventLoopGroup::Register(std::shared_ptr<Channel> channel) {
  if (channel == nullptr) {
    return MakeFailedFuture<void>(nullptr, absl::InvalidArgumentError("Register: null channel"));
  }
  if (IsShuttingDown()) {
    return MakeFailedFuture<void>(nullptr,
                                  absl::FailedPreconditionError("OioEventLoopGroup is shut down"));
  }
  // A cheap early refusal: no loop (and no eventfd) is made for a channel beyond the
  // cap. The loop's Register takes the slot for real.
  if (max_channels_ > 0 && active_.load(std::memory_order_acquire) >= max_channels_) {
    return MakeFailedFuture<void>(
        nullptr, absl::ResourceExhaustedError(absl::StrCat(
                     "OioEventLoopGroup: ", max_channels_, " channels registered, the maximum")));
  }
  absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> loop = NewLoop();
  if (!loop.ok()) return MakeFailedFuture<void>(nullptr, loop.status());
  return (*loop)->Register(std::move(channel));
}

absl::Status OioEventLoopGroup::Execute(absl::AnyInvocable<void()> task) {
  return absl::UnimplementedError(
      "OioEventLoopGroup has no shared loop; run tasks on a channel's event_loop()");
}

Future<void> OioEventLoopGroup::ShutdownGracefully(absl::Duration quiet_period,
                                                   absl::Duration timeout) {
  if (quiet_period < absl::ZeroDuration() || timeout < absl::ZeroDuration() ||
      quiet_period > timeout) {
    return MakeFailedFuture<void>(
        nullptr, absl::InvalidArgumentError("ShutdownGracefully: need 0 <= quiet_period <= timeout"));
  }
  std::vector<std::shared_ptr<ThreadPerChannelEventLoop>> live;
  {
    internal::MutexLock lock(&mu_);
    if (!IsShuttingDown()) {
      quiet_period_ = quiet_period;
      timeout_ = timeout;
      // Release: see IsShuttingDown().
      shutting_down_.store(true, std::memory_order_release);
    }
    for (auto& [ptr, loop] : live_) live.push_back(loop);
  }
  for (auto& loop : live) loop->ShutdownGracefully(quiet_period, timeout);
  MaybeTerminate();
  return termination_;
}

bool OioEventLoopGroup::IsShutdown() const {
  if (!IsShuttingDown()) return false;
  internal::MutexLock lock(&mu_);
  for (const auto& [ptr, loop] : live_) {
    if (!loop->IsShutdown()) return false;
  }
  return true;
}

bool OioEventLoopGroup::AwaitTermination(absl::Duration timeout) {
  return termination_.AwaitFor(timeout);
}

}  // namespace gyre
