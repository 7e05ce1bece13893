#include "gyre/concurrent/internal/future_core.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace internal {
namespace {

// How long Await spins before sleeping. Relaxed: a tuning knob, read once per wait.
std::atomic<int64_t> await_spin_ns{20000};

// Times a waiter yielded behind a held future lock. Relaxed: a statistic for tests.
std::atomic<uint64_t> lock_yields{0};

}  // namespace

void SetAwaitSpinForTesting(absl::Duration spin) {
  await_spin_ns.store(absl::ToInt64Nanoseconds(spin), std::memory_order_relaxed);
}

void FutureLockBackoff() {
  lock_yields.fetch_add(1, std::memory_order_relaxed);
  std::this_thread::yield();
}

uint64_t FutureLockYieldsForTesting() { return lock_yields.load(std::memory_order_relaxed); }

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

bool WaitOn(WaitBlock* block, absl::FunctionRef<bool()> done,
            std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(block->mu);
  while (!done()) {
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      block->cv.wait(lock);
    } else {
      if (std::chrono::steady_clock::now() >= deadline) return done();
      block->cv.wait_until(lock, deadline);
    }
  }
  return true;
}

bool FutureCoreBase::Wait(SteadyTime deadline) {
  // The deadline first: a wait that has already run out (AwaitFor(0)) neither spins nor
  // sleeps.
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return IsDone();
  // Spin briefly: a completion that is microseconds away (a ping-pong between threads)
  // then costs no futex sleep and wake. Bounded by the spin budget and by the deadline,
  // so a waiter that has to wait longer does not burn a core: after the budget it sleeps.
  const int64_t budget_ns = await_spin_ns.load(std::memory_order_relaxed);
  if (budget_ns > 0) {
    const auto spin_end = std::min(deadline, now + std::chrono::nanoseconds(budget_ns));
    for (int i = 1;; ++i) {
      if (IsDone()) return true;
      SpinPause();
      if ((i & 63) == 0 && std::chrono::steady_clock::now() >= spin_end) break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return IsDone();
  }
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
