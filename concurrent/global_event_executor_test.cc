#include "gyre/concurrent/global_event_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/concurrent/immediate_event_executor.h"
#include "gyre/testing/budget.h"
#include "gyre/testing/manual_ticker.h"

namespace gyre {
namespace {

// The worker notes the end of a run a moment after the task returned, so advance the
// clock in steps until it stops (each wait is a handshake, not a timer).
// The bound is a hang detector on the monotonic clock (scaled for the sanitizers).
bool AdvanceUntilInactive(testing::ManualTicker& ticker, GlobalEventExecutor& e) {
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoNanoseconds(testing::Scaled(absl::Seconds(30)));
  while (std::chrono::steady_clock::now() < deadline) {
    if (e.AwaitInactivity(absl::Milliseconds(5))) return true;
    ticker.Advance(absl::Milliseconds(250));
  }
  return e.AwaitInactivity(absl::ZeroDuration());
}

// B72: starts on the first task, stops after the quiet period idle, restarts later.
TEST(GlobalEventExecutorTest, StartsOnDemandAndStopsWhenIdle) {
  testing::ManualTicker ticker;
  GlobalEventExecutor executor(&ticker, absl::Seconds(1));
  EXPECT_EQ(executor.ThreadsStarted(), 0);
  auto f = executor.Submit([&] { return executor.InEventLoop(); });
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_TRUE(*f.Sync());
  EXPECT_EQ(executor.ThreadsStarted(), 1);
  EXPECT_FALSE(executor.AwaitInactivity(absl::Milliseconds(1)));  // idle < 1 s: alive
  ASSERT_TRUE(AdvanceUntilInactive(ticker, executor));
  ASSERT_TRUE(executor.Submit([] {}).Await().ok());
  EXPECT_EQ(executor.ThreadsStarted(), 2);  // a new thread
}

// B73: a pending timer keeps the thread alive; it runs, then the thread stops.
TEST(GlobalEventExecutorTest, ScheduledTasksKeepItAlive) {
  testing::ManualTicker ticker;
  GlobalEventExecutor executor(&ticker, absl::Seconds(1));
  auto f = executor.Schedule([] { return 3; }, absl::Milliseconds(1500));
  ticker.Advance(absl::Seconds(1));
  EXPECT_FALSE(executor.AwaitInactivity(absl::Milliseconds(1)));
  EXPECT_FALSE(f.IsDone());
  ticker.Advance(absl::Milliseconds(500));
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_EQ(*f.Sync(), 3);
  EXPECT_EQ(executor.ThreadsStarted(), 1);
  EXPECT_TRUE(AdvanceUntilInactive(ticker, executor));
}

// B74 (B06/B07 for the global executor): tasks and timers interleave, and a task that
// keeps re-submitting itself does not starve a timer that falls due.
TEST(GlobalEventExecutorTest, DueTimerRunsBetweenSelfResubmittingTasksB74) {
  testing::ManualTicker ticker;
  GlobalEventExecutor executor(&ticker, absl::Seconds(1));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> spins{0};
  std::function<void()> spin = [&] {
    spins.fetch_add(1, std::memory_order_relaxed);
    if (!stop.load()) executor.Execute(spin).IgnoreError();
  };
  ASSERT_TRUE(executor.Execute(spin).ok());
  ScheduledFuture<int64_t> timer = executor.Schedule(
      [&] {
        stop = true;
        return spins.load();
      },
      absl::Milliseconds(10));
  EXPECT_FALSE(timer.IsDone());
  const int64_t started = [&] {  // the spinner is going (a hang detector bounds the wait)
    const auto deadline = std::chrono::steady_clock::now() +
                          absl::ToChronoNanoseconds(testing::Scaled(absl::Seconds(30)));
    while (spins.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return spins.load();
  }();
  ASSERT_GT(started, 0);
  ticker.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(timer.Await().ok());  // a starved timer would hang here
  ASSERT_TRUE(timer.IsSuccess());
  EXPECT_GT(*timer.GetNow(), 0);  // it ran while the spinner was going
  EXPECT_TRUE(AdvanceUntilInactive(ticker, executor));
}

TEST(GlobalEventExecutorTest, CannotBeShutDown) {
  GlobalEventExecutor* g = GlobalEventExecutor::Instance();
  Future<void> f = g->ShutdownGracefully();
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(g->IsShuttingDown());
  ASSERT_TRUE(g->Submit([] {}).Await().ok());
}

TEST(GlobalEventExecutorTest, CancelledTimerIsRemoved) {
  testing::ManualTicker ticker;
  GlobalEventExecutor executor(&ticker, absl::Seconds(1));
  auto token = std::make_shared<int>(0);
  auto f = executor.Schedule([token] {}, absl::Hours(1));
  EXPECT_EQ(token.use_count(), 2);
  EXPECT_TRUE(f.Cancel());
  EXPECT_EQ(token.use_count(), 1);
}

// Re-entrant submissions are queued, not recursed into (B40's setting).
TEST(ImmediateEventExecutorTest, RunsInlineAndQueuesReentrantTasks) {
  ImmediateEventExecutor* e = ImmediateEventExecutor::Instance();
  std::vector<int> order;
  ASSERT_TRUE(e->Execute([&] {
    order.push_back(1);
    e->Execute([&] { order.push_back(3); }).IgnoreError();
    order.push_back(2);
  }).ok());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(e->InEventLoop());
  int depth = 0, max_depth = 0;
  std::function<void(int)> nest = [&](int n) {
    ++depth;
    max_depth = std::max(max_depth, depth);
    if (n > 0) e->Execute([&, n] { nest(n - 1); }).IgnoreError();
    --depth;
  };
  ASSERT_TRUE(e->Execute([&] { nest(10000); }).ok());
  EXPECT_EQ(max_depth, 1);
  auto f = e->Submit([] { return 9; });
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(*f.Sync(), 9);
}

// B92 for the two other executors: an empty task is refused with InvalidArgument, and
// neither calls through it.
TEST(ImmediateEventExecutorTest, EmptyTasksAreRefusedB92) {
  ImmediateEventExecutor* e = ImmediateEventExecutor::Instance();
  EXPECT_EQ(e->Execute(absl::AnyInvocable<void()>()).code(), absl::StatusCode::kInvalidArgument);
  int (*null_fn)() = nullptr;
  Future<int> f = e->Submit(null_fn);
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GlobalEventExecutorTest, EmptyTasksAreRefusedB92) {
  testing::ManualTicker ticker;
  GlobalEventExecutor executor(&ticker, absl::Seconds(1));
  EXPECT_EQ(executor.Execute(absl::AnyInvocable<void()>()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(executor.ThreadsStarted(), 0);  // refused before anything started
  ScheduledFuture<void> s = executor.Schedule(std::function<void()>(), absl::Milliseconds(1));
  ASSERT_TRUE(s.IsDone());
  EXPECT_EQ(s.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(executor.ThreadsStarted(), 0);
}

}  // namespace
}  // namespace gyre
