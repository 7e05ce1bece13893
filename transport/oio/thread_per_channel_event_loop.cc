#include "gyre/transport/oio/thread_per_channel_event_loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/io_syscalls.h"
#include "gyre/transport/oio/abstract_oio_channel.h"
#include "gyre/transport/oio/oio_event_loop_group.h"

namespace gyre {
namespace {

// poll's timeout in milliseconds, rounded up so a timer never fires early.
int TimeoutMillis(int64_t nanos) {
  if (nanos == INT64_MAX) return -1;
  int64_t ms = (nanos + 999'999) / 1'000'000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

}  // namespace

absl::StatusOr<std::shared_ptr<ThreadPerChannelEventLoop>> ThreadPerChannelEventLoop::Create(
    OioEventLoopGroup* parent, ExecutorOptions options) {
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ev < 0) {
    int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat("eventfd: ", std::strerror(err)));
  }
  if (options.name.empty()) options.name = "oio";
  return std::shared_ptr<ThreadPerChannelEventLoop>(
      new ThreadPerChannelEventLoop(parent, std::move(options), ev));
}

ThreadPerChannelEventLoop::ThreadPerChannelEventLoop(OioEventLoopGroup* parent,
                                                     ExecutorOptions options, int event_fd)
    : SingleThreadEventLoop(parent, std::move(options)), parent_(parent), event_fd_(event_fd) {}

ThreadPerChannelEventLoop::~ThreadPerChannelEventLoop() {
  ShutdownAndJoin();
  // The fd outlives the thread and every OnWakeupRequested() call.
  close(event_fd_);
}

void ThreadPerChannelEventLoop::OnWakeupRequested() {
  uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves the fd readable: the loop wakes either way.
  ssize_t n = internal_transport::WriteFd(event_fd_, &one, sizeof(one));
  (void)n;
}

ChannelFuture ThreadPerChannelEventLoop::Register(std::shared_ptr<Channel> channel) {
  if (channel == nullptr) {
    return MakeFailedFuture<void>(this, absl::InvalidArgumentError("Register: null channel"));
  }
  bool expected = false;
  // acq_rel: exactly one Register wins the loop.
  if (!claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return MakeFailedFuture<void>(
        this, absl::FailedPreconditionError(
                  "a ThreadPerChannelEventLoop serves one channel and already has one"));
  }
  auto fail = [this](absl::Status s) {
    ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
    return MakeFailedFuture<void>(this, std::move(s));
  };
  if (dynamic_cast<AbstractOioChannel*>(channel.get()) == nullptr) {
    return fail(absl::InvalidArgumentError("a ThreadPerChannelEventLoop needs an oio channel"));
  }
  if (IsShuttingDown()) return fail(absl::FailedPreconditionError("event loop is shut down"));
  if (parent_ != nullptr) {
    absl::Status slot = parent_->AcquireSlot();
    if (!slot.ok()) return fail(std::move(slot));
    // Release: see holds_slot().
    holds_slot_.store(true, std::memory_order_release);
    // Shutdown hooks run before the termination future completes, on both ways to
    // terminate (with a thread, or inline for a loop that never started): whoever
    // sees this loop terminated sees its slot free.
    absl::Status hooked = AddShutdownHook([this] {
      // acq_rel: exactly one release of the slot.
      if (holds_slot_.exchange(false, std::memory_order_acq_rel)) parent_->ReleaseSlot();
    });
    if (!hooked.ok()) {
      holds_slot_.store(false, std::memory_order_release);
      parent_->ReleaseSlot();
      return fail(std::move(hooked));
    }
  }
  ChannelPromise promise(this);
  channel->unsafe().Register(this, promise);
  promise.AddListener([this](const ChannelFuture& f) {
    // A loop whose registration failed has nothing to serve.
    if (!f.IsSuccess()) ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  });
  return promise;
}

void ThreadPerChannelEventLoop::Attach(std::shared_ptr<Channel> channel, OioIoHandler* handler) {
  loop_affinity_.AssertOnLoop();
  channel_ = channel.get();
  handler_ = handler;
  AddChannel(std::move(channel));
}

void ThreadPerChannelEventLoop::Detach() {
  loop_affinity_.AssertOnLoop();
  if (channel_ == nullptr) return;
  // The base keeps the channel alive until after the current event and tasks.
  RemoveChannel(channel_);
  channel_ = nullptr;
  handler_ = nullptr;
  ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
}

void ThreadPerChannelEventLoop::Run() {
  for (;;) {
    int64_t timeout = HasTasks() ? 0 : NanosUntilNextScheduledTask();
    if (timeout != 0 && IsShuttingDown()) {
      // The channel draining its writes: wait for the socket (or a task, a wake-up, a
      // ticker jump), at most until the shutdown timeout. Otherwise do not block.
      timeout = HasPendingShutdownWork() ? std::min(timeout, NanosUntilShutdownTimeout()) : 0;
    }
    bool announced = false;
    if (timeout != 0) {
      announced = BeginBlockingWait();
      if (!announced) timeout = 0;
    }
    pollfd fds[2];
    fds[0] = pollfd{event_fd_, POLLIN, 0};
    nfds_t count = 1;
    if (handler_ != nullptr) {
      short events = handler_->PollEvents();
      if (events != 0) {
        fds[1] = pollfd{handler_->PollFd(), events, 0};
        count = 2;
      }
    }
    poll_count_.fetch_add(1, std::memory_order_relaxed);
    int n = ::poll(fds, count, TimeoutMillis(timeout));
    if (announced) EndBlockingWait();
    if (n < 0) {
      if (errno != EINTR) GYRE_LOG(WARNING) << "poll: " << std::strerror(errno);
      n = 0;
    }
    if (n > 0) {
      if (fds[0].revents != 0) {
        // A (non-semaphore) eventfd read returns and resets the whole count.
        uint64_t value;
        if (internal_transport::ReadFd(event_fd_, &value, sizeof(value)) < 0 && errno != EAGAIN) {
          GYRE_LOG(WARNING) << "eventfd read: " << std::strerror(errno);
        }
      }
      if (count == 2 && fds[1].revents != 0 && handler_ != nullptr) {
        // The handler counts as a running task in Snapshot() (a blocked one is stalled).
        BeginLoopWork();
        const int64_t io_start = Ticker::System()->Nanos();
        handler_->OnPollEvent(fds[1].revents);
        AddIoTime(Ticker::System()->Nanos() - io_start);
        EndLoopWork();
      }
    }
    RunAllTasks();
    // A channel that detached during the event or the tasks dies here, after them.
    ReleaseRemovedChannels();
    if (ShutdownConfirmed()) break;
  }
}

}  // namespace gyre
