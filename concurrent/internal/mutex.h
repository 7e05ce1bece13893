// gyre's locks: thin ABSL_LOCKABLE wrappers over std::mutex and
// std::condition_variable.
//
//   internal::Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_);
//   { internal::MutexLock lock(&mu_); ++count_; }
//
// Why not absl::Mutex: Debian's Abseil is not built with ThreadSanitizer, so TSan cannot
// see absl::Mutex's happens-before edges and reports false races (docs/threading.md).
// libstdc++'s mutex goes through pthread, which TSan intercepts; the annotations keep
// clang's -Wthread-safety analysis.
//
// Thread safety: thread-safe, as the standard types are.
#ifndef GYRE_CONCURRENT_INTERNAL_MUTEX_H_
#define GYRE_CONCURRENT_INTERNAL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace gyre {
namespace internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  // Documents (and tells the analysis) that the caller holds the lock; not checked.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* const mu_;
};

// Condition variable for Mutex. Waits must be called with the mutex held.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }

  // Returns true if the wait timed out.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    std::cv_status result = std::cv_status::no_timeout;
    if (timeout == absl::InfiniteDuration()) {
      cv_.wait(lock);
    } else {
      if (timeout < absl::ZeroDuration()) timeout = absl::ZeroDuration();
      result = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout));
    }
    lock.release();
    return result == std::cv_status::timeout;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_MUTEX_H_
