// Per-thread notification nesting for future listeners (future_core.h): the cores whose
// listeners this thread is running, innermost last, and the notifications deferred
// beyond the depth bound.
//
// Which cores a thread is notifying right now is kept in a per-thread stack (at most
// kMaxListenerStackDepth deep), not in the future's shared state word: a listener added,
// on that thread, to a future whose listeners it is running waits for the running ones
// to finish, with no extra atomic operation on the common path.
//
// Thread safety: each thread has its own frame; every function here reads or changes
// the calling thread's only.
// Ownership: the frame is plain data with constant initialization (no TLS wrapper
// calls); its deferred queue is allocated on first use only and freed when the thread
// exits.
#ifndef GYRE_CONCURRENT_INTERNAL_NOTIFICATION_STACK_H_
#define GYRE_CONCURRENT_INTERNAL_NOTIFICATION_STACK_H_

#include "absl/base/attributes.h"
#include "absl/functional/any_invocable.h"

namespace gyre {

class EventExecutor;

namespace internal {

// Netty's MAX_LISTENER_STACK_DEPTH: inline notification nests at most this deep, and
// continues as a task (or, without an executor, from the outermost frame) beyond it.
inline constexpr int kMaxListenerStackDepth = 8;

// True when `executor` is non-null and this is its thread.
bool IsOnExecutorThread(EventExecutor* executor);

// Per-thread notification nesting: the cores whose listeners this thread is running,
// innermost last. Plain data with constant initialization (no TLS wrapper calls).
struct NotificationFrame {
  int depth;
  const void* cores[kMaxListenerStackDepth + 2];
  // Notifications of executor-less futures beyond the depth bound, run by the outermost
  // frame (notification_stack.cc). Allocated on first use only.
  void* deferred;
};
inline thread_local NotificationFrame tls_notification_frame{};

// The executor whose thread this is, set by executor threads for their lifetime (null on
// other threads). A fast path for InEventLoop() checks; never required for correctness.
inline thread_local EventExecutor* tls_current_executor = nullptr;

// True when listeners of a future on `executor` may run now on this thread: the
// executor is null (immediate) or this is its thread, and the nesting bound allows.
inline bool CanNotifyInline(EventExecutor* executor) {
  return tls_notification_frame.depth < kMaxListenerStackDepth &&
         (executor == nullptr || executor == tls_current_executor ||
          IsOnExecutorThread(executor));
}

// True when this thread is running the listeners of `core` (further up the stack).
inline bool IsNotifying(const void* core) {
  const NotificationFrame& frame = tls_notification_frame;
  const int n = frame.depth < kMaxListenerStackDepth + 2 ? frame.depth : kMaxListenerStackDepth + 2;
  for (int i = 0; i < n; ++i) {
    if (frame.cores[i] == core) return true;
  }
  return false;
}

// Runs the deferred notifications; called by the outermost frame.
void RunDeferredNotifications();

// Runs `fn` one listener-stack level deeper, marked as notifying `core` (may be null);
// at the outermost level, also runs the notifications DeferNotification deferred.
template <typename F>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void RunNotificationInline(const void* core, F&& fn) {
  NotificationFrame& frame = tls_notification_frame;
  const int depth = frame.depth;
  // The slack in `cores` covers the deferred drain's extra level.
  frame.cores[depth < kMaxListenerStackDepth + 2 ? depth : kMaxListenerStackDepth + 1] = core;
  frame.depth = depth + 1;
  fn();
  frame.depth = depth;
  if (depth == 0 && frame.deferred != nullptr) RunDeferredNotifications();
}

// Runs `task` on `executor` later: as a task there, or, for a null executor, from the
// outermost inline frame on this thread. If the executor rejects the task, logs and runs
// it on this thread rather than losing the notification.
void PostNotification(EventExecutor* executor, absl::AnyInvocable<void()> task);
// As above for a plain function and argument: no allocation on the way to the executor.
void PostNotification(EventExecutor* executor, void (*fn)(void*), void* arg);

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_NOTIFICATION_STACK_H_
