// EventExecutor: one executor (one thread of tasks); also a group of one.
//
//   EventExecutor* loop = group->Next();
//   if (loop->InEventLoop()) { Touch(); } else { loop->Execute([] { Touch(); }); }
//   Promise<int> p = loop->NewPromise<int>();
//
// Thread safety: every method is thread-safe.
// Ownership: owned by its parent group (or by whoever created a standalone executor).
#ifndef GYRE_CONCURRENT_EVENT_EXECUTOR_H_
#define GYRE_CONCURRENT_EVENT_EXECUTOR_H_

#include <exception>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gyre/concurrent/event_executor_group.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/progressive_promise.h"
#include "gyre/concurrent/promise.h"

namespace gyre {

class EventExecutor : public virtual EventExecutorGroup {
 public:
  // An executor is its own only member.
  EventExecutor* Next() { return this; }
  EventExecutor* NextExecutor() override { return this; }
  std::vector<EventExecutor*> executors() const override {
    return {const_cast<EventExecutor*>(this)};
  }

  // Returns true when the calling thread is this executor's thread.
  bool InEventLoop() const { return InEventLoop(std::this_thread::get_id()); }
  virtual bool InEventLoop(std::thread::id thread) const = 0;

  // The group this executor belongs to; null for a standalone executor.
  virtual EventExecutorGroup* parent() const = 0;

  // Queues `task` to run on this executor's thread (never inside this call).
  absl::Status Execute(absl::AnyInvocable<void()> task) override = 0;

  // Factories for futures whose listeners are notified on this executor.
  template <typename T>
  Promise<T> NewPromise() {
    return Promise<T>(this);
  }
  template <typename T>
  ProgressivePromise<T> NewProgressivePromise() {
    return ProgressivePromise<T>(this);
  }
  template <typename T>
  Future<T> NewSucceededFuture(T value) {
    return MakeSucceededFuture<T>(this, std::move(value));
  }
  Future<void> NewSucceededFuture() { return MakeSucceededFuture(this); }
  template <typename T>
  Future<T> NewFailedFuture(absl::Status cause) {
    return MakeFailedFuture<T>(this, std::move(cause));
  }
};

}  // namespace gyre

namespace gyre {

// Defined here, where EventExecutor is complete.
template <typename F>
auto EventExecutorGroup::Submit(F&& f) -> Future<std::invoke_result_t<std::decay_t<F>&>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  EventExecutor* executor = Next();
  Promise<R> promise(executor);
  absl::Status status = executor->Execute(
      [promise, fn = std::forward<F>(f)]() mutable {
        if (!promise.SetUncancellable()) return;  // cancelled before it ran
        try {
          if constexpr (std::is_void_v<R>) {
            fn();
            promise.TrySuccess();
          } else {
            promise.TrySuccess(fn());
          }
        } catch (const std::exception& e) {
          promise.TryFailure(absl::InternalError(e.what()));
        } catch (...) {
          promise.TryFailure(absl::InternalError("task threw a non-std exception"));
        }
      });
  if (!status.ok()) promise.TryFailure(std::move(status));
  return promise;
}

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EVENT_EXECUTOR_H_
