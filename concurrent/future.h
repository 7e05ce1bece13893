// Future<T>: the read side of an asynchronous result, with Netty's semantics.
//
//   Promise<int> promise = loop->NewPromise<int>();
//   Future<int> future = promise;                    // a Promise IS-A Future
//   future.AddListener([](const Future<int>& f) {    // runs on `loop`'s thread
//     if (f.IsSuccess()) Use(*f.GetNow());
//   });
//   promise.TrySuccess(42);
//
// States (the result is set once, by compare-and-swap):
//
//        +------------ Cancel() ------------------------------> CANCELLED
//        |                                                      (cause kCancelled)
//   PENDING --SetUncancellable()--> UNCANCELLABLE --+
//        |                                          +--> SUCCESS (GetNow() != null)
//        +------------------------------------------+--> FAILURE (Cause() not OK)
//
// IsDone() is true in the three final states and never changes back.
//
// Listener rules (as Netty's DefaultPromise):
//  - listeners run on executor(): inline, in the order added, when the completing (or
//    adding) thread is that executor's thread; otherwise as a task on it;
//  - a listener added after completion is notified too; one added while others are
//    being notified runs after them; each listener runs exactly once;
//  - inline notification nests at most 8 deep, then continues as a task;
//  - a listener that throws is logged and the others still run;
//  - completing a promise that has no listeners never touches its executor;
//  - if the executor rejects the notification task (it is shut down, or its queue is
//    full), the listeners run on the thread that completed the promise (or added the
//    listener) instead, so that none is lost.
// A future with a null executor notifies on whichever thread completes it (or adds the
// listener), bounding recursion the same way.
//
// Thread safety: every method is thread-safe. Copies share one state.
// Ownership: the state lives while any Future/Promise copy or pending notification
// refers to it. A listener is destroyed after it ran (on the thread that ran it), or with
// the state if it never ran, or by RemoveListener. A listener may capture the future (a
// cycle that breaks when it has run). As with any object, a handle must outlive the calls
// made on it: complete a promise through a handle the completing thread owns (a copy),
// not through a reference to another thread's handle that may be destroyed meanwhile.
// See docs/futures.md.
#ifndef GYRE_CONCURRENT_FUTURE_H_
#define GYRE_CONCURRENT_FUTURE_H_

#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/concurrent/internal/future_core.h"

namespace gyre {

class EventExecutor;
template <typename T>
class Future;
template <typename T>
class Promise;

namespace internal {

template <typename R>
struct ThenResult {
  using type = R;
};
template <>
struct ThenResult<absl::Status> {
  using type = void;
};
template <typename U>
struct ThenResult<absl::StatusOr<U>> {
  using type = U;
};
template <typename U>
struct ThenResult<Future<U>> {
  using type = U;
};
template <typename U>
struct ThenResult<Promise<U>> {
  using type = U;
};

template <typename T, typename F>
struct ThenInvokeResult {
  using type = std::invoke_result_t<F&, const T&>;
};
template <typename F>
struct ThenInvokeResult<void, F> {
  using type = std::invoke_result_t<F&>;
};

}  // namespace internal

template <typename T>
class Future {
 public:
  using ValueType = T;
  // What GetNow() returns: a pointer to the value, or for void a bool.
  using GetNowType = std::conditional_t<std::is_void_v<T>, bool, const T*>;
  // What Sync() returns.
  using SyncType = std::conditional_t<std::is_void_v<T>, absl::Status, absl::StatusOr<T>>;
  using Listener = absl::AnyInvocable<void(const Future<T>&)>;

  // An empty handle; only assignment, destruction and valid() may be used on it.
  Future() = default;
  Future(const Future& other) : core_(other.core_) {
    if (core_ != nullptr) core_->AddRef();
  }
  Future(Future&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  Future& operator=(const Future& other) {
    if (other.core_ != nullptr) other.core_->AddRef();
    Reset(other.core_);
    return *this;
  }
  Future& operator=(Future&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.core_, nullptr));
    return *this;
  }
  ~Future() {
    if (core_ != nullptr) core_->Release();
  }

  // True unless default-constructed or moved from.
  bool valid() const { return core_ != nullptr; }

  bool IsDone() const { return core_->IsDone(); }
  bool IsSuccess() const { return core_->IsSuccess(); }
  bool IsCancelled() const { return core_->IsCancelled(); }
  // True while pending and not marked uncancellable.
  bool IsCancellable() const { return core_->IsCancellable(); }

  // Returns OK while pending or on success; the failure otherwise (code kCancelled when
  // cancelled).
  absl::Status Cause() const { return core_->Cause(); }

