// The shared state behind Future<T> / Promise<T>: one heap block per promise holding
// the result, the listeners, and (only once someone blocks) a wait block.
//
// Design memo. Everything mutable sits behind one 32-bit state word:
//
//   bits 0..2  kind:  kPending, kUncancellable, kSuccess, kFailure, kCancelled
//   bit 3      kLocked        a tiny spin lock over the fields below
//   bit 5      kHasListeners  the listener list may be non-empty
//   bit 6      kHasWaiters    a thread may be blocked in Await
//   bit 7      kNotifying     listeners run inline with no reference held (see there)
//   bit 8      kDeletePending the last reference went meanwhile: the notifier deletes
//
// Completion takes the lock (one CAS), writes the result, moves the listeners out when
// they can run inline, and publishes the done kind with one release store. Which cores
// a thread is notifying right now is kept in a per-thread stack (at most
// kMaxListenerStackDepth deep; notification_stack.h), not in the shared word: a listener
// added, on that thread, to a future whose listeners it is running waits for the running
// ones to finish, with no extra atomic operation on the common path. So a promise
// nobody listens to or waits on completes with a single atomic read-modify-write, and a
// reader's acquire load of a done kind sees the result. Critical sections are a handful
// of instructions and never run user code (except T's move constructor while storing
// the value: it must not touch the same future).
//
// The first listener lives inline in the core (no heap array); more spill to the heap.
//
// Thread safety: all members are thread-safe unless marked otherwise.
// Ownership: intrusively reference counted; each Future/Promise handle holds one ref,
// and so does a queued notification task.
#ifndef GYRE_CONCURRENT_INTERNAL_FUTURE_CORE_H_
#define GYRE_CONCURRENT_INTERNAL_FUTURE_CORE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/concurrent/internal/notification_stack.h"
#include "gyre/concurrent/internal/small_block.h"

namespace gyre {

class EventExecutor;
template <typename T>
class Future;

// Identifies a listener for RemoveListener. Ids are unique per future, never 0.
using ListenerId = uint64_t;

namespace internal {

struct NoRefTag {};
struct AdoptCoreTag {};

// Non-template helpers (future_core.cc).

// Logs a listener that threw; never throws.
void LogListenerException(const char* what);

// The cause of every cancelled future (a shared copy: no allocation per Cancel).
absl::Status CancelledCause();

// The blocking-operation error returned by Await on the future's own executor thread.
absl::Status BlockingOperationError();

// Sets how long Await spins (checking for completion) before it sleeps; default 20 us,
// zero to sleep at once. For benchmarks and tests.
void SetAwaitSpinForTesting(absl::Duration spin);

// A thread that found a future's lock held for longer than a short spin gives up its
// core (sched_yield), so a preempted holder gets to run; counted for tests.
void FutureLockBackoff();
uint64_t FutureLockYieldsForTesting();

// Where threads blocked in Await sleep. Allocated on first Await only.
struct WaitBlock;
WaitBlock* NewWaitBlock();
void DeleteWaitBlock(WaitBlock* block);
void WakeAll(WaitBlock* block);
// Blocks until done() or the monotonic `deadline` (time_point::max(): none). Returns
// done().
bool WaitOn(WaitBlock* block, absl::FunctionRef<bool()> done,
            std::chrono::steady_clock::time_point deadline);

// The untyped part of the state machine.
class FutureCoreBase {
 public:
  enum Kind : uint32_t {
    kPending = 0,
    kUncancellable = 1,
    kSuccess = 2,
    kFailure = 3,
    kCancelled = 4,
  };
  static constexpr uint32_t kKindMask = 7;
  static constexpr uint32_t kLocked = 1u << 3;
  static constexpr uint32_t kHasListeners = 1u << 5;
  static constexpr uint32_t kHasWaiters = 1u << 6;
  // A thread runs this core's listeners without a reference of its own (the inline
  // notification of FinishAndNotify): should the last reference go meanwhile, the core
  // is not deleted but marked kDeletePending, and the notifier deletes it when done.
  static constexpr uint32_t kNotifying = 1u << 7;
  static constexpr uint32_t kDeletePending = 1u << 8;

