// Task<T>: a C++20 coroutine that produces a Future<T>, and `co_await` on futures.
//
//   Task<int> AddRemote(Client& c) {
//     absl::StatusOr<int> a = co_await c.Fetch("a");   // Future<int>
//     absl::StatusOr<int> b = co_await c.Fetch("b");
//     if (!a.ok()) co_return a.status();
//     if (!b.ok()) co_return b.status();
//     co_return *a + *b;
//   }
//   Future<int> sum = AddRemote(client);               // a Task converts to its Future
//
// `co_await future` gives absl::StatusOr<T> (absl::Status for void): the value, or the
// cause on failure or cancellation. It never blocks a thread: the coroutine suspends and
// resumes on the awaited future's executor() (inline if that future is already done, or
// on the completing thread for a future without executor).
//
// A Task starts running at once, on the calling thread, up to its first suspension. Its
// body completes the future: `co_return value;` or `co_return status;` (for Task<void>,
// `co_return absl::OkStatus();`); an exception escaping the body fails it with Internal.
// The coroutine frame is freed when the body finishes; the Future outlives it.
//
// Thread safety: as Future. Ownership: a suspended coroutine is owned by the listener it
// registered on the awaited future; if that future is abandoned (its last handle dropped
// without completing it), the frame is destroyed, not resumed, and the Task's future
// stays pending. A handle kept in the frame (a by-value parameter, a local) keeps the
// awaited future alive: `co_await std::move(f)` when the frame should not.
#ifndef GYRE_CONCURRENT_TASK_H_
#define GYRE_CONCURRENT_TASK_H_

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"

namespace gyre {

template <typename T>
class Task;

namespace internal {

// Owns a suspended coroutine until it is resumed; destroys it if never resumed.
class SuspendedCoroutine {
 public:
  explicit SuspendedCoroutine(std::coroutine_handle<> h) : h_(h) {}
  SuspendedCoroutine(SuspendedCoroutine&& other) noexcept : h_(std::exchange(other.h_, {})) {}
  SuspendedCoroutine& operator=(SuspendedCoroutine&&) = delete;
  ~SuspendedCoroutine() {
    if (h_) h_.destroy();
  }
  void Resume() { std::exchange(h_, {}).resume(); }

 private:
  std::coroutine_handle<> h_;
};

template <typename T>
class TaskPromiseBase {
 public:
  Task<T> get_return_object();
  std::suspend_never initial_suspend() noexcept { return {}; }
  std::suspend_never final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept {
    try {
      throw;
    } catch (const std::exception& e) {
      promise_.TryFailure(absl::InternalError(e.what()));
    } catch (...) {
      promise_.TryFailure(absl::InternalError("coroutine threw a non-std exception"));
    }
  }

 protected:
  Promise<T> promise_;
};

template <typename T>
class TaskPromise : public TaskPromiseBase<T> {
 public:
  void return_value(absl::StatusOr<T> result) {
    if (result.ok()) {
      this->promise_.TrySuccess(*std::move(result));
    } else {
      this->promise_.TryFailure(std::move(result).status());
    }
  }
};

template <>
class TaskPromise<void> : public TaskPromiseBase<void> {
 public:
  void return_value(absl::Status status) {
    if (status.ok()) {
      promise_.TrySuccess();
    } else {
      promise_.TryFailure(std::move(status));
    }
  }
};

// Awaits a Future<T>. While suspended, the coroutine frame holds no reference to the
// future (only the future's listener holds the frame), so an abandoned future frees both.
template <typename T>
class FutureAwaiter {
 public:
  using Result = typename Future<T>::SyncType;

  explicit FutureAwaiter(Future<T> future) : future_(std::move(future)) {}
  bool await_ready() const { return future_.IsDone(); }
  void await_suspend(std::coroutine_handle<> h) {
    Future<T> future = std::move(future_);
    future.AddListener([this, c = SuspendedCoroutine(h)](const Future<T>& done) mutable {
      result_.emplace(Extract(done));
      c.Resume();
    });
  }
  Result await_resume() {
    if (result_.has_value()) return std::move(*result_);
    return Extract(future_);
  }

 private:
  static Result Extract(const Future<T>& done) {
    if (!done.IsSuccess()) {
      if constexpr (std::is_void_v<T>) {
        return done.Cause();
      } else {
        return Result(done.Cause());
      }
    }
    if constexpr (std::is_void_v<T> || std::is_copy_constructible_v<T>) {
      return done.Sync();  // done: returns at once
    } else {
      // A move-only result is taken: the awaiting coroutine is its one consumer.
      Future<T> owner = done;
      return owner.TakeSync();
    }
  }

  Future<T> future_;
  std::optional<Result> result_;
};

}  // namespace internal

template <typename T>
class Task {
 public:
  using promise_type = internal::TaskPromise<T>;

  Future<T> future() const { return future_; }
  operator Future<T>() const { return future_; }  // NOLINT: a Task is its future

 private:
  friend class internal::TaskPromiseBase<T>;
  explicit Task(Future<T> future) : future_(std::move(future)) {}
  Future<T> future_;
};

template <typename T>
Task<T> internal::TaskPromiseBase<T>::get_return_object() {
  return Task<T>(promise_);
}

// Suspends the coroutine until `future` is done; see the file comment.
template <typename T>
internal::FutureAwaiter<T> operator co_await(Future<T> future) {
  return internal::FutureAwaiter<T>(std::move(future));
}
template <typename T>
internal::FutureAwaiter<T> operator co_await(const Task<T>& task) {
  return internal::FutureAwaiter<T>(task.future());
}

}  // namespace gyre

#endif  // GYRE_CONCURRENT_TASK_H_
