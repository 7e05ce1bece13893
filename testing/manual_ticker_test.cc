#include "gyre/testing/manual_ticker.h"

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
  ticker.Advance(absl::Milliseconds(5));
  EXPECT_EQ(ticker.Nanos(), t0 + 5'000'000);
  ticker.Advance(absl::Milliseconds(-5));  // ignored: monotonic
  EXPECT_EQ(ticker.Nanos(), t0 + 5'000'000);
  EXPECT_EQ(ticker.Elapsed(), absl::Milliseconds(5));
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