  explicit FutureCoreBase(EventExecutor* executor) : executor_(executor) {}
  // Starts with `initial_refs` references (at least one), for a creator that hands
  // several out at once: plain stores instead of an atomic increment per extra holder.
  FutureCoreBase(EventExecutor* executor, int32_t initial_refs)
      : refs_(initial_refs), executor_(executor) {}
  FutureCoreBase(const FutureCoreBase&) = delete;

  static void* operator new(size_t size) { return AllocateSmallBlock(size); }
  // Sized: with the virtual destructor, `size` is the size of the most derived type.
  static void operator delete(void* p, size_t size) noexcept { FreeSmallBlock(p, size); }
  FutureCoreBase& operator=(const FutureCoreBase&) = delete;

  void AddRef() {
    // Relaxed: a new reference is made from an existing one, which keeps the core alive.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void Release() {
    // Acquire on the load / acq_rel on the decrement: the deleting thread must see every
    // write other holders made before dropping their references. A count of one cannot
    // grow concurrently (growing needs a reference), so the load shortcut is safe.
    if (refs_.load(std::memory_order_acquire) == 1 ||
        refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Acquire: a notifier's kNotifying was published by its Unlock, before any of its
      // listeners could hand a reference on.
      if (ABSL_PREDICT_FALSE((state_.load(std::memory_order_acquire) & kNotifying) != 0) &&
          DeferDeletion()) {
        return;
      }
      DeleteThis();
    }
  }

  EventExecutor* executor() const { return executor_; }

  // True when the caller holds the only reference and no listener or waiter is
  // registered: no one can observe what happens to the state from here on. Acquire: pairs
  // with the release of other holders' references (and the listeners they added first).
  bool IsUnobserved() const {
    return refs_.load(std::memory_order_acquire) == 1 &&
           (state_.load(std::memory_order_acquire) & (kHasListeners | kHasWaiters)) == 0;
  }

  uint32_t kind() const {
    // Acquire: pairs with the release store that publishes a done kind and its result.
    return state_.load(std::memory_order_acquire) & kKindMask;
  }
  static bool IsDoneKind(uint32_t k) { return k >= kSuccess; }
  bool IsDone() const { return IsDoneKind(kind()); }
  bool IsSuccess() const { return kind() == kSuccess; }
  bool IsCancelled() const { return kind() == kCancelled; }
  bool IsCancellable() const { return kind() == kPending; }

  // The failure or cancellation cause; OK while pending or on success.
  absl::Status Cause() const {
    const uint32_t k = kind();
    if (k == kFailure) return cause_;
    return k == kCancelled ? CancelledCause() : absl::OkStatus();
  }

  bool SetUncancellable() {
    uint32_t s = Lock();
    uint32_t k = s & kKindMask;
    if (k == kPending) {
      Unlock((s & ~kKindMask) | kUncancellable);
      return true;
    }
    Unlock(s);
    return k != kCancelled;
  }

  absl::Status Await() {
    if (IsDone()) return absl::OkStatus();
    if (IsOnExecutorThread(executor_)) return BlockingOperationError();
    Wait(SteadyTime::max());
    return absl::OkStatus();
  }

  // Waits are measured on the monotonic clock, which never steps; SteadyTime::max() is
  // no deadline.
  using SteadyTime = std::chrono::steady_clock::time_point;

  // Returns IsDone() after waiting `timeout` at most. On the future's own executor
  // thread it does not block (that would deadlock) and returns IsDone().
  bool AwaitFor(absl::Duration timeout) {
    if (IsDone()) return true;
    if (IsOnExecutorThread(executor_)) return false;
    return Wait(SteadyDeadlineAfter(timeout));
  }
  // As AwaitFor(deadline - absl::Now()): the wall-clock deadline is turned into a
  // monotonic one once, so a step of the wall clock during the wait does not move it.
  bool AwaitUntil(absl::Time deadline) {
    if (deadline == absl::InfiniteFuture()) return AwaitFor(absl::InfiniteDuration());
    return AwaitFor(deadline - absl::Now());
  }

