// A minimal one-thread executor for the future/promise tests, independent of the
// executor implementations under test elsewhere.
//
// Thread safety: thread-safe. Ownership: joins its thread in the destructor after
// running every queued task.
#ifndef GYRE_TESTING_TEST_EXECUTOR_H_
#define GYRE_TESTING_TEST_EXECUTOR_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/promise.h"

namespace gyre {
namespace testing {

class TestExecutor final : public EventExecutor {
 public:
  TestExecutor() : thread_([this] { Loop(); }) {}
  ~TestExecutor() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  using EventExecutor::InEventLoop;
  bool InEventLoop(std::thread::id id) const override { return id == thread_.get_id(); }
  EventExecutorGroup* parent() const override { return nullptr; }

  absl::Status Execute(absl::AnyInvocable<void()> task) override {
    if (!task) return internal::EmptyTaskError();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (rejecting_) return absl::FailedPreconditionError("test executor rejects");
      queue_.push_back(std::move(task));
    }
    executed_.fetch_add(1, std::memory_order_relaxed);
    cv_.notify_one();
    return absl::OkStatus();
  }

  // Runs `fn` on the executor thread and waits for it.
  template <typename F>
  void RunAndWait(F&& fn) {
    Promise<void> done;
    Execute([&fn, done]() mutable {
      fn();
      done.TrySuccess();
    }).IgnoreError();
    done.Await().IgnoreError();
  }

  void SetRejecting(bool rejecting) {
    std::lock_guard<std::mutex> lock(mu_);
    rejecting_ = rejecting;
  }

  // Tasks accepted so far (listener notifications included).
  int executed() const { return executed_.load(std::memory_order_relaxed); }

  Future<void> ShutdownGracefully(absl::Duration, absl::Duration) override {
    return termination_;
  }
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override { return false; }
  bool IsShutdown() const override { return false; }
  bool IsTerminated() const override { return false; }
  bool AwaitTermination(absl::Duration) override { return false; }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      absl::AnyInvocable<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> queue_;
  bool stopping_ = false;
  bool rejecting_ = false;
  // Relaxed: a statistic read after handshakes that already order it.
  std::atomic<int> executed_{0};
  Promise<void> termination_;
  std::thread thread_;
};

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_TEST_EXECUTOR_H_
