#include "gyre/concurrent/ticker.h"

#include <chrono>
#include <limits>

#include "absl/time/clock.h"

namespace gyre {
namespace {

class SystemTicker final : public Ticker {
 public:
  int64_t Nanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

absl::Time Ticker::ToTime(int64_t nanos) const {
  if (nanos == std::numeric_limits<int64_t>::max()) return absl::InfiniteFuture();
  return absl::Now() + absl::Nanoseconds(nanos - Nanos());
}

Ticker* Ticker::System() {
  static Ticker* const ticker = new SystemTicker();
  return ticker;
}

}  // namespace gyre