  static SteadyTime SteadyDeadlineAfter(absl::Duration timeout) {
    if (timeout == absl::InfiniteDuration()) return SteadyTime::max();
    const SteadyTime now = std::chrono::steady_clock::now();
    if (timeout <= absl::ZeroDuration()) return now;
    // Saturate: a timeout of centuries must not overflow the clock's range.
    const auto left = SteadyTime::max() - now;
    const auto want = absl::ToChronoNanoseconds(timeout);
    return want >= left ? SteadyTime::max() : now + want;
  }

 protected:
  virtual ~FutureCoreBase() {
    if (waiters_ != nullptr) DeleteWaitBlock(waiters_);
  }
  virtual void DeleteThis() { delete this; }

  // Spins until the lock bit is ours; returns the state (with kLocked set). The critical
  // sections are short (a few stores; at most a vector growth or T's constructor), so a
  // waiter pauses kSpinsBeforeYield times, then yields between looks: a holder that was
  // preempted is not kept from its core by the threads waiting for it.
  uint32_t Lock() {
    return LockUnless([](uint32_t) { return false; });
  }
  // Releases the lock, publishing `s` (kLocked cleared) and every write made under it.
  void Unlock(uint32_t s) { state_.store(s & ~kLocked, std::memory_order_release); }

  // Locks only if still completable by `target`; returns 0 when not (already done, or
  // cancel against an uncancellable future), else the locked state.
  uint32_t LockForCompletion(uint32_t target) {
    return LockUnless([target](uint32_t s) {
      const uint32_t k = s & kKindMask;
      return IsDoneKind(k) || (target == kCancelled && k == kUncancellable);
    });
  }

  // The lock loop: returns 0 as soon as `refuse(state)` holds, else the locked state.
  template <typename Refuse>
  uint32_t LockUnless(Refuse refuse) {
    uint32_t s = state_.load(std::memory_order_relaxed);
    for (int spins = 0;;) {
      if (refuse(s)) return 0;
      if (ABSL_PREDICT_TRUE((s & kLocked) == 0)) {
        // Acquire: the critical section must see the previous holder's writes.
        if (state_.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return s | kLocked;
        }
      } else {
        WaitForUnlock(spins);
        s = state_.load(std::memory_order_relaxed);
      }
    }
  }

  static constexpr int kSpinsBeforeYield = 64;
  static void WaitForUnlock(int& spins) {
    if (spins < kSpinsBeforeYield) {
      ++spins;
      SpinPause();
    } else {
      FutureLockBackoff();
    }
  }

  // The last reference went while a thread may be notifying without one: under the
  // lock (which serializes this with EndNotifying), mark the deletion for the notifier
  // if it still notifies (true), else leave it to the caller (false). Out of line: it
  // is rare, and keeping it out of Release lets Release inline into the hot paths.
  ABSL_ATTRIBUTE_NOINLINE bool DeferDeletion() {
    const uint32_t s = Lock();
    if ((s & kNotifying) == 0) {
      Unlock(s);
      return false;
    }
    Unlock(s | kDeletePending);
    return true;
  }

  // Ends an unreferenced notification (see kNotifying). The core must not be touched
  // after this returns: it may have been deleted here.
  void EndNotifying() {
    const uint32_t s = Lock();
    Unlock(s & ~(kNotifying | kDeletePending));
    if (ABSL_PREDICT_FALSE((s & kDeletePending) != 0)) DeleteThis();
  }

  // Called with the lock held by a completer that saw kHasWaiters; wakes after unlock.
  WaitBlock* waiters_locked() const { return waiters_; }

  void WakeWaiters(WaitBlock* block) { WakeAll(block); }

  static void SpinPause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  bool Wait(SteadyTime deadline);

