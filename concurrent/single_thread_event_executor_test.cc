#include "gyre/concurrent/single_thread_event_executor.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/fast_thread_local.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/testing/budget.h"
#include "gyre/testing/manual_ticker.h"

namespace gyre {
namespace {

using test::CountingThreadFactory;
using test::Counter;
using test::Latch;

// Runs a no-op through the loop and waits for it: everything queued before has run.
void Barrier(EventExecutor& e) { ASSERT_TRUE(e.Submit([] {}).Await().ok()); }

ExecutorOptions WithTicker(Ticker* ticker, std::shared_ptr<ThreadFactory> factory = nullptr) {
  ExecutorOptions o;
  o.ticker = ticker;
  o.thread_factory = std::move(factory);
  return o;
}

// Moves `ticker` by `step` until `done` completes. The loop records a task run's end a
// moment after the task returned, so a test cannot know the exact instant the quiet
// period restarted; it advances in steps instead (each wait is a handshake, not a timer).
// The bound is a hang detector on the monotonic clock (scaled for the sanitizers), not a
// count of fixed-length polls.
bool AdvanceUntilDone(testing::ManualTicker& ticker, const Future<void>& done,
                      absl::Duration step) {
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoNanoseconds(testing::Scaled(absl::Seconds(30)));
  while (std::chrono::steady_clock::now() < deadline) {
    if (done.AwaitFor(absl::Milliseconds(5))) return true;
    ticker.Advance(step);
  }
  return done.IsDone();
}

// A DefaultEventExecutor-like loop, for subclasses that add a Cleanup(). (Each subclass
// joins in its own destructor: Cleanup runs on the loop thread until then.)
class LoopForTest : public SingleThreadEventExecutor {
 public:
  explicit LoopForTest(ExecutorOptions o) : SingleThreadEventExecutor(nullptr, std::move(o)) {}

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    for (;;) {
      WaitForTasks();
      RunAllTasks();
      if (ConfirmShutdown()) break;
    }
  }
};

// Records what Cleanup() saw.
class RecordingExecutor final : public LoopForTest {
 public:
  explicit RecordingExecutor(ExecutorOptions o) : LoopForTest(std::move(o)) {}
  ~RecordingExecutor() override { ShutdownAndJoin(); }
  std::atomic<int> cleanups{0};
  std::atomic<ExecutorState> state_at_cleanup{ExecutorState::kNotStarted};

 protected:
  void Cleanup() override {
    state_at_cleanup = state();
    cleanups.fetch_add(1);
  }
};

TEST(SingleThreadEventExecutorTest, ThreadStartsLazilyOnFirstTask) {
  auto factory = std::make_shared<CountingThreadFactory>();
  DefaultEventExecutor executor(WithTicker(nullptr, factory));
  EXPECT_EQ(executor.state(), ExecutorState::kNotStarted);
  EXPECT_EQ(factory->created.load(), 0);
  Barrier(executor);
  EXPECT_EQ(executor.state(), ExecutorState::kStarted);
  EXPECT_EQ(factory->created.load(), 1);
  for (int i = 0; i < 10; ++i) Barrier(executor);
  EXPECT_EQ(factory->created.load(), 1);  // bound for life
}

// B120: a schedule starts the thread as a task does.
TEST(SingleThreadEventExecutorTest, ThreadStartsLazilyOnFirstSchedule) {
  auto factory = std::make_shared<CountingThreadFactory>();
  DefaultEventExecutor executor(WithTicker(nullptr, factory));
  ScheduledFuture<void> f = executor.Schedule([] {}, absl::Hours(1));
  EXPECT_EQ(executor.state(), ExecutorState::kStarted);
  EXPECT_EQ(factory->created.load(), 1);
  EXPECT_TRUE(f.Cancel());
}

// B120: the loop thread's FastThreadLocal values are destroyed before the termination
// future completes (its listener runs on the loop thread, as the completion does).
TEST(SingleThreadEventExecutorTest, ThreadLocalsDieBeforeTerminationCompletes) {
  static std::atomic<int> destroyed{0};
  destroyed = 0;
  struct Tracked {
    ~Tracked() { destroyed.fetch_add(1); }
  };
  FastThreadLocal<Tracked> local;
  DefaultEventExecutor executor;
  ASSERT_TRUE(executor.Submit([&] { local.Get(); }).Await().ok());
  Promise<int> seen_at_termination(nullptr);
  executor.TerminationFuture().AddListener(
      [&](const Future<void>&) { seen_at_termination.TrySuccess(destroyed.load()); });
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(1)).Await().ok());
  ASSERT_TRUE(seen_at_termination.Await().ok());
  EXPECT_EQ(*seen_at_termination.GetNow(), 1);
}

TEST(SingleThreadEventExecutorTest, InEventLoopOnlyOnItsThread) {
  DefaultEventExecutor executor;
  EXPECT_FALSE(executor.InEventLoop());
  auto f = executor.Submit([&] { return executor.InEventLoop(); });
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_TRUE(*f.Sync());
  EXPECT_FALSE(executor.InEventLoop());
}

