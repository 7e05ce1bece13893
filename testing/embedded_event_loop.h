// EmbeddedEventLoop: an EventLoop that runs tasks only when the test asks, on the
// test's own thread.
//
//   EmbeddedEventLoop loop;
//   loop.Execute([] { ... });      // queued
//   loop.RunPendingTasks();        // runs it here
//
// The loop's thread is the one that created it (the test thread): there InEventLoop()
// is true and pipeline events run inline; from other threads (handlers pinned to other
// executors) they are queued and run on the next RunPendingTasks(). Not for production.
//
// Thread safety: Execute is thread-safe; everything else is for the creating thread.
// Ownership: owns its queue; pending tasks are destroyed with it.
#ifndef GYRE_TESTING_EMBEDDED_EVENT_LOOP_H_
#define GYRE_TESTING_EMBEDDED_EVENT_LOOP_H_

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"

namespace gyre {
namespace testing {

class EmbeddedEventLoop final : public EventLoop {
 public:
  EmbeddedEventLoop() = default;

  using EventExecutor::InEventLoop;
  bool InEventLoop(std::thread::id id) const override { return id == owner_; }
  EventLoopGroup* parent() const override { return nullptr; }

  absl::Status Execute(absl::AnyInvocable<void()> task) override;

  // Runs queued tasks, including those they queue, until none is left. Returns how many ran.
  int RunPendingTasks();
  bool HasPendingTasks() const;

  using EventExecutorGroup::ShutdownGracefully;
  Future<void> ShutdownGracefully(absl::Duration quiet_period, absl::Duration timeout) override;
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override { return shut_down_; }
  bool IsShutdown() const override { return shut_down_; }
  bool IsTerminated() const override { return shut_down_; }
  bool AwaitTermination(absl::Duration) override { return shut_down_; }

  // Registration counts (kept by the channels that register here).
  int RegisteredChannels() const override { return registered_; }
  void AddRegistered(int delta) { registered_ += delta; }

 private:
  const std::thread::id owner_ = std::this_thread::get_id();
  mutable std::mutex mu_;
  std::deque<absl::AnyInvocable<void()>> tasks_;  // guarded by mu_
  int registered_ = 0;
  std::atomic<bool> shut_down_{false};  // relaxed reads suffice: a flag, set under mu_
  Promise<void> termination_{nullptr};
};

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_EMBEDDED_EVENT_LOOP_H_