  std::atomic<uint32_t> state_{kPending};
  std::atomic<int32_t> refs_{1};
  EventExecutor* const executor_;
  // Written under the lock before a failure kind is published; then immutable. A
  // cancelled core keeps it OK: its cause is the shared CancelledCause(), copied only
  // when asked for (a cancel then costs no reference-count traffic on a shared Status).
  absl::Status cause_;
  // Guarded by the lock bit.
  WaitBlock* waiters_ = nullptr;
};

// Storage for T, or nothing for void.
struct Empty {};
template <typename T>
using StoredType = std::conditional_t<std::is_void_v<T>, Empty, T>;

// Raw bytes for an S constructed later; no bytes at all for an empty S (with
// [[no_unique_address]], a void future's state carries no storage).
template <typename S, bool kEmpty = std::is_empty_v<S>>
struct RawStorage {
  void* get() { return bytes; }
  const void* get() const { return bytes; }
  alignas(S) unsigned char bytes[sizeof(S)];
};
template <typename S>
struct RawStorage<S, true> {
  void* get() { return this; }
  const void* get() const { return this; }
};

template <typename T>
class FutureCore : public FutureCoreBase {
 public:
  using Listener = absl::AnyInvocable<void(const Future<T>&)>;
  using Stored = StoredType<T>;

  explicit FutureCore(EventExecutor* executor) : FutureCoreBase(executor) {}
  FutureCore(EventExecutor* executor, int32_t initial_refs)
      : FutureCoreBase(executor, initial_refs) {}

  // Valid only after IsSuccess() returned true (acquire).
  const Stored& value() const {
    return *std::launder(static_cast<const Stored*>(storage_.get()));
  }
  Stored& mutable_value() { return *std::launder(static_cast<Stored*>(storage_.get())); }

  template <typename... Args>
  bool TrySuccess(Args&&... args) {
    uint32_t s = LockForCompletion(kSuccess);
    if (s == 0) return false;
    ::new (storage_.get()) Stored(std::forward<Args>(args)...);
    FinishCompletion(s, kSuccess);
    return true;
  }

  // `cause` must be non-OK (checked by the caller).
  bool TryFailure(absl::Status cause) {
    uint32_t s = LockForCompletion(kFailure);
    if (s == 0) return false;
    cause_ = std::move(cause);
    FinishCompletion(s, kFailure);
    return true;
  }

  bool Cancel() {
    uint32_t s = LockForCompletion(kCancelled);
    if (s == 0) return false;
    FinishCompletion(s, kCancelled);  // runs OnCancelled() before the listeners
    return true;
  }

  template <typename F>
  ListenerId AddListener(F&& f) {
    using Fn = std::decay_t<F>;
    if constexpr (FitsTrivialSlot<Fn>()) {
      // A small trivially copyable callable (a lambda capturing pointers or references)
      // is copied as bytes into the first slot: no type-erasure manager, no user code
      // under the lock, and taking or destroying it later is a memcpy or nothing.
      Fn copy(std::forward<F>(f));
      uint32_t s = Lock();
      if (ABSL_PREDICT_TRUE(first_id_ == 0)) {
        ListenerId id = ++next_listener_id_;
        first_id_ = static_cast<uint32_t>(id);
        std::memcpy(first_.bytes, static_cast<const void*>(&copy), sizeof(Fn));
        first_invoke_ = &InvokeTrivial<Fn>;
        return FinishAdd(s, id);
      }
      Unlock(s);
    }
    // Built before locking: constructing a callable may run arbitrary code.
    Listener listener(std::forward<F>(f));
    uint32_t s = Lock();
    ListenerId id = ++next_listener_id_;
    if (first_id_ == 0) {
      first_id_ = static_cast<uint32_t>(id);
      first_invoke_ = nullptr;
      ::new (&first_.fn) Listener(std::move(listener));
    } else {
      if (more_ == nullptr) more_ = new std::vector<Entry>();
      more_->push_back(Entry{id, std::move(listener)});
    }
    return FinishAdd(s, id);
  }

