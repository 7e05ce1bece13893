// Ticker: the monotonic clock executors read, injectable so tests control time.
//
//   ExecutorOptions options;
//   options.ticker = &manual_ticker;            // gyre::testing::ManualTicker
//   DefaultEventExecutor executor(options);
//   auto f = executor.Schedule([] { Fire(); }, absl::Seconds(5));
//   manual_ticker.Advance(absl::Seconds(5));    // f runs now, no real waiting
//
// Thread safety: Nanos() and the observer methods are thread-safe.
// See docs/threading.md.
#ifndef GYRE_CONCURRENT_TICKER_H_
#define GYRE_CONCURRENT_TICKER_H_

#include <cstdint>

#include "absl/time/time.h"

namespace gyre {

// A monotonic nanosecond clock.
//
// Executors register themselves as observers of their ticker: a ticker whose time can
// jump (a manual one) calls OnTimeAdvanced() on every observer after each jump, so a
// loop sleeping until a deadline re-reads the clock. The system ticker never calls them.
//
// Thread safety: thread-safe.
// Ownership: never owned by executors; a ticker must outlive every executor using it.
class Ticker {
 public:
  // Notified after the ticker's time moved forward by a jump.
  class Observer {
   public:
    virtual ~Observer() = default;
    // Called on the thread that moved the time; must be cheap and must not block.
    virtual void OnTimeAdvanced() = 0;
  };

  Ticker() = default;
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;
  virtual ~Ticker() = default;

  // Returns the current time in nanoseconds; never decreases.
  virtual int64_t Nanos() const = 0;

  // Maps a Nanos() value to an absl::Time (the system ticker: wall time estimated now).
  virtual absl::Time ToTime(int64_t nanos) const;

  // Observer registration; the default (a real clock) ignores observers.
  virtual void AddObserver(Observer* observer) {}
  virtual void RemoveObserver(Observer* observer) {}

  // The process-wide monotonic clock (CLOCK_MONOTONIC). Never destroyed.
  static Ticker* System();
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_TICKER_H_