// §2.1 (Netty issue 11686) and B13.
TEST(SingleThreadEventExecutorTest, NeverStartedExecutorTerminatesWithoutAThread) {
  auto factory = std::make_shared<CountingThreadFactory>();
  DefaultEventExecutor executor(WithTicker(nullptr, factory));
  std::thread::id hook_thread;
  ASSERT_TRUE(executor.AddShutdownHook([&] { hook_thread = std::this_thread::get_id(); }).ok());
  Future<void> done = executor.ShutdownGracefully();  // default 2 s quiet period: not waited
  EXPECT_TRUE(done.IsDone());
  EXPECT_TRUE(done.IsSuccess());
  EXPECT_TRUE(executor.IsTerminated());
  EXPECT_EQ(factory->created.load(), 0);
  EXPECT_EQ(hook_thread, std::this_thread::get_id());
  absl::Status s = executor.Execute([] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(factory->created.load(), 0);
}

// The state walk, and B14: Cleanup runs exactly once, in kShutdown.
TEST(SingleThreadEventExecutorTest, WalksTheFiveStates) {
  testing::ManualTicker ticker;
  RecordingExecutor executor(WithTicker(&ticker));
  EXPECT_EQ(executor.state(), ExecutorState::kNotStarted);
  Barrier(executor);
  EXPECT_EQ(executor.state(), ExecutorState::kStarted);
  EXPECT_FALSE(executor.IsShuttingDown());
  Future<void> done = executor.ShutdownGracefully(absl::Seconds(1), absl::Seconds(10));
  EXPECT_TRUE(executor.IsShuttingDown());
  EXPECT_FALSE(executor.IsShutdown());
  EXPECT_EQ(executor.state(), ExecutorState::kShuttingDown);
  Barrier(executor);  // still accepted while shutting down
  EXPECT_FALSE(done.IsDone());
  ASSERT_TRUE(AdvanceUntilDone(ticker, done, absl::Milliseconds(500)));
  EXPECT_TRUE(done.IsSuccess());
  EXPECT_EQ(executor.state(), ExecutorState::kTerminated);
  EXPECT_TRUE(executor.IsShutdown());
  EXPECT_EQ(executor.cleanups.load(), 1);
  EXPECT_EQ(executor.state_at_cleanup.load(), ExecutorState::kShutdown);
}

// B14, B20/B21's codes: rejection after shutdown.
TEST(SingleThreadEventExecutorTest, RejectsAfterShutdown) {
  DefaultEventExecutor executor;
  Barrier(executor);
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15)).Await().ok());
  EXPECT_EQ(executor.Execute([] {}).code(), absl::StatusCode::kFailedPrecondition);
  Future<int> f = executor.Submit([] { return 1; });
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kFailedPrecondition);
  ScheduledFuture<int> s = executor.Schedule([] { return 1; }, absl::Seconds(1));
  ASSERT_TRUE(s.IsDone());
  EXPECT_EQ(s.Cause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(executor.AddShutdownHook([] {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_GE(executor.Snapshot().rejected_tasks, 3u);
}

// B22: each task run restarts the quiet period.
TEST(SingleThreadEventExecutorTest, QuietPeriodIsRestartedByEachTaskRun) {
  testing::ManualTicker ticker;
  DefaultEventExecutor executor(WithTicker(&ticker));
  Barrier(executor);
  Future<void> done = executor.ShutdownGracefully(absl::Seconds(1), absl::Seconds(100));
  int64_t last_task = 0;
  for (int i = 0; i < 5; ++i) {
    ticker.Advance(absl::Milliseconds(900));  // less than the quiet period since the last run
    auto f = executor.Submit([&] { return ticker.Nanos(); });
    ASSERT_TRUE(f.Sync().ok()) << "rejected at step " << i << ": " << f.Cause();
    last_task = *f.Sync();
    EXPECT_TRUE(executor.IsShuttingDown());
    EXPECT_FALSE(executor.IsShutdown());
  }
  // The loop notes the end of the last run a moment after the task returned its time;
  // so move the clock in small steps until it terminates.
  ASSERT_TRUE(AdvanceUntilDone(ticker, done, absl::Milliseconds(100)));
  int64_t terminated_at = ticker.Nanos();  // only this thread moves the clock
  EXPECT_GE(terminated_at - last_task, absl::ToInt64Nanoseconds(absl::Seconds(1)));
}

// B23: the timeout ends shutdown even while tasks keep the quiet period from passing.
TEST(SingleThreadEventExecutorTest, TimeoutForcesShutdown) {
  testing::ManualTicker ticker;
  DefaultEventExecutor executor(WithTicker(&ticker));
  Barrier(executor);
  // The timeout counts from this call.
  Future<void> done = executor.ShutdownGracefully(absl::Seconds(2), absl::Seconds(5));
  for (int i = 0; i < 4; ++i) {
    ticker.Advance(absl::Seconds(1));
    auto f = executor.Submit([] {});
    ASSERT_TRUE(f.Await().ok());
    ASSERT_TRUE(f.IsSuccess()) << "rejected before the timeout, step " << i;
  }
  EXPECT_FALSE(done.IsDone());
  ticker.Advance(absl::Seconds(1));  // 5 s since the shutdown began
  ASSERT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_TRUE(executor.IsShutdown());
  EXPECT_EQ(executor.Execute([] {}).code(), absl::StatusCode::kFailedPrecondition);
}

// A quiet period of zero needs no clock movement (B27's fast path).
TEST(SingleThreadEventExecutorTest, ZeroQuietPeriodNeedsNoClockMovement) {
  testing::ManualTicker ticker;
  DefaultEventExecutor executor(WithTicker(&ticker));
  Barrier(executor);
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Hours(1))
                  .AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_TRUE(executor.IsTerminated());
}

// B19: tasks queued behind a blocked task still run before termination.
TEST(SingleThreadEventExecutorTest, ShutdownRunsPendingTasks) {
  DefaultEventExecutor executor;
  Latch release;
  Latch started;
  ASSERT_TRUE(executor.Execute([&] {
    started.Open();
    release.Wait();
  }).ok());
  ASSERT_TRUE(started.Wait());
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(executor.Execute([&] { ran.fetch_add(1); }).ok());
  EXPECT_EQ(executor.PendingTasks(), 3u);
  Future<void> done = executor.ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  release.Open();
  ASSERT_TRUE(done.Await().ok());
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(executor.PendingTasks(), 0u);
}

TEST(SingleThreadEventExecutorTest, ShutdownHooksRunOnTheLoop) {
  DefaultEventExecutor executor;
  Barrier(executor);
  std::atomic<bool> on_loop{false};
  std::atomic<int> runs{0};
  ASSERT_TRUE(executor.AddShutdownHook([&] {
    on_loop = executor.InEventLoop();
    runs.fetch_add(1);
  }).ok());
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15)).Await().ok());
  EXPECT_TRUE(on_loop.load());
  EXPECT_EQ(runs.load(), 1);
}