  // Returns the value if succeeded, else nullptr (void: true if succeeded). The pointer
  // stays valid while any handle to this future lives.
  GetNowType GetNow() const {
    if constexpr (std::is_void_v<T>) {
      return core_->IsSuccess();
    } else {
      return core_->IsSuccess() ? &core_->value() : nullptr;
    }
  }

  // Cancels: the future completes as cancelled (cause kCancelled) and its listeners are
  // notified. Returns false if already done or uncancellable.
  bool Cancel() { return core_->Cancel(); }

  // Blocks until done. Returns FailedPrecondition ("blocking operation") at once, without
  // blocking, when called on the thread of executor() while not done: that thread is the
  // one that would complete it. Otherwise returns OK (whatever the outcome: see Cause()).
  absl::Status Await() const { return core_->Await(); }

  // Waits at most `timeout` / until `deadline`; returns IsDone(). Never blocks on the
  // executor()'s own thread (returns IsDone() at once there).
  // Both measure on the monotonic clock (AwaitUntil converts its wall-clock deadline
  // once), so a step of the wall clock neither cuts a wait short nor stretches it.
  bool AwaitFor(absl::Duration timeout) const { return core_->AwaitFor(timeout); }
  bool AwaitUntil(absl::Time deadline) const { return core_->AwaitUntil(deadline); }

  // Await(), then a copy of the value, or the cause. Returns Await()'s FailedPrecondition
  // on the executor's own thread. Thread-safe: it only reads. Only for void or copyable
  // T; a move-only value is taken with TakeSync().
  SyncType Sync() const
    requires(std::is_void_v<T> || std::is_copy_constructible_v<T>)
  {
    absl::Status waited = core_->Await();
    if (!waited.ok()) return waited;
    if (!core_->IsSuccess()) return core_->Cause();
    if constexpr (std::is_void_v<T>) {
      return absl::OkStatus();
    } else {
      return absl::StatusOr<T>(core_->value());
    }
  }

  // Await(), then the value moved out of the shared state, or the cause. The value is
  // taken: every handle to this future (GetNow() included) then sees the moved-from
  // value, so the one owner of the result calls it once, and no other thread reads the
  // value meanwhile. For move-only T (std::unique_ptr and the like) this is how the
  // value comes out.
  absl::StatusOr<T> TakeSync()
    requires(!std::is_void_v<T>)
  {
    absl::Status waited = core_->Await();
    if (!waited.ok()) return waited;
    if (!core_->IsSuccess()) return core_->Cause();
    return absl::StatusOr<T>(std::move(core_->mutable_value()));
  }

  // Adds a listener, notified once when done (see the class comment for where and when).
  // `listener` is any callable taking `const Future<T>&` (stored as a Listener). Returns
  // an id for RemoveListener.
  template <typename F>
  ListenerId AddListener(F&& listener) const {
    return core_->AddListener(std::forward<F>(listener));
  }

  // Removes a listener that has not been notified yet; false if unknown or notified.
  bool RemoveListener(ListenerId id) const { return core_->RemoveListener(id); }

  // Where listeners are notified; may be null.
  EventExecutor* executor() const { return core_->executor(); }

  // Returns a future completed by f applied to this future's value, on executor().
  // `f` takes `const T&` (nothing for void) and returns U, absl::StatusOr<U>,
  // absl::Status (-> Future<void>) or Future<U>. Failure and cancellation of this future
  // propagate without calling f; if the returned future was cancelled first, f does not
  // run; if f throws, the returned future fails with Internal.
  template <typename F>
  auto Then(F&& f) const -> Future<typename internal::ThenResult<
      typename internal::ThenInvokeResult<T, std::decay_t<F>>::type>::type>;

 protected:
  explicit Future(internal::FutureCore<T>* core) : core_(core) {}  // adopts one ref
  internal::FutureCore<T>* core() const { return core_; }
  // Drops this handle's reference (if any) and adopts `core`'s.
  void Reset(internal::FutureCore<T>* core) {
    internal::FutureCore<T>* old = std::exchange(core_, core);
    if (old != nullptr) old->Release();
  }

 private:
  friend class internal::FutureCore<T>;
  template <typename U>
  friend class Future;

  Future(internal::FutureCore<T>* core, internal::NoRefTag) : core_(core) {}
  void ReleaseWithoutUnref() { core_ = nullptr; }

  internal::FutureCore<T>* core_ = nullptr;
};

}  // namespace gyre

// Promise, the factories and Then's definition.
#include "gyre/concurrent/promise.h"

#endif  // GYRE_CONCURRENT_FUTURE_H_
