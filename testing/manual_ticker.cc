#include "gyre/testing/manual_ticker.h"

#include <algorithm>
#include <cstdint>

#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace testing {

ManualTicker::ManualTicker(absl::Duration start)
    : start_nanos_(absl::ToInt64Nanoseconds(start)), nanos_(start_nanos_) {}

ManualTicker::~ManualTicker() = default;

int64_t ManualTicker::Nanos() const {
  // Acquire pairs with Advance's release: a reader that sees the new time also sees
  // everything the advancing thread did before.
  return nanos_.load(std::memory_order_acquire);
}

absl::Time ManualTicker::ToTime(int64_t nanos) const {
  if (nanos == INT64_MAX) return absl::InfiniteFuture();
  return absl::UnixEpoch() + absl::Nanoseconds(nanos);
}

bool ManualTicker::Advance(absl::Duration delta) {
  if (delta == absl::ZeroDuration()) return true;
  const int64_t step = absl::ToInt64Nanoseconds(delta);
  bool refused = delta < absl::ZeroDuration() || delta == absl::InfiniteDuration();
  // Release: see Nanos(). A compare-and-swap, so a refused step leaves the time as it is.
  int64_t now = nanos_.load(std::memory_order_relaxed);
  while (!refused) {
    if (step > INT64_MAX - now) {
      refused = true;
    } else if (nanos_.compare_exchange_weak(now, now + step, std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
      break;
    }
  }
  if (refused) {
    GYRE_LOG(ERROR) << "ManualTicker::Advance(" << absl::FormatDuration(delta)
                    << ") refused: time only moves forward, by a finite amount";
    return false;
  }
  internal::MutexLock lock(&mu_);
  // Observers are gyre executors; OnTimeAdvanced only sets a flag and signals.
  for (Observer* observer : observers_) observer->OnTimeAdvanced();
  return true;
}

absl::Duration ManualTicker::Elapsed() const {
  return absl::Nanoseconds(Nanos() - start_nanos_);
}

void ManualTicker::AddObserver(Observer* observer) {
  internal::MutexLock lock(&mu_);
  observers_.push_back(observer);
}

void ManualTicker::RemoveObserver(Observer* observer) {
  internal::MutexLock lock(&mu_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer),
                   observers_.end());
}

}  // namespace testing
}  // namespace gyre
