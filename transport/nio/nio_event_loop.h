// NioEventLoop: an event loop that waits on one epoll instance for socket readiness and
// runs its tasks and timers between I/O batches.
//
//   auto group = NioEventLoopGroup::Create(2);   // the usual way to get loops
//   EventLoop* loop = (*group)->Next();
//   loop->Execute([] { /* on the loop thread */ });
//
// The run loop: wait in epoll_wait (not at all when tasks are queued; else until the
// next scheduled task is due or a wake-up), handle the ready sockets, then run tasks for
// a share of the time the I/O took, set by the I/O ratio (see SetIoRatio). Producers
// write the loop's eventfd only when the loop has announced it may block, so a busy
// loop costs them no system call.
//
// Graceful shutdown (SingleThreadEventLoop::ShutdownChannelsStep): on its first pass
// after shutdown begins the loop asks every registered channel to finish
// (Channel::BeginShutdownDrain): a server channel closes at once (no new connections),
// a socket channel with nothing queued closes at once, one with queued writes flushes
// them, stops reading and closes itself once its outbound buffer is empty (its write
// futures succeed). The loop keeps
// serving those channels' writes, and does not terminate while any still drains,
// until the graceful-shutdown timeout (on the executor's ticker): then the rest are
// force-closed and their pending writes fail. The quiet period runs alongside.
//
// See docs/transport.md.
//
// Thread safety: public methods are thread-safe. The fd-registration helpers are loop
// thread only (the transport's channels call them from their Unsafe).
// Ownership: owned by its NioEventLoopGroup. Keeps every registered channel alive
// (shared_ptr, in the base) until it deregisters; the destructor shuts down and joins
// first.
#ifndef GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_H_
#define GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_H_

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/single_thread_event_executor.h"

namespace gyre {

// Something with a file descriptor in a NioEventLoop's epoll set.
// Thread safety: OnIoEvent runs on the loop thread.
// Ownership: not owned by the loop; the registrant keeps it alive while registered.
class NioIoHandler {
 public:
  // Handles the ready `events` (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, ...).
  virtual void OnIoEvent(uint32_t events) = 0;

 protected:
  ~NioIoHandler() = default;
};

class NioEventLoop final : public SingleThreadEventLoop {
 public:
  static constexpr int kDefaultIoRatio = 50;

  // A loop whose parent group is `parent` (may be null). Returns the errno status when
  // the epoll or event fd cannot be created.
  static absl::StatusOr<std::unique_ptr<NioEventLoop>> Create(EventLoopGroup* parent,
                                                              ExecutorOptions options);
  ~NioEventLoop() override;

  // Sets the share of loop time spent on I/O, in percent: after an I/O batch that took
  // t, tasks run for t * (100 - ratio) / ratio; 100 runs all queued tasks every turn.
  // InvalidArgument outside 1..100. Takes effect from the next turn.
  absl::Status SetIoRatio(int ratio);
  int io_ratio() const {
    // Relaxed: a tuning knob read once per turn; no data depends on it.
    return io_ratio_.load(std::memory_order_relaxed);
  }

  // Replaces the epoll instance with a fresh one holding the same registrations (on the
  // loop thread; queued from others). The returned future fails with the errno status
  // if a new instance cannot be made (the old one stays then).
  Future<void> RebuildSelector();

  // --- Loop thread only: for the transport's channels. ---

  // Sets the epoll interest of `fd` to `events` (0 removes it from the set; the first
  // non-zero set adds it). Returns the errno status of epoll_ctl.
  absl::Status SetInterest(int fd, uint32_t events, NioIoHandler* handler);
  // Removes `fd` from the set (before it is closed).
  void RemoveFd(int fd);

  // Test hooks: epoll_wait calls made and eventfd writes performed.
  int64_t SelectCountForTesting() const { return select_count_.load(std::memory_order_relaxed); }
  int64_t WakeupWritesForTesting() const {
    return wakeup_writes_.load(std::memory_order_relaxed);
  }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void OnWakeupRequested() override;

 private:
  NioEventLoop(EventLoopGroup* parent, ExecutorOptions options, int epoll_fd, int event_fd);
  void ProcessReady(int n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Builds a new epoll set with the eventfd and every interest; closes the old one
  // unless it is no longer this loop's (`close_old` false: see OnSelectFailure).
  void DoRebuildSelector(Promise<void> done, bool close_old = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // epoll_wait failed with `err` (not EINTR): the epoll fd is gone or replaced. Rebuilds
  // the selector so the loop neither spins nor loses a channel; backs off if that fails.
  void OnSelectFailure(int err) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  struct Interest {
    uint32_t events;
    NioIoHandler* handler;
  };

  int epoll_fd_ ABSL_GUARDED_BY(loop_affinity_);  // replaced by rebuilds
  const int event_fd_;
  // Relaxed: see io_ratio().
  std::atomic<int> io_ratio_{kDefaultIoRatio};
  // Relaxed: test hooks only.
  std::atomic<int64_t> select_count_{0};
  std::atomic<int64_t> wakeup_writes_{0};
  // Consecutive epoll_wait failures (other than EINTR).
  int select_failures_ ABSL_GUARDED_BY(loop_affinity_) = 0;

  std::vector<epoll_event> ready_ ABSL_GUARDED_BY(loop_affinity_);
  absl::flat_hash_map<int, Interest> interests_ ABSL_GUARDED_BY(loop_affinity_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_EVENT_LOOP_H_
