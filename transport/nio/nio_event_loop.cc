#include "gyre/transport/nio/nio_event_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/io_syscalls.h"

namespace gyre {
namespace {

constexpr int kMaxEventsPerWait = 256;

absl::Status ErrnoStatus(int err, absl::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", std::strerror(err)));
}

// epoll_wait's timeout in milliseconds, rounded up so a timer never fires early.
int TimeoutMillis(int64_t nanos) {
  if (nanos == INT64_MAX) return -1;
  int64_t ms = (nanos + 999'999) / 1'000'000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

}  // namespace

absl::StatusOr<std::unique_ptr<NioEventLoop>> NioEventLoop::Create(EventLoopGroup* parent,
                                                                   ExecutorOptions options) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return ErrnoStatus(errno, "epoll_create1");
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ev < 0) {
    int err = errno;
    close(ep);
    return ErrnoStatus(err, "eventfd");
  }
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = nullptr;  // null marks the wake-up fd
  if (epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e) != 0) {
    int err = errno;
    close(ep);
    close(ev);
    return ErrnoStatus(err, "epoll_ctl(eventfd)");
  }
  return std::unique_ptr<NioEventLoop>(new NioEventLoop(parent, std::move(options), ep, ev));
}

NioEventLoop::NioEventLoop(EventLoopGroup* parent, ExecutorOptions options, int epoll_fd,
                           int event_fd)
    : SingleThreadEventLoop(parent, std::move(options)),
      epoll_fd_(epoll_fd),
      event_fd_(event_fd),
      ready_(kMaxEventsPerWait) {}

NioEventLoop::~NioEventLoop() {
  ShutdownAndJoin();
  loop_affinity_.AssumeExclusive();  // the loop thread was joined
  // The fds outlive the thread and every OnWakeupRequested() call.
  close(epoll_fd_);
  close(event_fd_);
}

absl::Status NioEventLoop::SetIoRatio(int ratio) {
  if (ratio < 1 || ratio > 100) {
    return absl::InvalidArgumentError(absl::StrCat("io ratio must be in 1..100, got ", ratio));
  }
  io_ratio_.store(ratio, std::memory_order_relaxed);
  return absl::OkStatus();
}

void NioEventLoop::OnWakeupRequested() {
  uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves the fd readable: the loop wakes either way.
  ssize_t n = internal_transport::WriteFd(event_fd_, &one, sizeof(one));
  (void)n;
  wakeup_writes_.fetch_add(1, std::memory_order_relaxed);
}

void NioEventLoop::Run() {
  for (;;) {
    int64_t timeout = HasTasks() ? 0 : NanosUntilNextScheduledTask();
    bool announced = false;
    if (timeout != 0 && IsShuttingDown()) {
      // Channels draining their writes: wait for I/O (or a task, a wake-up, a ticker
      // jump), at most until the shutdown timeout. Otherwise do not block at all.
      timeout = HasPendingShutdownWork() ? std::min(timeout, NanosUntilShutdownTimeout()) : 0;
    }
    if (timeout != 0) {
      announced = BeginBlockingWait();
      if (!announced) timeout = 0;
    }
    select_count_.fetch_add(1, std::memory_order_relaxed);
    int n = internal_transport::EpollWait(epoll_fd_, ready_.data(), static_cast<int>(ready_.size()),
                       TimeoutMillis(timeout));
    if (announced) EndBlockingWait();
    if (ABSL_PREDICT_FALSE(n < 0)) {
      if (errno != EINTR) OnSelectFailure(errno);
      n = 0;
    } else {
      select_failures_ = 0;
    }
    const int ratio = io_ratio();
    // I/O time for the snapshot, on the real clock and only when fds were ready. With
    // the system ticker (the usual case) the ioRatio timing below is that clock: read
    // it once on each side.
    const bool system_ticker = ticker() == Ticker::System();
    if (ratio == 100) {
      const int64_t io_real_start = n > 0 ? Ticker::System()->Nanos() : 0;
      ProcessReady(n);
      if (n > 0) AddIoTime(Ticker::System()->Nanos() - io_real_start);
      RunAllTasks();
    } else {
      const int64_t io_real_start = n > 0 && !system_ticker ? Ticker::System()->Nanos() : 0;
      int64_t io_start = NanosNow();
      ProcessReady(n);
      int64_t io_nanos = NanosNow() - io_start;
      if (n > 0) AddIoTime(system_ticker ? io_nanos : Ticker::System()->Nanos() - io_real_start);
      RunAllTasks(absl::Nanoseconds(io_nanos * (100 - ratio) / ratio));
    }
    if (ShutdownConfirmed()) break;
  }
}