// Hooks run after the state is kShutdown (API.md): a hook observes it, a task a hook
// submits is rejected and never runs, and each hook runs once before termination.
TEST(SingleThreadEventExecutorTest, ShutdownHooksRunInShutdownStateAndTheirTasksAreRejected) {
  DefaultEventExecutor executor;
  Barrier(executor);
  std::atomic<int> state_seen{0};
  std::atomic<int> execute_code{-1};
  std::atomic<bool> hook_task_ran{false};
  std::atomic<int> runs{0};
  ASSERT_TRUE(executor.AddShutdownHook([&] {
    state_seen = static_cast<int>(executor.state());
    execute_code = static_cast<int>(executor.Execute([&] { hook_task_ran = true; }).code());
    runs.fetch_add(1);
  }).ok());
  Future<void> done = executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15));
  ASSERT_TRUE(done.AwaitFor(testing::Scaled(absl::Seconds(30))));
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(state_seen.load(), static_cast<int>(ExecutorState::kShutdown));
  EXPECT_EQ(execute_code.load(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_FALSE(hook_task_ran.load());
}

// The hard timeout holds under a steady stream of tasks: a task that resubmits itself
// forever keeps the quiet period from ever passing, yet the executor terminates once
// the timeout has elapsed (virtual time).
TEST(SingleThreadEventExecutorTest, TimeoutHoldsUnderASteadyStreamOfTasks) {
  testing::ManualTicker ticker;
  DefaultEventExecutor executor(WithTicker(&ticker));
  struct Again {
    DefaultEventExecutor* executor;
    std::atomic<int64_t>* runs;
    void operator()() {
      runs->fetch_add(1, std::memory_order_relaxed);
      executor->Execute(Again{executor, runs}).IgnoreError();  // rejected once shut down
    }
  };
  std::atomic<int64_t> runs{0};
  ASSERT_TRUE(executor.Execute(Again{&executor, &runs}).ok());
  Future<void> done = executor.ShutdownGracefully(absl::Seconds(1), absl::Seconds(5));
  ASSERT_TRUE(testing::Eventually([&] { return runs.load() > 100; }));
  EXPECT_FALSE(done.IsDone());
  ticker.Advance(absl::Seconds(5));
  ASSERT_TRUE(done.AwaitFor(testing::Scaled(absl::Seconds(30))));
  EXPECT_TRUE(executor.IsTerminated());
}

// B119: argument checks and the repeat call.
TEST(SingleThreadEventExecutorTest, ShutdownArgumentsAreChecked) {
  DefaultEventExecutor executor;
  Future<void> bad = executor.ShutdownGracefully(absl::Seconds(-1), absl::Seconds(1));
  ASSERT_TRUE(bad.IsDone());
  EXPECT_EQ(bad.Cause().code(), absl::StatusCode::kInvalidArgument);
  bad = executor.ShutdownGracefully(absl::Seconds(2), absl::Seconds(1));
  EXPECT_EQ(bad.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(executor.IsShuttingDown());
  Barrier(executor);
  Future<void> first = executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(1));
  Future<void> second = executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(1));
  ASSERT_TRUE(first.Await().ok());
  EXPECT_TRUE(second.IsDone());
  EXPECT_EQ(executor.TerminationFuture().IsSuccess(), true);
}

// B119: a throwing task is logged and the loop carries on.
TEST(SingleThreadEventExecutorTest, ThrowingTaskDoesNotKillTheLoop) {
  DefaultEventExecutor executor;
  ASSERT_TRUE(executor.Execute([] { throw std::runtime_error("boom"); }).ok());
  Future<int> f = executor.Submit([]() -> int { throw std::runtime_error("bang"); });
  ASSERT_TRUE(f.Await().ok());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_NE(f.Cause().message().find("bang"), std::string::npos);
  auto g = executor.Submit([] { return 5; });
  ASSERT_TRUE(g.Sync().ok());
  EXPECT_EQ(*g.Sync(), 5);
}

void NoOp() {}

