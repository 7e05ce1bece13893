#include "gyre/testing/manual_ticker.h"

#include <algorithm>

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

void ManualTicker::Advance(absl::Duration delta) {
  if (delta <= absl::ZeroDuration()) return;
  // Release: see Nanos().
  nanos_.fetch_add(absl::ToInt64Nanoseconds(delta), std::memory_order_acq_rel);
  internal::MutexLock lock(&mu_);
  // Observers are gyre executors; OnTimeAdvanced only sets a flag and signals.
  for (Observer* observer : observers_) observer->OnTimeAdvanced();
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
