// Promise<T>: the write side of a Future<T>; completed once, by any thread.
//
//   Promise<std::string> promise(loop);              // or loop->NewPromise<std::string>()
//   worker.Execute([promise]() mutable {
//     if (!promise.SetUncancellable()) return;       // cancelled meanwhile
//     promise.TrySuccess(Compute());
//   });
//   return promise;                                  // callers see a Future<std::string>
//
// Completion is a single atomic transition: of several racing TrySuccess / TryFailure /
// Cancel calls exactly one wins; waiters are woken and listeners notified as Future
// describes.
//
// An empty Promise (moved from, Promise::Empty(), or a channel's VoidPromise()) has no
// state: TrySuccess, TryFailure and TrySuccessAndReset on it return
// false, SetSuccess and SetFailure FailedPrecondition, SetUncancellable and
// ResetIfUnobserved true, all changing nothing; the read side (Future's methods) must
// not be used on it, as future.h says of an empty handle.
//
// Thread safety: every method is thread-safe.
// Ownership: shares the state with every Future copy; see future.h.
#ifndef GYRE_CONCURRENT_PROMISE_H_
#define GYRE_CONCURRENT_PROMISE_H_

#include <exception>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/future_core.h"

namespace gyre {

template <typename T>
class Promise : public Future<T> {
 public:
  // A pending promise whose listeners are notified on `executor` (null: on whichever
  // thread completes it or adds a listener).
  explicit Promise(EventExecutor* executor = nullptr)
      : Future<T>(new internal::FutureCore<T>(executor)) {}

  // An empty promise (no state, nothing allocated): completing it does nothing, and no
  // one can observe it. See the class comment; a channel's VoidPromise() is one.
  static Promise Empty() { return Promise(internal::AdoptCoreTag{}, nullptr); }

  // The read side (the same state; a Promise already is one).
  Future<T> future() const { return *this; }

  // Completes with `value` and notifies: inline when called on executor()'s thread,
  // otherwise as a task there. Returns FailedPrecondition, changing nothing, when
  // already complete. For Promise<void>, SetSuccess() takes no argument.
  template <typename U = T>
    requires(!std::is_void_v<U>)
  absl::Status SetSuccess(U value) {
    if (TrySuccess(std::move(value))) return absl::OkStatus();
    return AlreadyComplete();
  }
  template <typename U = T>
    requires(std::is_void_v<U>)
  absl::Status SetSuccess() {
    if (TrySuccess()) return absl::OkStatus();
    return AlreadyComplete();
  }

  // As SetSuccess, but returns whether this call completed the promise.
  template <typename U = T>
    requires(!std::is_void_v<U>)
  bool TrySuccess(U value) {
    return this->core() != nullptr && this->core()->TrySuccess(std::move(value));
  }
  template <typename U = T>
    requires(std::is_void_v<U>)
  bool TrySuccess() {
    return this->core() != nullptr && this->core()->TrySuccess();
  }

  // Succeeds the promise and empties this handle. When this handle is the last one and
  // no listener or waiter is registered, nothing could ever observe the completion, so
  // the state is only released (for a transport completing the promise of every write,
  // most of which were dropped by their writers). Returns whether the promise was
  // completed or released unobserved; false if it was already complete.
  template <typename U = T>
    requires(std::is_void_v<U>)
  bool TrySuccessAndReset() {
    internal::FutureCore<T>* core = this->core();
    if (core == nullptr) return false;
    const bool done = core->IsUnobserved() ? !core->IsDone() : core->TrySuccess();
    this->Reset(nullptr);
    return done;
  }

  // Empties this handle if nothing could ever observe the promise: this handle is the
  // last one and no listener or waiter is registered (completing it would change
  // nothing anyone can see). Returns whether it did; otherwise the handle is kept.
  bool ResetIfUnobserved() {
    if (this->core() == nullptr) return true;
    if (!this->core()->IsUnobserved()) return false;
    this->Reset(nullptr);
    return true;
  }

  // Fails with `cause`. Returns InvalidArgument for an OK cause and FailedPrecondition
  // when already complete; either way nothing changes.
  absl::Status SetFailure(absl::Status cause) {
    if (cause.ok()) return absl::InvalidArgumentError("SetFailure needs a non-OK cause");
    if (this->core() != nullptr && this->core()->TryFailure(std::move(cause))) {
      return absl::OkStatus();
    }
    return AlreadyComplete();
  }