// B92: an empty task is refused at the call with InvalidArgument (Netty: a
// NullPointerException), on and off the loop, through every entry point; nothing is
// queued, so the loop never calls through a null invoker.
TEST(SingleThreadEventExecutorTest, EmptyTasksAreRefusedB92) {
  DefaultEventExecutor executor;
  void (*null_fn)() = nullptr;
  auto check_all = [&] {
    EXPECT_EQ(executor.Execute(absl::AnyInvocable<void()>()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(executor.Execute(null_fn).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(executor.Execute(std::function<void()>()).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(executor.LazyExecute(absl::AnyInvocable<void()>()).code(),
              absl::StatusCode::kInvalidArgument);
    absl::AnyInvocable<void()> empty;
    EXPECT_EQ(executor.TryExecute(empty).code(), absl::StatusCode::kInvalidArgument);
    EventExecutorGroup& group = executor;  // the virtual entry point
    EXPECT_EQ(group.Execute(absl::AnyInvocable<void()>()).code(),
              absl::StatusCode::kInvalidArgument);
    Future<void> submitted = executor.Submit(null_fn);
    ASSERT_TRUE(submitted.IsDone());
    EXPECT_EQ(submitted.Cause().code(), absl::StatusCode::kInvalidArgument);
    ScheduledFuture<void> scheduled = executor.Schedule(std::function<void()>(), absl::Seconds(1));
    ASSERT_TRUE(scheduled.IsDone());
    EXPECT_EQ(scheduled.Cause().code(), absl::StatusCode::kInvalidArgument);
    ScheduledFuture<void> periodic =
        executor.ScheduleAtFixedRate(null_fn, absl::Seconds(1), absl::Seconds(1));
    ASSERT_TRUE(periodic.IsDone());
    EXPECT_EQ(periodic.Cause().code(), absl::StatusCode::kInvalidArgument);
  };
  check_all();  // off the loop (the first refusal must not start the thread either)
  EXPECT_EQ(executor.state(), ExecutorState::kNotStarted);
  ASSERT_TRUE(executor.Submit(check_all).Await().ok());  // on the loop
  // The loop is alive and a real function pointer still runs.
  void (*fn)() = &NoOp;
  EXPECT_TRUE(executor.Submit(fn).Await().ok());
  EXPECT_TRUE(executor.Submit([] { return 1; }).Sync().ok());
}

class ReturningRunExecutor final : public SingleThreadEventExecutor {
 public:
  explicit ReturningRunExecutor(bool throw_in_run)
      : SingleThreadEventExecutor(nullptr, ExecutorOptions()), throw_(throw_in_run) {}
  ~ReturningRunExecutor() override { ShutdownAndJoin(); }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    if (throw_) throw std::runtime_error("run failed");
  }

 private:
  const bool throw_;
};

TEST(SingleThreadEventExecutorTest, RunReturningWithoutConfirmShutdownIsReported) {
  std::atomic<int> buggy_reports{0};
  internal::SetLogSinkForTesting(
      [&](internal::LogSeverity, const char*, int, const std::string& message) {
        if (message.find("Buggy executor") != std::string::npos) buggy_reports.fetch_add(1);
      });
  {
    ReturningRunExecutor executor(false);
    std::atomic<bool> ran{false};
    // The thread may finish its forced shutdown before this task is admitted; either
    // way the task ran exactly when it was accepted.
    bool accepted = executor.Execute([&] { ran = true; }).ok();
    ASSERT_TRUE(executor.TerminationFuture().Await().ok());
    EXPECT_EQ(ran.load(), accepted);
    EXPECT_TRUE(executor.TerminationFuture().IsSuccess());
  }
  internal::SetLogSinkForTesting(nullptr);
  EXPECT_EQ(buggy_reports.load(), 1);
}

// B08: a throwing Run() fails the termination future.
TEST(SingleThreadEventExecutorTest, ThrowingRunFailsTerminationFuture) {
  ReturningRunExecutor executor(true);
  executor.Execute([] {}).IgnoreError();  // starts the thread (may be refused: Run ended)
  ASSERT_TRUE(executor.TerminationFuture().Await().ok());
  EXPECT_EQ(executor.TerminationFuture().Cause().code(), absl::StatusCode::kInternal);
  EXPECT_NE(executor.TerminationFuture().Cause().message().find("run failed"), std::string::npos);
}

// B01: a thread source that fails is reported on every Execute; shutdown still works.
TEST(SingleThreadEventExecutorTest, ThreadCreationFailureIsReported) {
  auto factory = std::make_shared<CountingThreadFactory>();
  factory->fail = true;
  DefaultEventExecutor executor(WithTicker(nullptr, factory));
  EXPECT_EQ(executor.Execute([] {}).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(executor.Execute([] {}).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(executor.state(), ExecutorState::kNotStarted);
  ASSERT_TRUE(executor.ShutdownGracefully().Await().ok());
  EXPECT_TRUE(executor.IsShutdown());
  EXPECT_TRUE(executor.IsTerminated());
}

TEST(SingleThreadEventExecutorTest, ThreadIsNamedByItsFactory) {
  ExecutorOptions o;
  o.name = "stee";
  DefaultEventExecutor executor(o);
  auto f = executor.Submit([] { return internal::CurrentThreadName(); });
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_EQ(f.Sync()->rfind("stee-", 0), 0u) << *f.Sync();
  ExecutorSnapshot s = executor.Snapshot();
  EXPECT_EQ(s.thread_name, *f.Sync());
  // B02: the snapshot's thread is the thread tasks run on.
  auto tid = executor.Submit([] { return static_cast<int>(syscall(SYS_gettid)); });
  ASSERT_TRUE(tid.Sync().ok());
  EXPECT_GT(s.os_tid, 0);
  EXPECT_EQ(s.os_tid, *tid.Sync());
}

TEST(SingleThreadEventExecutorTest, SnapshotCountsTasks) {
  testing::ManualTicker ticker;
  DefaultEventExecutor executor(WithTicker(&ticker));
  ExecutorSnapshot s = executor.Snapshot();
  EXPECT_EQ(s.state, ExecutorState::kNotStarted);
  EXPECT_EQ(s.os_tid, 0);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(executor.Execute([] {}).ok());
  auto timer = executor.Schedule([] {}, absl::Hours(1));
  Barrier(executor);
  s = executor.Snapshot();
  EXPECT_EQ(s.state, ExecutorState::kStarted);
  EXPECT_EQ(s.scheduled_tasks, 1u);
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(1)).Await().ok());
  s = executor.Snapshot();
  EXPECT_EQ(s.state, ExecutorState::kTerminated);
  EXPECT_GE(s.completed_tasks, 11u);  // 10 tasks and the barrier (timers enter directly)
  EXPECT_EQ(s.pending_tasks, 0u);
  EXPECT_EQ(s.scheduled_tasks, 0u);
  EXPECT_TRUE(timer.IsCancelled());
}

// --- Scheduled tasks -------------------------------------------------------------

// Timers on virtual time: each test's executor runs on `ticker` (members named as the
// locals they replace).
class ScheduledTaskTest : public ::testing::Test {
 protected:
  testing::ManualTicker ticker;
  DefaultEventExecutor executor{WithTicker(&ticker)};
};

// B15 on virtual time.
TEST_F(ScheduledTaskTest, RunsWhenDueAndNotBefore) {
  int64_t start = ticker.Nanos();
  ScheduledFuture<int> f = executor.Schedule([] { return 42; }, absl::Seconds(5));
  EXPECT_EQ(f.Deadline(), ticker.ToTime(start + absl::ToInt64Nanoseconds(absl::Seconds(5))));
  ticker.Advance(absl::Seconds(4));
  Barrier(executor);
  EXPECT_FALSE(f.IsDone());
  ticker.Advance(absl::Seconds(1));
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_EQ(*f.Sync(), 42);
}

// B69: a zero or negative delay means now.
TEST_F(ScheduledTaskTest, NonPositiveDelayRunsNow) {
  auto a = executor.Schedule([] { return 1; }, absl::ZeroDuration());
  auto b = executor.Schedule([] { return 2; }, absl::Seconds(-3));
  ASSERT_TRUE(a.Sync().ok());
  ASSERT_TRUE(b.Sync().ok());
  EXPECT_EQ(*b.Sync(), 2);
}

TEST_F(ScheduledTaskTest, SameDeadlineRunsInSubmissionOrder) {
  std::vector<int> order;
  std::vector<ScheduledFuture<void>> fs;
  for (int i = 0; i < 20; ++i) {
    fs.push_back(executor.Schedule([&order, i] { order.push_back(i); }, absl::Seconds(1)));
  }
  ticker.Advance(absl::Seconds(1));
  for (auto& f : fs) ASSERT_TRUE(f.Await().ok());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], i);
}

// Cancelled timers leave the heap (and free their bodies) long before their deadline.
TEST_F(ScheduledTaskTest, CancelRemovesTheTask) {
  auto token = std::make_shared<int>(0);
  std::vector<ScheduledFuture<void>> fs;
  for (int i = 0; i < 1000; ++i) {
    fs.push_back(executor.Schedule([token] {}, absl::Hours(1) + absl::Seconds(i)));
  }
  Barrier(executor);
  EXPECT_EQ(executor.ScheduledTaskCount(), 1000u);
  EXPECT_EQ(token.use_count(), 1001);
  for (auto& f : fs) EXPECT_TRUE(f.Cancel());
  Barrier(executor);  // the (non-waking) removals ran before the barrier
  EXPECT_EQ(executor.ScheduledTaskCount(), 0u);
  EXPECT_EQ(token.use_count(), 1);  // bodies destroyed
  ticker.Advance(absl::Hours(2));
  Barrier(executor);
  for (auto& f : fs) EXPECT_TRUE(f.IsCancelled());
}

TEST_F(ScheduledTaskTest, CancelOnTheLoopRemovesAtOnce) {
  auto f = executor.Submit([&] {
    auto timer = executor.Schedule([] {}, absl::Seconds(10));
    size_t before = executor.ScheduledTaskCount();
    bool cancelled = timer.Cancel();
    return before == 1 && cancelled && executor.ScheduledTaskCount() == 0;
  });
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_TRUE(*f.Sync());
}

// B16/B17: fixed rate; late runs catch up back to back; cancel stops it.
TEST_F(ScheduledTaskTest, FixedRateCatchesUpAndStopsOnCancel) {
  Counter runs;
  ScheduledFuture<void> f = executor.ScheduleAtFixedRate([&] { runs.Increment(); },
                                                         absl::Milliseconds(100),
                                                         absl::Milliseconds(100));
  ticker.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(runs.WaitFor(1));
  ticker.Advance(absl::Milliseconds(350));  // due at 200, 300, 400
  ASSERT_TRUE(runs.WaitFor(4));
  Barrier(executor);
  EXPECT_EQ(runs.value(), 4);
  EXPECT_FALSE(f.IsDone());
  EXPECT_TRUE(f.Cancel());
  ticker.Advance(absl::Seconds(1));
  Barrier(executor);
  EXPECT_EQ(runs.value(), 4);
  EXPECT_TRUE(f.IsCancelled());
}

// B18: fixed delay counts from the end of the previous run.
TEST_F(ScheduledTaskTest, FixedDelayCountsFromTheEndOfTheRun) {
  Counter runs;
  ScheduledFuture<void> f = executor.ScheduleWithFixedDelay(
      [&] {
        ticker.Advance(absl::Milliseconds(50));  // the run "takes" 50 ms
        runs.Increment();
      },
      absl::Milliseconds(100), absl::Milliseconds(100));
  ticker.Advance(absl::Milliseconds(100));  // first run at 100, ends at 150
  ASSERT_TRUE(runs.WaitFor(1));
  Barrier(executor);  // the next deadline (250) is set
  ticker.Advance(absl::Milliseconds(99));   // 249: a fixed rate would have run at 200
  Barrier(executor);
  EXPECT_EQ(runs.value(), 1);
  ticker.Advance(absl::Milliseconds(1));    // 250
  ASSERT_TRUE(runs.WaitFor(2));
  EXPECT_TRUE(f.Cancel());
}

TEST_F(ScheduledTaskTest, PeriodicTaskStopsWhenItThrows) {
  std::atomic<int> runs{0};
  ScheduledFuture<void> f = executor.ScheduleAtFixedRate(
      [&] {
        if (runs.fetch_add(1) == 1) throw std::runtime_error("periodic failure");
      },
      absl::ZeroDuration(), absl::Seconds(1));
  ticker.Advance(absl::Seconds(1));
  ASSERT_TRUE(f.Await().ok());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInternal);
  ticker.Advance(absl::Seconds(5));
  Barrier(executor);
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(executor.ScheduledTaskCount(), 0u);
}