  // Publishes an added listener (unlocking) and notifies it if the future is done.
  ListenerId FinishAdd(uint32_t s, ListenerId id) {
    Unlock(s | kHasListeners);
    // Added on this thread while it runs this future's listeners: the running notifier
    // picks it up after them.
    bool notify = IsDoneKind(s & kKindMask) && !IsNotifying(this);
    if (notify) NotifyListeners();
    return id;
  }

  bool RemoveListener(ListenerId id) {
    if (id == 0) return false;
    Listener doomed;  // destroyed after unlocking: its destructor is user code
    uint32_t s = Lock();
    bool found = false;
    if (first_id_ == id) {
      if (first_invoke_ == nullptr) {
        doomed = std::move(first_.fn);
        first_.fn.~Listener();
      }
      first_invoke_ = nullptr;
      first_id_ = 0;
      found = true;
    } else if (more_ != nullptr) {
      for (auto it = more_->begin(); it != more_->end(); ++it) {
        if (it->id == id) {
          doomed = std::move(it->fn);
          more_->erase(it);
          found = true;
          break;
        }
      }
    }
    Unlock(HasListenersLocked() ? s : (s & ~kHasListeners));
    return found;
  }

 protected:
  ~FutureCore() override {
    if (kind() == kSuccess) mutable_value().~Stored();
    if (first_id_ != 0 && first_invoke_ == nullptr) first_.fn.~Listener();
    delete more_;
  }

  // Hook for subclasses (scheduled tasks) run by a successful Cancel(), once the state
  // is published as cancelled and before the listeners run: a listener may destroy the
  // last handle, after which the state must not be touched.
  virtual void OnCancelled() {}

  // Calls f(const Future<T>&) with a handle to this core that costs no reference count
  // traffic; the caller must hold a reference for the duration.
  template <typename F>
  void WithHandle(F&& f) {
    Future<T> self(this, NoRefTag{});
    f(static_cast<const Future<T>&>(self));
    self.ReleaseWithoutUnref();
  }

 private:
  struct Entry {
    ListenerId id = 0;  // 0: empty slot
    Listener fn;
  };

  static constexpr size_t kTrivialSlotBytes = 2 * sizeof(void*);

  template <typename Fn>
  static constexpr bool FitsTrivialSlot() {
    return std::is_trivially_copyable_v<Fn> && sizeof(Fn) <= kTrivialSlotBytes &&
           alignof(Fn) <= alignof(void*) && !std::is_same_v<Fn, Listener> &&
           std::is_invocable_v<Fn&, const Future<T>&>;
  }

  template <typename Fn>
  static void InvokeTrivial(void* bytes, const Future<T>& self) {
    // The bytes were copied from an Fn, which is trivially copyable: they are one.
    (*std::launder(reinterpret_cast<Fn*>(bytes)))(self);
  }

  using InvokeFn = void (*)(void* bytes, const Future<T>& self);

  // The first listener's callable: a small trivially copyable one held as bytes (with
  // an InvokeFn beside it), or a type-erased one; which, and whether either is alive,
  // is kept beside it. Copying the bytes form is a memcpy.
  union FirstCallable {
    FirstCallable() {}
    ~FirstCallable() {}
    alignas(void*) unsigned char bytes[kTrivialSlotBytes];
    Listener fn;
  };

  // The first listener as taken out of the core to run after unlocking.
  struct FirstSlot {
    ListenerId id = 0;  // 0: empty
    InvokeFn invoke = nullptr;
    alignas(void*) unsigned char bytes[kTrivialSlotBytes];
    std::optional<Listener> fn;
  };

  // Listeners moved out of the core under the lock, run after unlocking.
  struct Taken {
    FirstSlot first;
    std::vector<Entry>* more = nullptr;
  };

  bool HasListenersLocked() const {
    return first_id_ != 0 || (more_ != nullptr && !more_->empty());
  }

