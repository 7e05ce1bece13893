// SingleThreadEventLoop: the base of every event loop with a thread of its own. It
// resolves, once, the two ways an event loop is an executor (it is a
// SingleThreadEventExecutor and an EventLoop, whose EventExecutor base is virtual), and
// keeps what every transport's loop does with its channels: the registered set, the
// reference that keeps a registered channel alive, and the graceful shutdown of those
// channels.
//
//   class MyLoop final : public SingleThreadEventLoop {
//    public:
//     MyLoop(EventLoopGroup* parent, ExecutorOptions o)
//         : SingleThreadEventLoop(parent, std::move(o)) {}
//     ~MyLoop() override { ShutdownAndJoin(); }     // before the subclass is torn down
//    protected:
//     void Run() override {
//       for (;;) {
//         WaitForIoOrTasks();                          // the transport's own wait
//         HandleReadyIo();
//         ReleaseRemovedChannels();                    // after the I/O batch
//         RunAllTasks();
//         if (ShutdownConfirmed()) break;              // the end of every turn
//       }
//     }
//   };
//
// Channels: a transport's channel calls AddChannel() when its registration completes
// and RemoveChannel() when it deregisters or closes; the loop holds a reference
// meanwhile, and drops it only at ReleaseRemovedChannels(), so a channel that
// deregistered while handling an event stays alive until the batch of events it came in
// has been handled.
//
// Graceful shutdown of channels (ShutdownChannelsStep, each turn while shutting down):
// until the shutdown timeout every registered channel that is not draining is asked
// Channel::BeginShutdownDrain(): a channel with queued writes may drain them, stop
// reading and close itself once they are written (it returns true); the loop closes any
// other. While channels drain, HasPendingShutdownWork() is true, so the loop does not
// terminate. When the timeout elapses every channel still registered is closed (its
// pending writes fail). Cleanup() closes whatever is left.
//
// Thread safety: public methods are thread-safe. AddChannel / RemoveChannel and the
// protected helpers are loop thread only.
// Ownership: owned by its group (or by the caller for a standalone loop). Holds every
// registered channel (shared_ptr) until it is removed. Subclasses call
// ShutdownAndJoin() in their destructor (see SingleThreadEventExecutor).
#ifndef GYRE_CHANNEL_SINGLE_THREAD_EVENT_LOOP_H_
#define GYRE_CHANNEL_SINGLE_THREAD_EVENT_LOOP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/single_thread_event_executor.h"

namespace gyre {

class SingleThreadEventLoop : public SingleThreadEventExecutor, public EventLoop {
 public:
  ~SingleThreadEventLoop() override;

  // EventExecutor and EventLoop: one answer for each method both paths declare.
  using EventExecutor::InEventLoop;
  bool InEventLoop(std::thread::id thread) const final {
    return SingleThreadEventExecutor::InEventLoop(thread);
  }
  EventLoop* Next() { return this; }
  EventLoop* NextEventLoop() override { return this; }
  EventExecutor* NextExecutor() override { return this; }
  std::vector<EventExecutor*> executors() const override {
    return {const_cast<SingleThreadEventLoop*>(this)};
  }
  EventLoopGroup* parent() const override { return parent_; }
  // The executor's snapshot plus the event-loop fields: registered channels, I/O time.
  ExecutorSnapshot Snapshot() const override;

  // Channels registered with this loop now. Any thread.
  int RegisteredChannels() const override {
    // Relaxed: a statistic.
    return registered_.load(std::memory_order_relaxed);
  }

  // --- Loop thread only: for the transport's channels. ---

  // Keeps `channel` alive while registered and counts it (a second add is a no-op).
  void AddChannel(std::shared_ptr<Channel> channel);
  // Forgets `channel`; the loop's reference is dropped at the next
  // ReleaseRemovedChannels(), so a channel removed while handling an event outlives it.
  void RemoveChannel(Channel* channel);

 protected:
  // `parent` may be null (a standalone loop).
  SingleThreadEventLoop(EventLoopGroup* parent, ExecutorOptions options);

  // Loop thread only. Drops the references of channels removed since the last call.
  // Call it where no handler of a removed channel can still be on the stack (between
  // I/O batches).
  void ReleaseRemovedChannels() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only, while shutting down: before the shutdown timeout asks the
  // channels that are not draining to drain or closes them; after it, closes every
  // registered channel (see the file comment).
  void ShutdownChannelsStep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only, at the end of each turn of Run(): false while the loop runs.
  // While it shuts down, takes one ShutdownChannelsStep() and returns ConfirmShutdown()
  // (true: Run() must return).
  bool ShutdownConfirmed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    if (ABSL_PREDICT_TRUE(!IsShuttingDown())) return false;
    ShutdownChannelsStep();
    return ConfirmShutdown();
  }

  // Loop thread only. Closes every registered channel now (pending writes fail).
  void CloseAllChannels() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // True while channels drain queued writes during a graceful shutdown.
  bool HasPendingShutdownWork() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return !draining_.empty(); }
  // Closes the channels still registered. A subclass that overrides it calls this.
  void Cleanup() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop thread only. Adds `nanos` of real time spent handling I/O (for Snapshot()).
  void AddIoTime(int64_t nanos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    // Relaxed single-writer statistic.
    io_nanos_.store(io_nanos_.load(std::memory_order_relaxed) + nanos, std::memory_order_relaxed);
  }

 private:
  EventLoopGroup* const parent_;
  // Relaxed: a statistic (see RegisteredChannels()).
  std::atomic<int> registered_{0};
  // Time handling I/O; single writer (the loop), relaxed.
  std::atomic<int64_t> io_nanos_{0};

  absl::flat_hash_map<Channel*, std::shared_ptr<Channel>> channels_ ABSL_GUARDED_BY(loop_affinity_);
  std::vector<std::shared_ptr<Channel>> released_ ABSL_GUARDED_BY(loop_affinity_);
  // Registered channels draining queued writes during a graceful shutdown (a subset of
  // channels_; RemoveChannel drops them).
  absl::flat_hash_set<Channel*> draining_ ABSL_GUARDED_BY(loop_affinity_);
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_SINGLE_THREAD_EVENT_LOOP_H_