// B70: a non-positive period is an error; a zero initial delay is fine.
TEST_F(ScheduledTaskTest, NonPositivePeriodIsInvalid) {
  DefaultEventExecutor executor;
  auto a = executor.ScheduleAtFixedRate([] {}, absl::ZeroDuration(), absl::ZeroDuration());
  auto b = executor.ScheduleWithFixedDelay([] {}, absl::ZeroDuration(), absl::Seconds(-1));
  ASSERT_TRUE(a.IsDone());
  EXPECT_EQ(a.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(executor.state(), ExecutorState::kNotStarted);
}

// B29/B71: huge delays saturate and never fire; they can be cancelled.
TEST_F(ScheduledTaskTest, HugeDelaysSaturate) {
  auto a = executor.Schedule([] {}, absl::InfiniteDuration());
  auto b = executor.Schedule([] {}, absl::Hours(24 * 365 * 1000));
  ticker.Advance(absl::Hours(24 * 365));
  Barrier(executor);
  EXPECT_FALSE(a.IsDone());
  EXPECT_FALSE(b.IsDone());
  EXPECT_EQ(a.Deadline(), absl::InfiniteFuture());
  EXPECT_TRUE(a.Cancel());
  EXPECT_TRUE(b.Cancel());
}

// Timers pending at termination complete as cancelled and never run.
TEST_F(ScheduledTaskTest, PendingTimersAreCancelledAtTermination) {
  std::atomic<bool> ran{false};
  auto once = executor.Schedule([&] { ran = true; }, absl::Seconds(10));
  auto periodic = executor.ScheduleAtFixedRate([&] { ran = true; }, absl::Seconds(10),
                                               absl::Seconds(1));
  Barrier(executor);
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(1)).Await().ok());
  EXPECT_TRUE(once.IsCancelled());
  EXPECT_TRUE(periodic.IsCancelled());
  EXPECT_FALSE(ran.load());
}

// B07: a queue that is never empty does not starve the timers.
TEST_F(ScheduledTaskTest, BusyQueueDoesNotStarveTimers) {
  // Shared with the spinners: one may still be queued when the test body returns (a
  // spinner that read `stop` before it was set re-posts itself; its successor can run
  // after the barrier, since a task posted on the loop waits for the shared queue's
  // batch), and it runs while the fixture's executor shuts down.
  struct State {
    std::atomic<bool> stop{false};
    std::atomic<int> spins{0};
  };
  auto state = std::make_shared<State>();
  struct Spinner {
    DefaultEventExecutor* e;
    std::shared_ptr<State> state;
    void operator()() const {
      state->spins.fetch_add(1);
      if (!state->stop.load()) e->Execute(Spinner{*this}).IgnoreError();
    }
  };
  ASSERT_TRUE(executor.Execute(Spinner{&executor, state}).ok());
  auto timer = executor.Schedule([] { return 1; }, absl::Milliseconds(10));
  ticker.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(timer.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_TRUE(timer.IsSuccess());
  state->stop = true;
  Barrier(executor);
  EXPECT_GT(state->spins.load(), 0);
}

// --- Bounded queues -----------------------------------------------------------------

ExecutorOptions Bounded(size_t n, std::shared_ptr<RejectedExecutionHandler> handler) {
  ExecutorOptions o;
  o.max_pending_tasks = n;
  o.rejected_handler = std::move(handler);
  return o;
}

// Occupies `executor`'s thread with a task that waits for `release`; returns once it runs
// (the task opens `started`, which must outlive it, as `release` must).
void BlockLoop(DefaultEventExecutor& executor, Latch& release, Latch& started) {
  ASSERT_TRUE(executor.Execute([&] {
    started.Open();
    release.Wait();
  }).ok());
  ASSERT_TRUE(started.Wait());
}

TEST(BoundedQueueTest, RejectsWhenFull) {
  DefaultEventExecutor executor(Bounded(2, nullptr));
  Latch release, started;
  ASSERT_NO_FATAL_FAILURE(BlockLoop(executor, release, started));
  Counter ran;
  EXPECT_TRUE(executor.Execute([&] { ran.Increment(); }).ok());
  EXPECT_TRUE(executor.Execute([&] { ran.Increment(); }).ok());
  EXPECT_EQ(executor.Execute([] {}).code(), absl::StatusCode::kResourceExhausted);
  Future<int> f = executor.Submit([] { return 1; });
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kResourceExhausted);
  release.Open();
  ASSERT_TRUE(ran.WaitFor(2));
  EXPECT_EQ(executor.Snapshot().rejected_tasks, 2u);
}

