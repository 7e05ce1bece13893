#include "gyre/concurrent/internal/notification_stack.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace internal {
namespace {

using DeferredQueue = std::deque<absl::AnyInvocable<void()>>;

DeferredQueue* Deferred(NotificationFrame& frame) {
  return static_cast<DeferredQueue*>(frame.deferred);
}

// Owns this thread's deferred queue, so it is freed when the thread exits (the frame
// itself is plain data with constant initialization and no destructor).
struct DeferredOwner {
  ~DeferredOwner() {
    tls_notification_frame.deferred = nullptr;
    delete queue;
  }
  DeferredQueue* queue = nullptr;
};
thread_local DeferredOwner tls_deferred_owner;

}  // namespace

bool IsOnExecutorThread(EventExecutor* executor) {
  return executor != nullptr && executor->InEventLoop();
}

void RunDeferredNotifications() {
  NotificationFrame& frame = tls_notification_frame;
  DeferredQueue* queue = Deferred(frame);
  // The outermost frame runs what deeper frames deferred, one level deep each.
  while (!queue->empty()) {
    absl::AnyInvocable<void()> next = std::move(queue->front());
    queue->pop_front();
    ++frame.depth;
    frame.cores[frame.depth - 1] = nullptr;
    next();
    --frame.depth;
  }
}

void PostNotification(EventExecutor* executor, void (*fn)(void*), void* arg) {
  if (executor == nullptr) {
    PostNotification(nullptr, absl::AnyInvocable<void()>([fn, arg] { fn(arg); }));
    return;
  }
  // Two words: the task fits the callable's inline storage, so posting allocates nothing
  // here, and a rejected task can simply be run on this thread from (fn, arg).
  absl::Status status = executor->Execute([fn, arg] { fn(arg); });
  if (!status.ok()) {
    GYRE_LOG(WARNING) << "listener notification task rejected (" << status
                      << "); notifying on the completing thread instead";
    fn(arg);
  }
}

void PostNotification(EventExecutor* executor, absl::AnyInvocable<void()> task) {
  if (executor == nullptr) {
    NotificationFrame& frame = tls_notification_frame;
    if (frame.depth == 0) {
      task();  // not nested: nothing to unwind first
      return;
    }
    if (frame.deferred == nullptr) {
      tls_deferred_owner.queue = new DeferredQueue();
      frame.deferred = tls_deferred_owner.queue;
    }
    Deferred(frame)->push_back(std::move(task));
    return;
  }
  // Execute() destroys a rejected task, so keep it to run here instead.
  auto shared = std::make_shared<absl::AnyInvocable<void()>>(std::move(task));
  absl::Status status = executor->Execute([shared] { (*shared)(); });
  if (!status.ok()) {
    GYRE_LOG(WARNING) << "listener notification task rejected (" << status
                      << "); notifying on the completing thread instead";
    (*shared)();
  }
}

}  // namespace internal
}  // namespace gyre
