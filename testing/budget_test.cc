#include "gyre/testing/budget.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gyre {
namespace testing {
namespace {

TEST(BudgetTest, ScaledStretchesByTheBuildSlowdown) {
  unsetenv("GYRE_TEST_BUDGET_SCALE");
  EXPECT_EQ(Scaled(absl::Seconds(2)), absl::Seconds(2 * kBuildSlowdown));
  setenv("GYRE_TEST_BUDGET_SCALE", "2.5", 1);
  EXPECT_EQ(Scaled(absl::Seconds(2)), absl::Seconds(5 * kBuildSlowdown));
  setenv("GYRE_TEST_BUDGET_SCALE", "nonsense", 1);
  EXPECT_EQ(Scaled(absl::Seconds(2)), absl::Seconds(2 * kBuildSlowdown));
  unsetenv("GYRE_TEST_BUDGET_SCALE");
}

TEST(BudgetTest, IterationsShrinkButNeverToZero) {
  EXPECT_EQ(Iterations(1000), 1000 / kBuildSlowdown);
  EXPECT_EQ(Iterations(1), 1);
  EXPECT_EQ(Iterations(0), 0);
}

TEST(BudgetTest, EventuallySeesAConditionAnotherThreadSets) {
  std::atomic<bool> flag{false};
  std::thread t([&] { flag.store(true); });
  EXPECT_TRUE(Eventually([&] { return flag.load(); }));
  t.join();
}

TEST(BudgetTest, EventuallyGivesUpOnAConditionThatNeverHolds) {
  int calls = 0;
  EXPECT_FALSE(Eventually(
      [&] {
        ++calls;
        return false;
      },
      absl::Milliseconds(5)));
  EXPECT_GT(calls, 1);
}

}  // namespace
}  // namespace testing
}  // namespace gyre