TEST(BoundedQueueTest, RunInCallerRunsOnTheSubmittingThread) {
  DefaultEventExecutor executor(Bounded(1, RejectedExecutionHandlers::RunInCaller()));
  Latch release, started;
  ASSERT_NO_FATAL_FAILURE(BlockLoop(executor, release, started));
  ASSERT_TRUE(executor.Execute([] {}).ok());
  std::thread::id ran_on;
  ASSERT_TRUE(executor.Execute([&] { ran_on = std::this_thread::get_id(); }).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  release.Open();
  Barrier(executor);
}

TEST(BoundedQueueTest, BackoffRetriesUntilThereIsRoom) {
  DefaultEventExecutor executor(
      Bounded(1, RejectedExecutionHandlers::BackoffAndRetry(100000, absl::Microseconds(100))));
  Latch release, started;
  ASSERT_NO_FATAL_FAILURE(BlockLoop(executor, release, started));
  ASSERT_TRUE(executor.Execute([] {}).ok());
  std::atomic<bool> ran{false};
  absl::Status late;
  std::thread submitter([&] { late = executor.Execute([&] { ran = true; }); });
  release.Open();
  submitter.join();
  EXPECT_TRUE(late.ok()) << late;
  Barrier(executor);
  EXPECT_TRUE(ran.load());
}

// A task refused as "full" must not be counted as owed by the final drain: producers
// hammering a one-slot queue across ShutdownGracefully once left the loop waiting
// forever for a task that was never queued (the stress suite's group shutdown hang).
TEST(BoundedQueueTest, FullRejectionsRacingShutdownDoNotHangTheDrain) {
  const int rounds = static_cast<int>(testing::Iterations(60));
  for (int round = 0; round < rounds; ++round) {
    auto executor = std::make_unique<DefaultEventExecutor>(Bounded(1, nullptr));
    std::atomic<int64_t> accepted{0}, ran{0}, full{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> producers;
    for (int p = 0; p < 2; ++p) {
      producers.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (;;) {
          absl::Status s = executor->Execute([&ran] { ran.fetch_add(1); });
          if (s.ok()) {
            accepted.fetch_add(1);
          } else if (s.code() == absl::StatusCode::kResourceExhausted) {
            full.fetch_add(1);
          } else {
            EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
            return;
          }
        }
      });
    }
    go = true;
    while (full.load() < 50 && accepted.load() < 5000) std::this_thread::yield();
    Future<void> done = executor->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5));
    for (auto& t : producers) t.join();
    if (!done.AwaitFor(testing::Scaled(absl::Seconds(20)))) {
      executor.release();  // its thread is stuck; leave it rather than hang in the join
      FAIL() << "round " << round << ": the executor never terminated";
    }
    EXPECT_EQ(ran.load(), accepted.load()) << "round " << round;
  }
}

// --- Wake-ups and subclasses ----------------------------------------------------------

// No lost wake-ups: a long ping-pong between two loops must finish.
TEST(WakeupTest, PingPongNeverLosesAWakeup) {
  DefaultEventExecutor a, b;
#ifdef GYRE_STRESS
  const int hops = 20000;  // //concurrent:single_thread_event_executor_stress_test
#else
  const int hops = static_cast<int>(testing::Iterations(2000));
#endif
  Promise<void> done;
  ASSERT_TRUE(test::StartPingPong(a, b, hops, done).ok());
  ASSERT_TRUE(done.AwaitFor(testing::Scaled(absl::Seconds(60))));
}

// A Netty-style loop built on TakeTask (B06): ordinary and due scheduled tasks both run.
class TakeTaskExecutor final : public SingleThreadEventExecutor {
 public:
  explicit TakeTaskExecutor(ExecutorOptions o) : SingleThreadEventExecutor(nullptr, std::move(o)) {}
  ~TakeTaskExecutor() override { ShutdownAndJoin(); }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    for (;;) {
      absl::AnyInvocable<void()> task = TakeTask();
      if (task) {
        SafeExecute(task);
      }
      if (ConfirmShutdown()) break;
    }
  }
};

TEST(SubclassTest, TakeTaskHandsOutTasksAndDueTimers) {
  testing::ManualTicker ticker;
  TakeTaskExecutor executor(WithTicker(&ticker));
  Counter runs;
  ASSERT_TRUE(executor.Execute([&] { runs.Increment(); }).ok());
  auto timer = executor.Schedule([&] { runs.Increment(); }, absl::Seconds(1));
  ASSERT_TRUE(executor.Execute([&] { runs.Increment(); }).ok());
  ASSERT_TRUE(runs.WaitFor(2));
  ticker.Advance(absl::Seconds(1));
  ASSERT_TRUE(runs.WaitFor(3));
  ASSERT_TRUE(timer.Await().ok());
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).Await().ok());
}

// Loop submissions take the loop-local ring, but never overtake a task from another
// thread whose queueing happened before theirs: the order is a single FIFO's.
TEST(LocalQueueTest, LoopSubmissionDoesNotOvertakeAnEarlierForeignTask) {
  DefaultEventExecutor executor;
  Barrier(executor);
  std::vector<std::string> order;  // loop-confined
  std::atomic<bool> foreign_queued{false};
  Latch done;
  ASSERT_TRUE(executor
                  .Execute([&] {
                    // Hold the loop until another thread has queued A.
                    while (!foreign_queued.load(std::memory_order_acquire)) {
                      std::this_thread::yield();
                    }
                    // Queued after A (A happened-before this), so it must run after A.
                    executor.Execute([&] { order.push_back("B"); }).IgnoreError();
                    executor.Execute([&] {
                      order.push_back("C");
                      done.Open();
                    }).IgnoreError();
                  })
                  .ok());
  std::thread foreign([&] {
    ASSERT_TRUE(executor.Execute([&] { order.push_back("A"); }).ok());
    foreign_queued.store(true, std::memory_order_release);
  });
  foreign.join();
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(order, (std::vector<std::string>{"A", "B", "C"}));
}

