#include "gyre/testing/embedded_event_loop.h"

#include <stdexcept>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gyre {
namespace testing {
namespace {

TEST(EmbeddedEventLoopTest, RunsQueuedTasksWhenAskedAndSurvivesAThrowingOne) {
  EmbeddedEventLoop loop;
  int ran = 0;
  ASSERT_TRUE(loop.Execute([] { throw std::runtime_error("task failed"); }).ok());
  ASSERT_TRUE(loop.Execute([&ran] { ++ran; }).ok());
  EXPECT_EQ(ran, 0);  // nothing runs inside Execute
  EXPECT_EQ(loop.RunPendingTasks(), 2);
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(loop.HasPendingTasks());
}

TEST(EmbeddedEventLoopTest, ShutdownValidatesItsArgumentsAndRefusesLaterTasks) {
  EmbeddedEventLoop loop;
  Future<void> bad = loop.ShutdownGracefully(absl::Seconds(2), absl::Seconds(1));
  ASSERT_TRUE(bad.IsDone());
  EXPECT_EQ(bad.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(loop.IsShutdown());
  int ran = 0;
  ASSERT_TRUE(loop.Execute([&ran] { ++ran; }).ok());
  Future<void> done = loop.ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  EXPECT_TRUE(done.IsSuccess());
  EXPECT_EQ(ran, 1);  // queued tasks run before the loop terminates
  EXPECT_EQ(loop.Execute([] {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(loop.IsTerminated());
}

}  // namespace
}  // namespace testing
}  // namespace gyre
