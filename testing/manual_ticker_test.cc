#include "gyre/testing/manual_ticker.h"

#include <cstdint>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gyre {
namespace testing {
namespace {

class CountingObserver : public Ticker::Observer {
 public:
  void OnTimeAdvanced() override { ++calls; }
  int calls = 0;
};

TEST(ManualTickerTest, MovesOnlyOnAdvance) {
  ManualTicker ticker;
  int64_t t0 = ticker.Nanos();
  EXPECT_EQ(ticker.Nanos(), t0);
  EXPECT_TRUE(ticker.Advance(absl::Milliseconds(5)));
  EXPECT_EQ(ticker.Nanos(), t0 + 5'000'000);
  EXPECT_EQ(ticker.Elapsed(), absl::Milliseconds(5));
}

// B109: time never goes back. A negative, infinite or overflowing advance is refused
// (false, time unchanged, no observer woken); a zero one is a no-op that succeeds.
TEST(ManualTickerTest, RefusesNegativeInfiniteAndOverflowingAdvancesB109) {
  ManualTicker ticker;
  CountingObserver observer;
  ticker.AddObserver(&observer);
  const int64_t t0 = ticker.Nanos();
  EXPECT_FALSE(ticker.Advance(absl::Milliseconds(-5)));
  EXPECT_FALSE(ticker.Advance(absl::InfiniteDuration()));
  EXPECT_FALSE(ticker.Advance(-absl::InfiniteDuration()));
  EXPECT_FALSE(ticker.Advance(absl::Nanoseconds(INT64_MAX - t0 + 1)));
  EXPECT_EQ(ticker.Nanos(), t0);
  EXPECT_EQ(observer.calls, 0);
  EXPECT_TRUE(ticker.Advance(absl::ZeroDuration()));
  EXPECT_EQ(observer.calls, 0);
  EXPECT_TRUE(ticker.Advance(absl::Nanoseconds(INT64_MAX - t0)));  // up to the last instant
  EXPECT_EQ(ticker.Nanos(), INT64_MAX);
  EXPECT_EQ(observer.calls, 1);
  EXPECT_FALSE(ticker.Advance(absl::Nanoseconds(1)));
  ticker.RemoveObserver(&observer);
}

TEST(ManualTickerTest, AdvanceNotifiesObserversUntilRemoved) {
  ManualTicker ticker;
  CountingObserver observer;
  ticker.AddObserver(&observer);
  ticker.Advance(absl::Seconds(1));
  EXPECT_EQ(observer.calls, 1);
  ticker.RemoveObserver(&observer);
  ticker.Advance(absl::Seconds(1));
  EXPECT_EQ(observer.calls, 1);
}

TEST(ManualTickerTest, ToTimeIsStable) {
  ManualTicker ticker;
  EXPECT_EQ(ticker.ToTime(ticker.Nanos()), ticker.ToTime(ticker.Nanos()));
  EXPECT_EQ(ticker.ToTime(ticker.Nanos() + 1000) - ticker.ToTime(ticker.Nanos()),
            absl::Microseconds(1));
}

}  // namespace
}  // namespace testing
}  // namespace gyre