// A chain of loop submissions runs in order, interleaved with foreign tasks, and each
// counts as pending until it runs.
TEST(LocalQueueTest, LoopSubmissionsRunInOrderAndCountAsPending) {
  DefaultEventExecutor executor;
  std::vector<int> order;  // loop-confined
  size_t pending_seen = 0;
  auto f = executor.Submit([&] {
    for (int i = 0; i < 1000; ++i) {
      executor.Execute([&order, i] { order.push_back(i); }).IgnoreError();
    }
    pending_seen = executor.PendingTasks();
  });
  ASSERT_TRUE(f.Await().ok());
  Barrier(executor);
  EXPECT_GE(pending_seen, 1000u);
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(executor.PendingTasks(), 0u);
}

// Execute(callable) builds a loop submission in the local ring, Execute(AnyInvocable)
// moves it there: both are one queue, in submission order, whichever the caller used
// (and through an EventExecutor& the AnyInvocable overload is the one called).
TEST(LocalQueueTest, BothExecuteOverloadsKeepOneOrder) {
  DefaultEventExecutor executor;
  EventExecutor& as_interface = executor;
  std::vector<int> order;  // loop-confined
  auto f = executor.Submit([&] {
    for (int i = 0; i < 300; i += 3) {
      executor.Execute([&order, i] { order.push_back(i); }).IgnoreError();
      executor.Execute(absl::AnyInvocable<void()>([&order, i] { order.push_back(i + 1); }))
          .IgnoreError();
      as_interface.Execute([&order, i] { order.push_back(i + 2); }).IgnoreError();
    }
  });
  ASSERT_TRUE(f.Await().ok());
  Barrier(executor);
  ASSERT_EQ(order.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(order[i], i);
}

// Execute(callable) from another thread, with a move-only capture: queued as any task.
// Refused after shutdown, the callable is destroyed unrun (its captures released).
TEST(LocalQueueTest, ExecuteOfACallableFromAnotherThreadAndAfterShutdown) {
  DefaultEventExecutor executor;
  Latch ran;
  auto value = std::make_unique<int>(42);
  std::atomic<int> seen{0};
  ASSERT_TRUE(executor
                  .Execute([v = std::move(value), &seen, &ran] {
                    seen.store(*v);
                    ran.Open();
                  })
                  .ok());
  ASSERT_TRUE(ran.Wait());
  EXPECT_EQ(seen.load(), 42);
  ASSERT_TRUE(executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15)).Await().ok());
  auto keep = std::make_shared<int>(0);
  bool ran_after = false;
  EXPECT_EQ(executor.Execute([keep, &ran_after] { ran_after = true; }).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(keep.use_count(), 1);
  EXPECT_FALSE(ran_after);
}

// A loop whose Cleanup() (run in kShutdown, after the drain) tries to queue a task.
class SubmitsInCleanup final : public LoopForTest {
 public:
  SubmitsInCleanup() : LoopForTest(ExecutorOptions()) {}
  ~SubmitsInCleanup() override { ShutdownAndJoin(); }
  std::atomic<int> cleanup_status{-1};

 protected:
  void Cleanup() override {
    cleanup_status = static_cast<int>(Execute([] {}).code());
  }
};