void NioEventLoop::ProcessReady(int n) {
  // Handlers run here count as a running task in Snapshot() (a blocked one is stalled).
  if (n > 0) BeginLoopWork();
  for (int i = 0; i < n; ++i) {
    NioIoHandler* h = static_cast<NioIoHandler*>(ready_[i].data.ptr);
    if (h == nullptr) {
      // A (non-semaphore) eventfd read returns and resets the whole count: one syscall.
      uint64_t count;
      if (internal_transport::ReadFd(event_fd_, &count, sizeof(count)) < 0 && errno != EAGAIN) {
        GYRE_LOG(WARNING) << "eventfd read: " << std::strerror(errno);
      }
      continue;
    }
    h->OnIoEvent(ready_[i].events);
  }
  // Channels deregistered during the batch die here, after their last event.
  ReleaseRemovedChannels();
  if (n > 0) EndLoopWork();
}

absl::Status NioEventLoop::SetInterest(int fd, uint32_t events, NioIoHandler* handler) {
  loop_affinity_.AssertOnLoop();
  auto it = interests_.find(fd);
  if (events == 0) {
    if (it != interests_.end()) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      interests_.erase(it);
    }
    return absl::OkStatus();
  }
  epoll_event e{};
  e.events = events;
  e.data.ptr = handler;
  if (it == interests_.end()) {
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) return ErrnoStatus(errno, "epoll_ctl(ADD)");
    interests_.emplace(fd, Interest{events, handler});
    return absl::OkStatus();
  }
  if (it->second.events == events && it->second.handler == handler) return absl::OkStatus();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &e) != 0) return ErrnoStatus(errno, "epoll_ctl(MOD)");
  it->second = Interest{events, handler};
  return absl::OkStatus();
}

void NioEventLoop::RemoveFd(int fd) { (void)SetInterest(fd, 0, nullptr); }

Future<void> NioEventLoop::RebuildSelector() {
  Promise<void> done(this);
  if (InEventLoop()) {
    loop_affinity_.AssertOnLoop();
    DoRebuildSelector(done);
    return done;
  }
  absl::Status s = Execute([this, done]() mutable {
    loop_affinity_.AssertOnLoop();  // a task, on the loop
    DoRebuildSelector(done);
  });
  if (!s.ok()) done.TryFailure(s);
  return done;
}

// B33. With a valid epoll fd, epoll_wait fails only with EINTR. Any other error means
// the fd was closed by mistake elsewhere in the process (EBADF) or its number now names
// another file (EINVAL): the loop has nothing to wait on, and would spin and log on every
// turn. As Netty does on a select failure, it rebuilds its selector: a new epoll set, the
// eventfd and every channel re-registered. The old number is not closed, as it is no
// longer this loop's. Should the rebuild fail too (no fd left), the loop backs off for a
// growing pause (at most 1 s, as Netty's) instead of spinning, and tries again.
void NioEventLoop::OnSelectFailure(int err) {
  ++select_failures_;
  Promise<void> rebuilt(nullptr);
  DoRebuildSelector(rebuilt, /*close_old=*/false);
  // Logged for the first failure and then at powers of two: never a flood.
  const bool log = (select_failures_ & (select_failures_ - 1)) == 0;
  if (rebuilt.IsSuccess()) {
    if (log) {
      GYRE_LOG(WARNING) << "epoll_wait: " << std::strerror(err)
                        << "; the selector was rebuilt with " << interests_.size()
                        << " registrations";
    }
    return;
  }
  if (log) {
    GYRE_LOG(ERROR) << "epoll_wait: " << std::strerror(err) << "; rebuilding the selector failed ("
                    << rebuilt.Cause() << "), " << select_failures_
                    << " failures in a row; backing off";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 10 * select_failures_)));
}

void NioEventLoop::DoRebuildSelector(Promise<void> done, bool close_old) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    done.TryFailure(ErrnoStatus(errno, "epoll_create1"));
    return;
  }
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = nullptr;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, event_fd_, &e) != 0) {
    int err = errno;
    close(ep);
    done.TryFailure(ErrnoStatus(err, "epoll_ctl(eventfd)"));
    return;
  }
  for (auto& [fd, interest] : interests_) {
    epoll_event ie{};
    ie.events = interest.events;
    ie.data.ptr = interest.handler;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ie) != 0) {
      int err = errno;
      close(ep);
      done.TryFailure(ErrnoStatus(err, "epoll_ctl(ADD) while rebuilding"));
      return;
    }
  }
  if (close_old) close(epoll_fd_);
  epoll_fd_ = ep;
  done.TrySuccess();
}

}  // namespace gyre