  // As SetFailure; false (and no change) for an OK cause or when already complete.
  bool TryFailure(absl::Status cause) {
    if (cause.ok() || this->core() == nullptr) return false;
    return this->core()->TryFailure(std::move(cause));
  }

  // Marks the promise uncancellable. Returns true if it now is, or is done and was not
  // cancelled; false if it was cancelled.
  bool SetUncancellable() { return this->core() == nullptr || this->core()->SetUncancellable(); }

 protected:
  // Adopts one reference to `core` (a subclass's state).
  Promise(internal::AdoptCoreTag, internal::FutureCore<T>* core) : Future<T>(core) {}

 private:
  absl::Status AlreadyComplete() const {
    if (this->core() == nullptr) return absl::FailedPreconditionError("empty promise");
    return absl::FailedPreconditionError(this->IsCancelled() ? "promise already cancelled"
                                                             : "promise already complete");
  }
};

// A future that has already succeeded with `value`; listeners run on `executor`.
template <typename T>
Future<T> MakeSucceededFuture(EventExecutor* executor, T value) {
  Promise<T> promise(executor);
  promise.TrySuccess(std::move(value));
  return promise;
}
template <typename T = void>
  requires(std::is_void_v<T>)
Future<void> MakeSucceededFuture(EventExecutor* executor) {
  Promise<void> promise(executor);
  promise.TrySuccess();
  return promise;
}

// A future that has already failed with `cause` (InvalidArgument if `cause` is OK).
template <typename T>
Future<T> MakeFailedFuture(EventExecutor* executor, absl::Status cause) {
  Promise<T> promise(executor);
  promise.TryFailure(cause.ok() ? absl::InvalidArgumentError("MakeFailedFuture needs a non-OK cause")
                                : std::move(cause));
  return promise;
}

namespace internal {

// Completes `next` from the result `r` of a Then continuation.
template <typename U, typename R>
void CompleteFrom(Promise<U>& next, R&& r) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, absl::Status>) {
    if (r.ok()) {
      next.TrySuccess();
    } else {
      next.TryFailure(std::forward<R>(r));
    }
  } else if constexpr (std::is_base_of_v<Future<U>, D>) {
    Future<U> inner = std::forward<R>(r);
    inner.AddListener([next](const Future<U>& done) mutable {
      if (done.IsSuccess()) {
        if constexpr (std::is_void_v<U>) {
          next.TrySuccess();
        } else {
          next.TrySuccess(*done.GetNow());
        }
      } else if (done.IsCancelled()) {
        next.Cancel();
      } else {
        next.TryFailure(done.Cause());
      }
    });
  } else if constexpr (!std::is_same_v<D, U> && std::is_same_v<D, absl::StatusOr<U>>) {
    if (r.ok()) {
      next.TrySuccess(*std::forward<R>(r));
    } else {
      next.TryFailure(std::forward<R>(r).status());
    }
  } else {
    next.TrySuccess(std::forward<R>(r));
  }
}

}  // namespace internal

template <typename T>
template <typename F>
auto Future<T>::Then(F&& f) const -> Future<typename internal::ThenResult<
    typename internal::ThenInvokeResult<T, std::decay_t<F>>::type>::type> {
  using R = typename internal::ThenInvokeResult<T, std::decay_t<F>>::type;
  using U = typename internal::ThenResult<R>::type;
  Promise<U> next(executor());
  AddListener([next, fn = std::forward<F>(f)](const Future<T>& done) mutable {
    if (done.IsCancelled()) {
      next.Cancel();
      return;
    }
    if (!done.IsSuccess()) {
      next.TryFailure(done.Cause());
      return;
    }
    // A cancelled (or otherwise completed) downstream future does not run f.
    if (next.IsDone()) return;
    try {
      if constexpr (std::is_void_v<R>) {
        if constexpr (std::is_void_v<T>) {
          fn();
        } else {
          fn(*done.GetNow());
        }
        next.TrySuccess();
      } else if constexpr (std::is_void_v<T>) {
        internal::CompleteFrom(next, fn());
      } else {
        internal::CompleteFrom(next, fn(*done.GetNow()));
      }
    } catch (const std::exception& e) {
      next.TryFailure(absl::InternalError(e.what()));
    } catch (...) {
      next.TryFailure(absl::InternalError("continuation threw a non-std exception"));
    }
  });
  return next;
}

}  // namespace gyre

#endif  // GYRE_CONCURRENT_PROMISE_H_