// Tasks the loop queued for itself before kShutdown run during the drain; one queued
// after it is refused with the shutdown status, exactly as a foreign one.
TEST(LocalQueueTest, ShutdownDrainsLoopSubmissionsThenRejectsThem) {
  SubmitsInCleanup executor;
  std::atomic<int> ran{0};
  Latch queued;
  ASSERT_TRUE(executor
                  .Execute([&] {
                    for (int i = 0; i < 100; ++i) {
                      executor.Execute([&] { ran.fetch_add(1); }).IgnoreError();
                    }
                    // Still inside this task: the 100 wait in the loop's ring.
                    executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5));
                    queued.Open();
                  })
                  .ok());
  ASSERT_TRUE(queued.Wait());
  ASSERT_TRUE(executor.TerminationFuture().AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(executor.cleanup_status.load(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
}

// A timer scheduled from another thread with an earlier deadline than the one the loop
// sleeps for wakes it (virtual time: the loop would otherwise sleep an hour for real).
TEST_F(ScheduledTaskTest, EarlierForeignTimerWakesASleepingLoop) {
  auto late = executor.Schedule([] {}, absl::Hours(1));
  Barrier(executor);  // the loop now sleeps until the hour is up
  auto now = executor.Schedule([] { return 7; }, absl::ZeroDuration());
  ASSERT_TRUE(now.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_EQ(*now.GetNow(), 7);
  EXPECT_FALSE(late.IsDone());
}

// Cross-thread cancellations free their timers without any other task or timer waking
// the loop: once 1024 (kCancelWakeBatch) wait, they wake it, so fewer than that are ever
// left waiting for the loop's next wake-up.
TEST_F(ScheduledTaskTest, MassForeignCancelFreesTimersWithoutAnotherWakeup) {
  auto token = std::make_shared<int>(0);
  std::vector<ScheduledFuture<void>> fs;
  for (int i = 0; i < 4096; ++i) fs.push_back(executor.Schedule([token] {}, absl::Hours(1)));
  Barrier(executor);
  ASSERT_EQ(executor.ScheduledTaskCount(), 4096u);
  for (auto& f : fs) ASSERT_TRUE(f.Cancel());
  // No barrier, no clock movement: only the cancellations themselves wake the loop.
  absl::Time give_up = absl::Now() + gyre::testing::Scaled(absl::Seconds(30));
  while (executor.ScheduledTaskCount() >= 1024 && absl::Now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_LT(executor.ScheduledTaskCount(), 1024u);
  Barrier(executor);  // a wake-up frees the rest
  EXPECT_EQ(executor.ScheduledTaskCount(), 0u);
  EXPECT_EQ(token.use_count(), 1);  // every body destroyed
}

// Timers scheduled from many threads while others cancel them: each runs or is
// cancelled exactly once, and nothing stays in the heap.
TEST_F(ScheduledTaskTest, ConcurrentForeignScheduleAndCancel) {
  std::atomic<int> ran{0};
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<ScheduledFuture<void>>> fs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        fs[t].push_back(executor.Schedule([&] { ran.fetch_add(1); }, absl::Seconds(1 + i % 7)));
        if (i % 2 == 1) fs[t][i - 1].Cancel();
      }
    });
  }
  for (auto& th : threads) th.join();
  ticker.Advance(absl::Seconds(10));
  int cancelled = 0;
  for (auto& v : fs) {
    for (auto& f : v) {
      ASSERT_TRUE(f.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
      if (f.IsCancelled()) ++cancelled;
    }
  }
  EXPECT_EQ(cancelled, kThreads * kPerThread / 2);
  EXPECT_EQ(ran.load(), kThreads * kPerThread / 2);
  Barrier(executor);
  EXPECT_EQ(executor.ScheduledTaskCount(), 0u);
}

TEST(LifetimeTest, DestructorShutsDownAndJoins) {
  std::atomic<int> ran{0};
  std::atomic<bool> hook{false};
  {
    DefaultEventExecutor executor;
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(executor.Execute([&] { ran.fetch_add(1); }).ok());
    ASSERT_TRUE(executor.AddShutdownHook([&] { hook = true; }).ok());
  }
  EXPECT_EQ(ran.load(), 100);
  EXPECT_TRUE(hook.load());
}

TEST(LifetimeTest, DestructorEndsALongQuietPeriod) {
  testing::ManualTicker ticker;
  std::atomic<bool> terminated{false};
  {
    DefaultEventExecutor executor(WithTicker(&ticker));
    Barrier(executor);
    executor.ShutdownGracefully(absl::Hours(1), absl::Hours(2))
        .AddListener([&](const Future<void>&) { terminated = true; });
  }  // would hang for an hour of virtual time if the destructor kept the quiet period
  EXPECT_TRUE(terminated.load());
}

// A termination listener may destroy its executor: the notification goes on (the next
// listener still sees a successful future) on a core the executor no longer owns. ASan
// reports the use after free this once was.
TEST(LifetimeTest, TerminationListenerMayDestroyTheExecutor) {
  auto* executor = new DefaultEventExecutor();
  // The loop waits for `go` so that termination (and the delete) comes only after
  // ShutdownGracefully has returned: no other thread may still be inside the executor
  // when a listener destroys it.
  auto go = std::make_shared<Latch>();
  ASSERT_TRUE(executor->Execute([go] { go->Wait(); }).ok());
  auto seen = std::make_shared<std::atomic<int>>(0);
  auto done = std::make_shared<Latch>();
  {
    Future<void> termination = executor->TerminationFuture();
    termination.AddListener([executor](const Future<void>&) { delete executor; });
    termination.AddListener([seen, done](const Future<void>& f) {
      seen->store(f.IsSuccess() ? 1 : 2);
      done->Open();
    });
  }  // the executor's own promise now holds the only reference
  (void)executor->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5));
  go->Open();
  ASSERT_TRUE(done->Wait());
  EXPECT_EQ(seen->load(), 1);
}

// Runs each batch as an I/O loop with an ioRatio below 100 does, RunAllTasks(budget),
// and records the most items of work (counted by the test's tasks) that one call ran.
class BudgetLoop final : public SingleThreadEventExecutor {
 public:
  BudgetLoop(ExecutorOptions o, absl::Duration budget)
      : SingleThreadEventExecutor(nullptr, std::move(o)), budget_(budget) {}
  ~BudgetLoop() override { ShutdownAndJoin(); }

  std::atomic<int> ran{0};  // the test's tasks add one each
  std::atomic<int> most_per_call{0};

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    for (;;) {
      WaitForTasks();
      const int before = ran.load();
      RunAllTasks(budget_);
      most_per_call.store(std::max(most_per_call.load(), ran.load() - before));
      if (ConfirmShutdown()) break;
    }
  }

 private:
  const absl::Duration budget_;
};

// B121: a timed RunAllTasks counts due timers as tasks. 300 timers fall due at once and
// each takes 1 ms of virtual time; a 10 ms budget lets one call run at most 64 of them
// (the clock is read every 64) and leaves the rest, in order, to the following calls.
TEST(SingleThreadEventExecutorTest, TimedRunAllTasksCountsDueTimersInItsBudgetB121) {
  testing::ManualTicker ticker;
  BudgetLoop loop(WithTicker(&ticker), absl::Milliseconds(10));
  constexpr int kTimers = 300;
  std::vector<int> order;  // loop thread only until the last timer is awaited
  std::vector<ScheduledFuture<void>> timers;
  for (int i = 0; i < kTimers; ++i) {
    timers.push_back(loop.Schedule(
        [&, i] {
          order.push_back(i);
          loop.ran.fetch_add(1);
          ticker.Advance(absl::Milliseconds(1));
        },
        absl::Milliseconds(1)));
  }
  ticker.Advance(absl::Milliseconds(1));  // all due together
  for (auto& t : timers) ASSERT_TRUE(t.Await().ok());
  EXPECT_EQ(loop.ran.load(), kTimers);
  EXPECT_GT(loop.most_per_call.load(), 0);
  EXPECT_LE(loop.most_per_call.load(), 64);
  std::vector<int> expected(kTimers);
  for (int i = 0; i < kTimers; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);  // same deadline: scheduling order, across calls
}

// B121: the timed check comes every 64 tasks from the loop's own ring and the shared
// queue together. 40 tasks queued on the loop thread, then 100 from another thread,
// each taking 1 ms of a 10 ms budget: one call runs 64 of them, not 40 + 64.
TEST(SingleThreadEventExecutorTest, TimedRunAllTasksReadsTheClockEvery64TasksB121) {
  testing::ManualTicker ticker;
  BudgetLoop loop(WithTicker(&ticker), absl::Milliseconds(10));
  auto count = [&] {
    loop.ran.fetch_add(1);
    ticker.Advance(absl::Milliseconds(1));
  };
  ASSERT_TRUE(loop.Submit([&] {
                    for (int i = 0; i < 40; ++i) ASSERT_TRUE(loop.Execute(count).ok());
                    std::thread other([&] {
                      for (int i = 0; i < 100; ++i) ASSERT_TRUE(loop.Execute(count).ok());
                    });
                    other.join();
                  })
                  .Await()
                  .ok());
  Barrier(loop);
  EXPECT_EQ(loop.ran.load(), 140);
  EXPECT_EQ(loop.most_per_call.load(), 64);
}

}  // namespace
}  // namespace gyre