  void TakeLocked(Taken& taken) {
    if (first_id_ != 0) {
      taken.first.id = std::exchange(first_id_, 0);
      if (first_invoke_ != nullptr) {
        taken.first.invoke = std::exchange(first_invoke_, nullptr);
        std::memcpy(taken.first.bytes, first_.bytes, kTrivialSlotBytes);
      } else {
        taken.first.fn.emplace(std::move(first_.fn));
        first_.fn.~Listener();
      }
    }
    if (more_ != nullptr && !more_->empty()) taken.more = std::exchange(more_, nullptr);
  }

  // Completes the locked transition to `kind` and notifies.
  void FinishCompletion(uint32_t s, uint32_t kind) {
    WaitBlock* waiters = (s & kHasWaiters) ? waiters_ : nullptr;
    uint32_t done = (s & ~(kKindMask | kHasWaiters)) | kind;
    if (ABSL_PREDICT_TRUE(waiters == nullptr)) {
      if ((s & kHasListeners) == 0) {
        // No one to notify: publish, and for a cancel run the hook (see OnCancelled).
        Unlock(done);
        if (kind == kCancelled) OnCancelled();
      } else if (kind != kCancelled && first_invoke_ != nullptr && more_ == nullptr) {
        RunOneTrivialListener(s, done);
      } else {
        FinishAndNotify(s, done);
      }
      return;
    }
    // A woken waiter may drop the last handle at once (a promise completed through a
    // reference, then destroyed by the thread that awaited it): keep the state alive
    // until this call is done with it.
    AddRef();
    FinishAndNotify(s, done, waiters);
    Release();
  }

  void FinishAndNotify(uint32_t s, uint32_t done, WaitBlock* waiters = nullptr) {
    const bool cancelled = (done & kKindMask) == kCancelled;
    if ((s & kHasListeners) == 0) {
      Unlock(done);
      if (waiters != nullptr) WakeWaiters(waiters);
      if (cancelled) OnCancelled();
    } else if (CanNotifyInline(executor_) && !IsNotifying(this)) {
      // Take the listeners within this critical section: saves a second lock round.
      Taken taken;
      TakeLocked(taken);
      // A listener may destroy the last handle (an executor deleted from its own
      // termination listener drops its promise), here or by handing it to another
      // thread: kNotifying keeps the core alive until EndNotifying, at the cost of one
      // locked round there instead of a reference taken and dropped.
      Unlock((done & ~kHasListeners) | kNotifying);
      if (waiters != nullptr) WakeWaiters(waiters);
      if (cancelled) OnCancelled();
      RunNotificationInline(this, [&] {
        RunAll(taken);
        DrainAdded();
      });
      EndNotifying();
    } else {
      Unlock(done);
      if (waiters != nullptr) WakeWaiters(waiters);
      if (cancelled) OnCancelled();
      NotifyListeners();
    }
  }

  // FinishAndNotify's common case with a listener, in a frame of its own: one small
  // trivially copyable listener (no heap list), no waiter, not a cancel, run inline here
  // (else FinishAndNotify). Called with the lock held; the rest is as in FinishAndNotify's
  // inline branch, without its Taken slot (an optional type-erased listener) and the
  // registers its other branches need: about 30 instructions fewer per completion.
  ABSL_ATTRIBUTE_NOINLINE void RunOneTrivialListener(uint32_t s, uint32_t done) {
    if (ABSL_PREDICT_FALSE(!CanNotifyInline(executor_) || IsNotifying(this))) {
      FinishAndNotify(s, done);
      return;
    }
    const InvokeFn invoke = std::exchange(first_invoke_, nullptr);
    alignas(void*) unsigned char bytes[kTrivialSlotBytes];
    std::memcpy(bytes, first_.bytes, kTrivialSlotBytes);
    first_id_ = 0;
    Unlock((done & ~kHasListeners) | kNotifying);
    RunNotificationInline(this, [&] {
      RunTrivial(invoke, bytes);
      DrainAdded();
    });
    EndNotifying();
  }

