// Helpers shared by the executor tests: a thread factory that counts and can fail,
// a ping-pong between two executors, and std-only handshakes (gyre's tests avoid
// absl::Notification under TSan).
//
// Thread safety: every helper is thread-safe.
#ifndef GYRE_TESTING_EXECUTOR_TEST_UTIL_H_
#define GYRE_TESTING_EXECUTOR_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/thread_factory.h"

namespace gyre {
namespace test {

// How long a handshake waits before the test gives up (a failure, not a timing check).
inline constexpr std::chrono::seconds kHandshakeTimeout{30};

// The lifecycle of a test executor that is never shut down: no parent, ShutdownGracefully
// succeeds at once and changes nothing, nothing ever terminates. A subclass supplies
// InEventLoop and Execute.
class NeverShutDownExecutor : public EventExecutor {
 public:
  using EventExecutor::InEventLoop;
  EventExecutorGroup* parent() const override { return nullptr; }
  Future<void> ShutdownGracefully(absl::Duration, absl::Duration) override {
    return MakeSucceededFuture(nullptr);
  }
  Future<void> TerminationFuture() const override { return MakeSucceededFuture(nullptr); }
  bool IsShuttingDown() const override { return false; }
  bool IsShutdown() const override { return false; }
  bool IsTerminated() const override { return false; }
  bool AwaitTermination(absl::Duration) override { return false; }
};

// A one-shot gate.
class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Returns false if not opened within kHandshakeTimeout.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kHandshakeTimeout, [&] { return open_; });
  }
  bool IsOpen() {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// A counter one can wait on.
class Counter {
 public:
  void Add(int d = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    value_ += d;
    cv_.notify_all();
  }
  void Increment() { Add(1); }
  int value() {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }
  // Returns false if the value did not reach `n` within `timeout`.
  bool WaitFor(int n, std::chrono::seconds timeout = kHandshakeTimeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return value_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int value_ = 0;
};

// A fixed set of threads that run one round of work at a time, released together: race
// tests use it instead of starting a thread per iteration (thread creation dominates
// such loops and exhausts the machine under the sanitizers).
//
//   ThreadCrew crew(2);
//   for (...) { crew.Start([&](int t) { ... }); /* race here */ ASSERT_TRUE(crew.Wait()); }
class ThreadCrew {
 public:
  explicit ThreadCrew(int size) {
    for (int i = 0; i < size; ++i) threads_.emplace_back([this, i] { Loop(i); });
  }
  ~ThreadCrew() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
  }
  ThreadCrew(const ThreadCrew&) = delete;
  ThreadCrew& operator=(const ThreadCrew&) = delete;

  // Releases every thread to run body(thread_index) once. The previous round must have
  // been waited for.
  void Start(std::function<void(int)> body) {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = std::move(body);
    running_ = static_cast<int>(threads_.size());
    ++round_;
    cv_.notify_all();
  }
  // Waits for the round to finish; false if it did not within kHandshakeTimeout.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kHandshakeTimeout, [&] { return running_ == 0; });
  }

 private:
  void Loop(int index) {
    uint64_t seen = 0;
    while (true) {
      std::function<void(int)>* body;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || round_ != seen; });
        if (stop_) return;
        seen = round_;
        body = &body_;
      }
      (*body)(index);
      std::lock_guard<std::mutex> lock(mu_);
      if (--running_ == 0) cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void(int)> body_;
  uint64_t round_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Wraps DefaultThreadFactory, counting threads; fails while `fail` is set.
class CountingThreadFactory : public ThreadFactory {
 public:
  explicit CountingThreadFactory(std::string pool = "test") : inner_(std::move(pool)) {}
  absl::StatusOr<std::unique_ptr<Thread>> NewThread(absl::AnyInvocable<void()> body) override {
    if (fail.load()) return absl::ResourceExhaustedError("thread creation refused by the test");
    created.fetch_add(1);
    return inner_.NewThread(std::move(body));
  }
  std::atomic<int> created{0};
  std::atomic<bool> fail{false};

 private:
  DefaultThreadFactory inner_;
};

// Starts a task on `a` that posts itself to `b`, which posts it back, `hops` times in
// all, then completes `done`. Returns the first post's status; a later refused post
// ends the bounce, and `done` then never completes. The ping-pong of the executor tests
// and of benchmark W3.
inline absl::Status StartPingPong(EventExecutor& a, EventExecutor& b, int hops,
                                  Promise<void> done) {
  struct Hop {
    EventExecutor* self;
    EventExecutor* other;
    int left;
    Promise<void> done;
    void operator()() {
      if (left == 0) {
        done.TrySuccess();
        return;
      }
      other->Execute(Hop{other, self, left - 1, done}).IgnoreError();
    }
  };
  return a.Execute(Hop{&a, &b, hops, std::move(done)});
}

}  // namespace test
}  // namespace gyre

#endif  // GYRE_TESTING_EXECUTOR_TEST_UTIL_H_
