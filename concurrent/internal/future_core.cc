#include "gyre/concurrent/internal/future_core.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace internal {
namespace {

// Per-thread notification nesting. Only touched by its own thread.
struct NotificationFrame {
  int depth = 0;
  // Notifications of executor-less futures beyond the depth bound, run by the outermost
  // frame. Allocated on first use only.
  std::deque<absl::AnyInvocable<void()>>* deferred = nullptr;
};

thread_local NotificationFrame tls_frame;

}  // namespace

bool IsOnExecutorThread(EventExecutor* executor) {
  return executor != nullptr && executor->InEventLoop();
}

bool CanNotifyInline(EventExecutor* executor) {
  return tls_frame.depth < kMaxListenerStackDepth &&
         (executor == nullptr || executor->InEventLoop());
}

void RunNotificationInline(absl::FunctionRef<void()> fn) {
  NotificationFrame& frame = tls_frame;
  ++frame.depth;
  fn();
  --frame.depth;
  if (frame.depth == 0 && frame.deferred != nullptr) {
    // The outermost frame runs what deeper frames deferred, one level deep each.
    while (!frame.deferred->empty()) {
      absl::AnyInvocable<void()> next = std::move(frame.deferred->front());
      frame.deferred->pop_front();
      ++frame.depth;
      next();
      --frame.depth;
    }
  }
}

void PostNotification(EventExecutor* executor, absl::AnyInvocable<void()> task) {
  if (executor == nullptr) {
    NotificationFrame& frame = tls_frame;
    if (frame.depth == 0) {
      task();  // not nested: nothing to unwind first
      return;
    }
    if (frame.deferred == nullptr) frame.deferred = new std::deque<absl::AnyInvocable<void()>>();
    frame.deferred->push_back(std::move(task));
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

void LogListenerException(const char* what) {
  GYRE_LOG(WARNING) << "a future listener threw: " << what;
}

absl::Status CancelledCause() {
  static const absl::Status* const cause = new absl::Status(absl::CancelledError("cancelled"));
  return *cause;
}

absl::Status BlockingOperationError() {
  return absl::FailedPreconditionError(
      "blocking operation: awaiting a future on its own executor's thread would deadlock");
}

struct WaitBlock {
  std::mutex mu;
  std::condition_variable cv;
};

WaitBlock* NewWaitBlock() { return new WaitBlock; }
void DeleteWaitBlock(WaitBlock* block) { delete block; }

void WakeAll(WaitBlock* block) {
  // Taking the mutex orders this wake after a waiter's check of done(): no lost wakeup.
  { std::lock_guard<std::mutex> lock(block->mu); }
  block->cv.notify_all();
}

bool WaitOn(WaitBlock* block, absl::FunctionRef<bool()> done, absl::Time deadline) {
  std::unique_lock<std::mutex> lock(block->mu);
  while (!done()) {
    if (deadline == absl::InfiniteFuture()) {
      block->cv.wait(lock);
    } else {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return done();
      block->cv.wait_for(lock, absl::ToChronoNanoseconds(left));
    }
  }
  return true;
}

FutureCoreBase::~FutureCoreBase() {
  if (waiters_ != nullptr) DeleteWaitBlock(waiters_);
}

bool FutureCoreBase::Wait(absl::Time deadline) {
  uint32_t s = Lock();
  if (IsDoneKind(s & kKindMask)) {
    Unlock(s);
    return true;
  }
  if (waiters_ == nullptr) waiters_ = NewWaitBlock();
  WaitBlock* block = waiters_;
  Unlock(s | kHasWaiters);
  return WaitOn(block, [this] { return IsDone(); }, deadline);
}

}  // namespace internal
}  // namespace gyre
