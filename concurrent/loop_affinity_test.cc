// LoopAffinity at run time: AssertOnLoop() passes on the owner's loop thread and, in
// debug builds, stops the process anywhere else. (The compile-time side is
// loop_affinity_analysis_test.sh.)
#include "gyre/concurrent/loop_affinity.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

TEST(LoopAffinityTest, PassesOnTheLoopAndWhileUnbound) {
  DefaultEventExecutor executor;
  LoopAffinity affinity(&executor);
  Future<bool> on_loop = executor.Submit([&affinity] {
    affinity.AssertOnLoop();
    return true;
  });
  ASSERT_TRUE(on_loop.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  ASSERT_TRUE(on_loop.IsSuccess()) << on_loop.Cause();
  EXPECT_TRUE(on_loop.Sync().value());
  LoopAffinity unbound;
  unbound.AssertOnLoop();  // any thread may use an unbound affinity
  unbound.Bind(&executor);
  Future<bool> after_bind = executor.Submit([&unbound] {
    unbound.AssertOnLoop();
    return true;
  });
  ASSERT_TRUE(after_bind.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_TRUE(after_bind.IsSuccess());
}

TEST(LoopAffinityDeathTest, AssertingOffTheLoopDiesInDebugBuilds) {
#ifdef NDEBUG
  GTEST_SKIP() << "AssertOnLoop() checks only in debug builds";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DefaultEventExecutor executor;
        ASSERT_TRUE(executor.Submit([] {}).AwaitFor(absl::Seconds(60)));
        LoopAffinity affinity(&executor);
        affinity.AssertOnLoop();  // the test thread is not the loop
      },
      "off its event loop");
#endif
}

}  // namespace
}  // namespace gyre
