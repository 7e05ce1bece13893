// ManualTicker: a Ticker whose time moves only when a test says so.
//
//   gyre::testing::ManualTicker ticker;
//   ExecutorOptions options;
//   options.ticker = &ticker;
//   DefaultEventExecutor executor(options);
//   auto f = executor.Schedule([] { return 7; }, absl::Seconds(10));
//   ticker.Advance(absl::Seconds(10));   // wakes the executor; f completes
//   EXPECT_EQ(*f.Sync(), 7);
//
// Thread safety: thread-safe.
#ifndef GYRE_TESTING_MANUAL_TICKER_H_
#define GYRE_TESTING_MANUAL_TICKER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {
namespace testing {

// Virtual time for tests. Starts at `start` (default: one hour, so that "now minus a
// period" never goes below zero). Advance() moves it and wakes every executor that
// uses this ticker, so due scheduled tasks and quiet periods are evaluated at once.
//
// Thread safety: thread-safe.
// Ownership: must outlive every executor that uses it.
class ManualTicker final : public Ticker {
 public:
  explicit ManualTicker(absl::Duration start = absl::Hours(1));
  ~ManualTicker() override;

  int64_t Nanos() const override;
  absl::Time ToTime(int64_t nanos) const override;

  // Moves time forward by `delta` and wakes the observers; returns true. Time never goes
  // back (B109): a negative delta, an infinite one, or one that would take the time past
  // INT64_MAX nanoseconds is refused with an error in the log, and returns false with
  // the time unchanged. A zero delta returns true and wakes no one.
  bool Advance(absl::Duration delta);

  // Time elapsed since construction.
  absl::Duration Elapsed() const;

  void AddObserver(Observer* observer) override;
  void RemoveObserver(Observer* observer) override;

 private:
  const int64_t start_nanos_;
  // Relaxed is enough for ordering with the executor: the wake-up that follows an
  // Advance goes through the executor's mutex, which orders the store before its read.
  std::atomic<int64_t> nanos_;
  internal::Mutex mu_;
  std::vector<Observer*> observers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_MANUAL_TICKER_H_