  // Notifies now when allowed on this thread, else from a task on the executor.
  void NotifyListeners() {
    if (CanNotifyInline(executor_)) {
      NotifyNow();
    } else {
      AddRef();  // released by the task
      PostNotification(executor_, &FutureCore::NotifyTask, this);
    }
  }

  static void NotifyTask(void* core) {
    auto* self = static_cast<FutureCore*>(core);
    // The task's own reference pins the core: no second pin as in NotifyNow().
    if (!IsNotifying(self)) RunNotificationInline(self, [self] { self->DrainAdded(); });
    self->Release();
  }

  // Runs every pending listener, unless this thread is already doing so further up the
  // stack (that frame runs them when the current ones are done).
  void NotifyNow() {
    if (IsNotifying(this)) return;
    AddRef();  // a listener may drop the last handle: see FinishAndNotify
    RunNotificationInline(this, [this] { DrainAdded(); });
    Release();
  }

  // Runs the listeners in the list until it stays empty. The common case (nobody added a
  // listener while the others ran) costs one load, inline.
  void DrainAdded() {
    // Acquire: pairs with the Unlock that published kHasListeners and the new entries.
    if (ABSL_PREDICT_FALSE((state_.load(std::memory_order_acquire) & kHasListeners) != 0)) {
      DrainAddedLoop();
    }
  }
  ABSL_ATTRIBUTE_NOINLINE void DrainAddedLoop() {
    while ((state_.load(std::memory_order_acquire) & kHasListeners) != 0) {
      uint32_t s = Lock();
      Taken taken;
      TakeLocked(taken);
      Unlock(s & ~kHasListeners);
      RunAll(taken);
    }
  }

  template <typename Call>
  static void RunGuarded(Call&& call) {
    try {
      call();
    } catch (const std::exception& ex) {
      LogListenerException(ex.what());
    } catch (...) {
      LogListenerException("a non-std exception");
    }
  }

  // Runs the taken listeners. The common case, one small trivially copyable listener,
  // runs inline; any other set goes through RunAllSlow.
  void RunAll(Taken& taken) {
    if (ABSL_PREDICT_TRUE(taken.more == nullptr && taken.first.invoke != nullptr)) {
      RunTrivial(taken.first.invoke, taken.first.bytes);
      return;
    }
    RunAllSlow(taken);
  }
  // Runs one small trivially copyable listener, its bytes at `bytes`, with a non-owning
  // handle (no reference count traffic).
  void RunTrivial(InvokeFn invoke, void* bytes) {
    Future<T> self(this, NoRefTag{});
    RunGuarded([&] { invoke(bytes, self); });
    self.ReleaseWithoutUnref();
  }
  ABSL_ATTRIBUTE_NOINLINE void RunAllSlow(Taken& taken) {
    // The listener sees a non-owning handle: no reference count traffic per listener.
    Future<T> self(this, NoRefTag{});
    if (taken.first.id != 0) {
      FirstSlot& first = taken.first;
      if (first.invoke != nullptr) {
        RunGuarded([&] { first.invoke(first.bytes, self); });
      } else {
        RunGuarded([&] { (*first.fn)(self); });
        first.fn.reset();  // destroyed here, after running
      }
    }
    if (taken.more != nullptr) {
      for (Entry& e : *taken.more) {
        RunGuarded([&] { e.fn(self); });
        e.fn = nullptr;
      }
      delete taken.more;
    }
    self.ReleaseWithoutUnref();
  }

  // Guarded by the lock bit. In this order, a void future's state is 96 bytes: after the
  // base's 40, the callable (16-byte aligned) needs no padding before it.
  InvokeFn first_invoke_ = nullptr;  // set: `first_.bytes` holds the first listener
  FirstCallable first_;              // alive per first_id_ and first_invoke_
  // Ids count up from 1 per state (32 bits, as the counter); 0: no first listener.
  uint32_t first_id_ = 0;
  uint32_t next_listener_id_ = 0;
  std::vector<Entry>* more_ = nullptr;  // owned
  [[no_unique_address]] RawStorage<Stored> storage_;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_FUTURE_CORE_H_
