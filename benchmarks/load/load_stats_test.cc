#include "gyre/benchmarks/load/load_stats.h"

#include "gtest/gtest.h"

namespace gyre {
namespace load {
namespace {

TEST(LoadStatsTest, PercentilesByNearestRank) {
  LatencyRecorder r;
  for (int i = 100; i >= 1; --i) r.Add(absl::Microseconds(i));  // unsorted on purpose
  LatencySummary s = r.Summarize(absl::Seconds(2));
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.per_second, 50.0);
  EXPECT_EQ(s.p50, absl::Microseconds(50));
  EXPECT_EQ(s.p99, absl::Microseconds(99));
  EXPECT_EQ(s.max, absl::Microseconds(100));
}

TEST(LoadStatsTest, EmptyIsAllZero) {
  LatencyRecorder r;
  LatencySummary s = r.Summarize(absl::Seconds(1));
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.p99, absl::ZeroDuration());
  r.Add(absl::Microseconds(1));
  EXPECT_EQ(r.Summarize(absl::ZeroDuration()).count, 0);
}

TEST(LoadStatsTest, JsonLine) {
  LatencyRecorder r;
  r.Add(absl::Microseconds(10));
  EXPECT_EQ(SummaryJson(r.Summarize(absl::Seconds(1)), 64, 4096),
            "{\"connections\":64,\"size\":4096,\"messages\":1,\"msgs_per_sec\":1,"
            "\"p50_us\":10.0,\"p99_us\":10.0,\"max_us\":10.0}");
}

}  // namespace
}  // namespace load
}  // namespace gyre
