#include "gyre/concurrent/promise.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/immediate_event_executor.h"
#include "gyre/concurrent/internal/future_core.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/testing/test_executor.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using ::gyre::testing::TestExecutor;

// The race loops below run kStressFactor times longer in the stress variant
// (//concurrent:promise_stress_test).
#ifdef GYRE_STRESS
constexpr int kStressFactor = 10;
#else
constexpr int kStressFactor = 1;
#endif
using ::testing::ElementsAre;

// An executor that counts every use and runs nothing: for "never touches the executor".
class CountingExecutor final : public test::NeverShutDownExecutor {
 public:
  using EventExecutor::InEventLoop;
  bool InEventLoop(std::thread::id) const override {
    touched_.fetch_add(1);
    return false;
  }
  absl::Status Execute(absl::AnyInvocable<void()>) override {
    touched_.fetch_add(1);
    return absl::FailedPreconditionError("CountingExecutor runs nothing");
  }

  int touched() const { return touched_.load(); }

 private:
  mutable std::atomic<int> touched_{0};
};

// Collects log lines for the tests that check a listener's exception is logged.
class LogCapture {
 public:
  LogCapture() {
    internal::SetLogSinkForTesting([this](internal::LogSeverity, const char*, int,
                                          const std::string& message) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(message);
    });
  }
  ~LogCapture() { internal::SetLogSinkForTesting(nullptr); }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// The future's state in one word, once its flags are checked against each other:
// "pending", "success", "failed" or "cancelled"; "inconsistent" when they disagree.
template <typename F>
std::string StateOf(const F& f) {
  const bool ok_cause = f.Cause().ok();
  if (!f.IsDone()) {
    return f.IsSuccess() || f.IsCancelled() || !ok_cause ? "inconsistent" : "pending";
  }
  if (f.IsSuccess()) return f.IsCancelled() || !ok_cause ? "inconsistent" : "success";
  if (f.IsCancelled()) {
    return f.Cause().code() == absl::StatusCode::kCancelled ? "cancelled" : "inconsistent";
  }
  return ok_cause ? "inconsistent" : "failed";
}

TEST(PromiseTest, StartsPending) {
  Promise<int> p;
  EXPECT_EQ(StateOf(p), "pending");
  EXPECT_TRUE(p.IsCancellable());
  EXPECT_EQ(p.GetNow(), nullptr);
  EXPECT_EQ(p.executor(), nullptr);
}

TEST(PromiseTest, SuccessSetsValueOnce) {
  Promise<std::string> p;
  ASSERT_TRUE(p.SetSuccess("first").ok());
  EXPECT_EQ(StateOf(p), "success");
  EXPECT_FALSE(p.IsCancellable());
  ASSERT_NE(p.GetNow(), nullptr);
  EXPECT_EQ(*p.GetNow(), "first");
  // B52: a second completion changes nothing and says so.
  absl::Status again = p.SetSuccess("second");
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(p.TrySuccess("third"));
  EXPECT_FALSE(p.TryFailure(absl::InternalError("x")));
  EXPECT_EQ(p.SetFailure(absl::InternalError("x")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(p.Cancel());
  EXPECT_EQ(*p.GetNow(), "first");
  EXPECT_TRUE(p.Cause().ok());
}

TEST(PromiseTest, FailureKeepsCause) {
  Promise<int> p;
  ASSERT_TRUE(p.SetFailure(absl::UnavailableError("down")).ok());
  EXPECT_EQ(StateOf(p), "failed");
  EXPECT_EQ(p.GetNow(), nullptr);
  EXPECT_EQ(p.Cause(), absl::UnavailableError("down"));
  EXPECT_FALSE(p.TrySuccess(1));
}

TEST(PromiseTest, FailureNeedsANonOkCause) {
  Promise<int> p;
  EXPECT_EQ(p.SetFailure(absl::OkStatus()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(p.TryFailure(absl::OkStatus()));
  EXPECT_FALSE(p.IsDone());
}

TEST(PromiseTest, CancelledCauseIsCancelledB39) {
  Promise<int> p;
  EXPECT_TRUE(p.Cancel());
  EXPECT_EQ(StateOf(p), "cancelled");
  EXPECT_FALSE(p.Cancel());
  EXPECT_FALSE(p.TrySuccess(1));
  EXPECT_EQ(p.SetSuccess(1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PromiseTest, SyncOnCancelledReturnsCancelledB38) {
  Promise<int> p;
  p.Cancel();
  EXPECT_EQ(p.Sync().status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(p.AwaitFor(gyre::testing::Scaled(absl::Seconds(1))));
}

TEST(PromiseTest, UncancellableB48B53) {
  Promise<std::string> p;
  EXPECT_TRUE(p.SetUncancellable());
  EXPECT_TRUE(p.SetUncancellable());  // idempotent
  EXPECT_FALSE(p.IsCancellable());
  EXPECT_FALSE(p.IsDone());
  EXPECT_FALSE(p.IsSuccess());
  EXPECT_EQ(p.GetNow(), nullptr);
  EXPECT_FALSE(p.Cancel());
  EXPECT_FALSE(p.IsCancelled());
  ASSERT_TRUE(p.SetSuccess("success").ok());
  EXPECT_EQ(*p.GetNow(), "success");
  EXPECT_TRUE(p.SetUncancellable());  // done, not cancelled

  Promise<int> cancelled;
  cancelled.Cancel();
  EXPECT_FALSE(cancelled.SetUncancellable());

  Promise<int> uncancellable_failure;
  uncancellable_failure.SetUncancellable();
  EXPECT_TRUE(uncancellable_failure.TryFailure(absl::AbortedError("no")));
  EXPECT_EQ(uncancellable_failure.Cause().code(), absl::StatusCode::kAborted);
}

TEST(PromiseTest, VoidPromise) {
  Promise<void> p;
  EXPECT_FALSE(p.GetNow());
  ASSERT_TRUE(p.SetSuccess().ok());
  EXPECT_TRUE(p.GetNow());
  EXPECT_TRUE(p.Sync().ok());
  EXPECT_EQ(p.SetSuccess().code(), absl::StatusCode::kFailedPrecondition);
  Promise<void> failed;
  failed.TryFailure(absl::DataLossError("lost"));
  EXPECT_EQ(failed.Sync(), absl::DataLossError("lost"));
}

// TrySuccessAndReset: completes what someone can observe, only releases what no one can.
TEST(PromiseTest, TrySuccessAndResetCompletesAnObservedPromise) {
  Promise<void> p;
  Future<void> held = p;
  EXPECT_TRUE(p.TrySuccessAndReset());
  EXPECT_FALSE(p.valid());
  EXPECT_TRUE(held.IsSuccess());

  // A listener observes the completion even with no other handle left.
  Promise<void> q;
  int notified = 0;
  q.AddListener([&notified](const Future<void>& f) { notified += f.IsSuccess() ? 1 : 100; });
  EXPECT_TRUE(q.TrySuccessAndReset());
  EXPECT_EQ(notified, 1);

  // Already complete: nothing to do, and the handle is still released.
  Promise<void> r;
  Future<void> cancelled = r;
  ASSERT_TRUE(cancelled.Cancel());
  EXPECT_FALSE(r.TrySuccessAndReset());
  EXPECT_FALSE(r.valid());
  EXPECT_TRUE(cancelled.IsCancelled());
}

// A promise whose state the test can inspect.
class InspectablePromise : public Promise<void> {
 public:
  using Future<void>::core;
};

TEST(PromiseTest, TrySuccessAndResetReleasesAnUnobservedPromise) {
  InspectablePromise p;
  internal::FutureCore<void>* core = p.core();
  EXPECT_TRUE(core->IsUnobserved());
  {
    Future<void> other = p;
    EXPECT_FALSE(core->IsUnobserved());
  }
  EXPECT_TRUE(core->IsUnobserved());
  EXPECT_TRUE(p.TrySuccessAndReset());  // released (a leak would fail the ASan run)
  EXPECT_FALSE(p.valid());
  Promise<void> cancelled;
  ASSERT_TRUE(cancelled.Cancel());
  EXPECT_FALSE(cancelled.TrySuccessAndReset()) << "already complete, though unobserved";
}

TEST(PromiseTest, ResetIfUnobservedKeepsAPromiseSomeoneCanSee) {
  Promise<void> held;
  Future<void> other = held;
  EXPECT_FALSE(held.ResetIfUnobserved());
  EXPECT_TRUE(held.valid());
  Promise<void> listened;
  int notified = 0;
  listened.AddListener([&notified](const Future<void>&) { ++notified; });
  EXPECT_FALSE(listened.ResetIfUnobserved());
  ASSERT_TRUE(listened.TrySuccess());
  EXPECT_EQ(notified, 1);

  Promise<int> alone;
  EXPECT_TRUE(alone.ResetIfUnobserved());  // released (a leak would fail the ASan run)
  EXPECT_FALSE(alone.valid());
}

TEST(PromiseTest, MoveOnlyValue) {
  Promise<std::unique_ptr<int>> p;
  ASSERT_TRUE(p.TrySuccess(std::make_unique<int>(7)));
  ASSERT_NE(p.GetNow(), nullptr);
  EXPECT_EQ(**p.GetNow(), 7);
  absl::StatusOr<std::unique_ptr<int>> taken = p.TakeSync();
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(**taken, 7);
  EXPECT_EQ(*p.GetNow(), nullptr);  // taken: the shared state holds the moved-from value
}

template <typename F>
concept HasSync = requires(const F& f) { f.Sync(); };
template <typename F>
concept HasTakeSync = requires(F& f) { f.TakeSync(); };

// Sync() is const and only reads, so it does not exist for a move-only value (it would
// have to move out of shared state behind a const method); TakeSync() says it takes.
TEST(PromiseTest, TakingAMoveOnlyValueIsExplicit) {
  static_assert(!HasSync<Future<std::unique_ptr<int>>>);
  static_assert(HasSync<Future<int>> && HasSync<Future<void>>);
  static_assert(HasTakeSync<Future<std::unique_ptr<int>>> && HasTakeSync<Future<int>>);
  static_assert(!HasTakeSync<Future<void>>);
  Promise<int> p;
  p.TrySuccess(3);
  EXPECT_EQ(*p.Sync(), 3);
  EXPECT_EQ(*p.Sync(), 3);  // copies: as often as you like
  Promise<std::unique_ptr<int>> failed;
  failed.TryFailure(absl::DataLossError("lost"));
  EXPECT_EQ(failed.TakeSync().status(), absl::DataLossError("lost"));
}

struct NoDefault {
  explicit NoDefault(int v) : value(v) {}
  int value;
};

TEST(PromiseTest, ValueWithoutDefaultConstructor) {
  Promise<NoDefault> p;
  EXPECT_EQ(p.GetNow(), nullptr);
  p.TrySuccess(NoDefault(3));
  EXPECT_EQ(p.GetNow()->value, 3);
  EXPECT_EQ(p.Sync()->value, 3);
}

// Counts live instances, to check that values are destroyed exactly once.
struct Tracked {
  static inline std::atomic<int> live{0};
  Tracked() { ++live; }
  Tracked(const Tracked&) { ++live; }
  Tracked(Tracked&&) noexcept { ++live; }
  ~Tracked() { --live; }
};

TEST(PromiseTest, ValueDestroyedWithTheLastHandle) {
  ASSERT_EQ(Tracked::live.load(), 0);
  {
    Promise<Tracked> p;
    Future<Tracked> copy = p;
    p.TrySuccess(Tracked());
    EXPECT_EQ(Tracked::live.load(), 1);
  }
  EXPECT_EQ(Tracked::live.load(), 0);
  { Promise<Tracked> never_completed; }
  EXPECT_EQ(Tracked::live.load(), 0);
}

TEST(PromiseTest, SentinelLookingValuesAreOrdinaryB47) {
  // gyre's state word is separate from the value, so no value can look like a state.
  Promise<uintptr_t> p;
  p.TrySuccess(1);  // the numeric value of kUncancellable
  EXPECT_TRUE(p.IsSuccess());
  EXPECT_EQ(*p.GetNow(), 1u);
}

TEST(PromiseTest, CopiesShareState) {
  Promise<int> p;
  Future<int> f = p;
  Future<int> g = f;
  Future<int> moved = std::move(g);
  EXPECT_FALSE(g.valid());
  p.TrySuccess(5);
  EXPECT_EQ(*f.GetNow(), 5);
  EXPECT_EQ(*moved.GetNow(), 5);
  f = moved;
  EXPECT_EQ(*f.GetNow(), 5);
}

TEST(PromiseTest, NoListenersNeverTouchExecutorB36B37) {
  CountingExecutor executor;
  Promise<int> succeeded(&executor);
  succeeded.TrySuccess(1);
  Promise<int> failed(&executor);
  failed.TryFailure(absl::InternalError("x"));
  Promise<int> cancelled(&executor);
  cancelled.Cancel();
  EXPECT_EQ(executor.touched(), 0);
  EXPECT_EQ(*succeeded.GetNow(), 1);
  EXPECT_EQ(failed.Cause(), absl::InternalError("x"));
  EXPECT_TRUE(cancelled.IsCancelled());
}

TEST(PromiseTest, FactoriesMakeCompletedFutures) {
  TestExecutor executor;
  Future<int> ok = MakeSucceededFuture<int>(&executor, 4);
  EXPECT_EQ(*ok.GetNow(), 4);
  EXPECT_EQ(ok.executor(), &executor);
  Future<int> bad = MakeFailedFuture<int>(&executor, absl::NotFoundError("nf"));
  EXPECT_EQ(bad.Cause(), absl::NotFoundError("nf"));
  Future<int> invalid = MakeFailedFuture<int>(&executor, absl::OkStatus());
  EXPECT_EQ(invalid.Cause().code(), absl::StatusCode::kInvalidArgument);
  Future<void> v = MakeSucceededFuture(&executor);
  EXPECT_TRUE(v.GetNow());
  Promise<std::string> made = executor.NewPromise<std::string>();
  EXPECT_EQ(made.executor(), &executor);
  EXPECT_EQ(*executor.NewSucceededFuture<int>(9).GetNow(), 9);
  EXPECT_TRUE(executor.NewSucceededFuture().GetNow());
  EXPECT_EQ(executor.NewFailedFuture<int>(absl::AbortedError("a")).Cause().code(),
            absl::StatusCode::kAborted);
}

// --- Listeners -------------------------------------------------------------------

TEST(ListenerTest, RunOnExecutorThreadWhenCompletedElsewhere) {
  TestExecutor executor;
  Promise<int> p(&executor);
  Promise<std::thread::id> ran_on;
  p.AddListener([ran_on](const Future<int>& f) mutable {
    EXPECT_EQ(*f.GetNow(), 3);
    ran_on.TrySuccess(std::this_thread::get_id());
  });
  p.TrySuccess(3);  // from the test thread
  ASSERT_TRUE(ran_on.Await().ok());
  std::thread::id loop_thread;
  executor.RunAndWait([&] { loop_thread = std::this_thread::get_id(); });
  EXPECT_EQ(*ran_on.GetNow(), loop_thread);
  EXPECT_NE(*ran_on.GetNow(), std::this_thread::get_id());
}

TEST(ListenerTest, InlineInOrderOnExecutorThreadB42) {
  TestExecutor executor;
  std::vector<int> order;
  executor.RunAndWait([&] {
    Promise<int> p(&executor);
    for (int i = 1; i <= 3; ++i) {
      p.AddListener([&order, i, p](const Future<int>&) mutable {
        order.push_back(i);
        if (i == 3) {
          // Added during notification: runs after all of them.
          p.AddListener([&order](const Future<int>&) { order.push_back(4); });
        }
      });
    }
    p.TrySuccess(0);
    // Inline: already ran, before TrySuccess returned.
    EXPECT_THAT(order, ElementsAre(1, 2, 3, 4));
  });
  EXPECT_THAT(order, ElementsAre(1, 2, 3, 4));
}

TEST(ListenerTest, OrderHoldsWhenCompletionRacesAddListenerB42) {
  const int kIterations = static_cast<int>(testing::Iterations(2000 * kStressFactor));
  TestExecutor executor;
  test::ThreadCrew crew(1);
  for (int it = 0; it < kIterations; ++it) {
    Promise<int> p(&executor);
    auto order = std::make_shared<std::vector<int>>();
    Promise<void> all_done(&executor);
    crew.Start([p](int) mutable { p.TrySuccess(1); });
    for (int i = 1; i <= 3; ++i) {
      p.AddListener([order, i, all_done, p](const Future<int>&) mutable {
        order->push_back(i);
        if (i == 3) {
          p.AddListener([order, all_done](const Future<int>&) mutable {
            order->push_back(4);
            all_done.TrySuccess();
          });
        }
      });
    }
    ASSERT_TRUE(crew.Wait());
    ASSERT_TRUE(all_done.AwaitFor(testing::Scaled(absl::Seconds(30))));
    // all_done is completed on the loop by the last listener; read after a hop there.
    executor.RunAndWait([&] { ASSERT_THAT(*order, ElementsAre(1, 2, 3, 4)) << it; });
  }
}

TEST(ListenerTest, LateListenersAreNotifiedB43) {
  TestExecutor executor;
  Promise<int> p(&executor);
  p.TrySuccess(8);
  std::atomic<int> count{0};
  Promise<void> from_other_thread;
  p.AddListener([&](const Future<int>& f) {
    EXPECT_TRUE(executor.InEventLoop());
    EXPECT_EQ(*f.GetNow(), 8);
    ++count;
    from_other_thread.TrySuccess();
  });
  ASSERT_TRUE(from_other_thread.Await().ok());
  // From the loop: inline, before AddListener returns.
  executor.RunAndWait([&] {
    int before = count.load();
    p.AddListener([&](const Future<int>&) { ++count; });
    EXPECT_EQ(count.load(), before + 1);
  });
  EXPECT_EQ(count.load(), 2);
}

TEST(ListenerTest, AddingToCompletedFutureFromItsListenerB44) {
  // Null executor: notified inline on the completing / adding thread.
  Promise<int> p;
  int inner = 0;
  p.AddListener([&inner](const Future<int>& f) {
    f.AddListener([&inner](const Future<int>&) { ++inner; });
  });
  p.TrySuccess(1);
  EXPECT_EQ(inner, 1);
  Promise<int> failed;
  failed.AddListener([&inner](const Future<int>& f) {
    f.AddListener([&inner](const Future<int>&) { ++inner; });
  });
  failed.TryFailure(absl::InternalError("x"));
  EXPECT_EQ(inner, 2);
}

TEST(ListenerTest, LateListenerOrderedBeforeLaterTasksB45) {
  TestExecutor executor;
  std::vector<int> order;
  Promise<int> p(&executor);
  executor.RunAndWait([&] {
    p.AddListener([&](const Future<int>&) { order.push_back(1); });
    p.TrySuccess(0);
    p.AddListener([&](const Future<int>&) { order.push_back(2); });
  });
  // Added from a task on the loop, after completion: notified before a later task.
  Promise<void> done;
  executor.Execute([&] { p.AddListener([&](const Future<int>&) { order.push_back(3); }); })
      .IgnoreError();
  executor.Execute([&] {
    order.push_back(4);
    done.TrySuccess();
  }).IgnoreError();
  ASSERT_TRUE(done.Await().ok());
  EXPECT_THAT(order, ElementsAre(1, 2, 3, 4));
}

TEST(ListenerTest, ThrowingListenerIsLoggedAndOthersRunB55) {
  LogCapture capture;
  Promise<int> p;
  int ran = 0;
  p.AddListener([&](const Future<int>&) { ++ran; });
  p.AddListener([](const Future<int>&) { throw std::runtime_error("listener boom"); });
  p.AddListener([&](const Future<int>&) { ++ran; });
  EXPECT_TRUE(p.TrySuccess(1));
  EXPECT_EQ(ran, 2);
  std::vector<std::string> lines = capture.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::HasSubstr("listener boom"));
}

TEST(ListenerTest, RemoveListener) {
  Promise<int> p;
  int a = 0, b = 0;
  ListenerId ia = p.AddListener([&](const Future<int>&) { ++a; });
  ListenerId ib = p.AddListener([&](const Future<int>&) { ++b; });
  EXPECT_NE(ia, ib);
  EXPECT_TRUE(p.RemoveListener(ia));
  EXPECT_FALSE(p.RemoveListener(ia));      // already removed
  EXPECT_FALSE(p.RemoveListener(12345));   // unknown
  p.TrySuccess(1);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_FALSE(p.RemoveListener(ib));      // already notified
}

TEST(ListenerTest, NeverRunListenerIsDestroyedWithState) {
  auto token = std::make_shared<int>(0);
  {
    Promise<int> p;
    p.AddListener([token](const Future<int>&) {});
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(ListenerTest, RunListenerIsDestroyedAfterRunning) {
  auto token = std::make_shared<int>(0);
  Promise<int> p;
  p.AddListener([token](const Future<int>&) {});
  p.TrySuccess(1);
  EXPECT_EQ(token.use_count(), 1);
}

TEST(ListenerTest, RejectedNotificationRunsOnCompletingThread) {
  TestExecutor executor;
  executor.SetRejecting(true);
  Promise<int> p(&executor);
  bool ran = false;
  p.AddListener([&](const Future<int>&) { ran = true; });
  p.TrySuccess(1);
  EXPECT_TRUE(ran);  // never silently dropped
  executor.SetRejecting(false);
}

// B40/B49: a long chain where each listener completes the next promise.
void RunChain(EventExecutor* executor, int n, bool start_on_loop) {
  std::vector<Promise<int>> chain;
  chain.reserve(n);
  for (int i = 0; i < n; ++i) chain.emplace_back(executor);
  for (int i = 0; i + 1 < n; ++i) {
    Promise<int> next = chain[i + 1];
    chain[i].AddListener([next](const Future<int>& f) mutable { next.TrySuccess(*f.GetNow() + 1); });
  }
  if (start_on_loop) {
    static_cast<TestExecutor*>(executor)->RunAndWait([&] { chain[0].TrySuccess(0); });
  } else {
    chain[0].TrySuccess(0);
  }
  ASSERT_TRUE(chain.back().AwaitFor(gyre::testing::Scaled(absl::Seconds(60))));
  EXPECT_EQ(*chain.back().GetNow(), n - 1);
}

TEST(ListenerTest, LongChainNoStackOverflowOnExecutorB40B49) {
  TestExecutor executor;
  RunChain(&executor, 10000, /*start_on_loop=*/true);
  RunChain(&executor, 10000, /*start_on_loop=*/false);
}

TEST(ListenerTest, LongChainNoStackOverflowWithoutExecutorB40) {
  RunChain(nullptr, 10000, /*start_on_loop=*/false);
}

TEST(ListenerTest, DepthBoundHandsOffToATaskB49) {
  TestExecutor executor;
  std::vector<Promise<int>> chain;
  for (int i = 0; i < 20; ++i) chain.emplace_back(&executor);
  std::vector<int> depth_ran_inline(20, -1);
  for (int i = 0; i + 1 < 20; ++i) {
    Promise<int> next = chain[i + 1];
    chain[i].AddListener([next](const Future<int>& f) mutable { next.TrySuccess(*f.GetNow() + 1); });
  }
  int inline_count = 0;
  executor.RunAndWait([&] {
    chain[0].TrySuccess(0);
    for (auto& p : chain) inline_count += p.IsDone() ? 1 : 0;
  });
  // The first promise plus the 8 nested inline notifications completed inline; the rest
  // continued in a task after this one.
  EXPECT_EQ(inline_count, 1 + internal::kMaxListenerStackDepth);
  ASSERT_TRUE(chain.back().AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_EQ(*chain.back().GetNow(), 19);
}

TEST(ListenerTest, ChainedAddListenerOnCompletedFuturesB41) {
  TestExecutor executor;
  constexpr int kN = 10000;
  std::vector<Promise<int>> chain;
  for (int i = 0; i < kN; ++i) chain.emplace_back(&executor);
  for (int i = 0; i + 1 < kN; ++i) {
    Promise<int> next = chain[i + 1];
    chain[i].AddListener([next](const Future<int>& f) mutable {
      f.AddListener([next](const Future<int>& g) mutable { next.TrySuccess(*g.GetNow() + 1); });
    });
  }
  executor.RunAndWait([&] { chain[0].TrySuccess(0); });
  ASSERT_TRUE(chain.back().AwaitFor(gyre::testing::Scaled(absl::Seconds(60))));
  EXPECT_EQ(*chain.back().GetNow(), kN - 1);
}

// B41 with the immediate executor and with none: each listener adds another to its
// completed future, which completes the next promise; no stack overflow, every link runs.
TEST(ListenerTest, ChainedAddListenerWithoutALoopB41) {
  for (EventExecutor* executor :
       {static_cast<EventExecutor*>(ImmediateEventExecutor::Instance()),
        static_cast<EventExecutor*>(nullptr)}) {
    constexpr int kN = 10000;
    std::vector<Promise<int>> chain;
    for (int i = 0; i < kN; ++i) chain.emplace_back(executor);
    for (int i = 0; i + 1 < kN; ++i) {
      Promise<int> next = chain[i + 1];
      chain[i].AddListener([next](const Future<int>& f) mutable {
        f.AddListener([next](const Future<int>& g) mutable { next.TrySuccess(*g.GetNow() + 1); });
      });
    }
    chain[0].TrySuccess(0);
    ASSERT_TRUE(chain.back().IsDone()) << (executor == nullptr ? "no executor" : "immediate");
    EXPECT_EQ(*chain.back().GetNow(), kN - 1);
  }
}

// A deep chain of executor-less futures on a short-lived thread: the notifications
// beyond the depth bound go through that thread's deferred queue, which must be freed
// when the thread exits (LeakSanitizer reports it otherwise).
TEST(ListenerTest, DeferredNotificationQueueIsFreedAtThreadExit) {
  std::vector<Promise<int>> chain(3 * internal::kMaxListenerStackDepth);
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    Promise<int> next = chain[i + 1];
    chain[i].AddListener([next](const Future<int>& f) mutable { next.TrySuccess(*f.GetNow() + 1); });
  }
  std::thread([&] { chain[0].TrySuccess(0); }).join();
  ASSERT_TRUE(chain.back().IsDone());
  EXPECT_EQ(*chain.back().GetNow(), static_cast<int>(chain.size()) - 1);
}

// A thread that finds the future's lock held past a short spin yields its core rather
// than spinning on: here the holder is inside T's move constructor, which waits.
TEST(LockTest, AWaiterBehindAHeldLockYields) {
  struct Slow {
    Slow(std::atomic<bool>* entered, std::atomic<bool>* release)
        : entered(entered), release(release) {}
    Slow(const Slow& other) = default;
    // Runs under the lock: TrySuccess moves its by-value argument into the core.
    Slow(Slow&& other) : entered(other.entered), release(other.release) {
      entered->store(true);
      while (!release->load()) std::this_thread::yield();
    }
    std::atomic<bool>* entered;
    std::atomic<bool>* release;
  };
  std::atomic<bool> entered{false}, release{false};
  Promise<Slow> p;
  const Slow value(&entered, &release);
  std::thread completer([&] { p.TrySuccess(value); });  // moves a copy in under the lock
  ASSERT_TRUE(testing::Eventually([&] { return entered.load(); }, absl::Seconds(30)));
  const uint64_t before = internal::FutureLockYieldsForTesting();
  std::atomic<bool> added{false};
  std::thread waiter([&] {
    p.AddListener([](const Future<Slow>&) {});
    added = true;
  });
  bool yielded = testing::Eventually(
      [&] { return internal::FutureLockYieldsForTesting() > before; }, absl::Seconds(30));
  release = true;
  completer.join();
  waiter.join();
  EXPECT_TRUE(yielded);
  EXPECT_TRUE(added.load());
  EXPECT_TRUE(p.IsSuccess());
}

// --- Waiting -----------------------------------------------------------------------

TEST(AwaitTest, AwaitOnOwnExecutorFailsFastB50) {
  TestExecutor executor;
  Promise<int> p(&executor);
  executor.RunAndWait([&] {
    absl::Status s = p.Await();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("blocking operation"));
    EXPECT_EQ(p.Sync().status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(p.AwaitFor(absl::Hours(1)));  // returns at once
  });
  p.TrySuccess(1);
  // Complete: no deadlock check, returns at once even on the loop.
  executor.RunAndWait([&] {
    EXPECT_TRUE(p.Await().ok());
    EXPECT_EQ(*p.Sync(), 1);
  });
}

TEST(AwaitTest, AwaitForTimesOut) {
  Promise<int> p;
  EXPECT_FALSE(p.AwaitFor(absl::Milliseconds(1)));
  EXPECT_FALSE(p.AwaitUntil(absl::Now() - absl::Seconds(1)));
  p.TrySuccess(1);
  EXPECT_TRUE(p.AwaitFor(absl::ZeroDuration()));
}

// The deadline bounds the spin: with a spin budget of an hour, a wait whose deadline has
// passed returns at once and a 1 ms wait returns after about 1 ms (a hang otherwise).
TEST(AwaitTest, DeadlineIsCheckedBeforeAndDuringTheSpin) {
  internal::SetAwaitSpinForTesting(absl::Hours(1));
  Promise<int> p;
  EXPECT_FALSE(p.AwaitFor(absl::ZeroDuration()));
  EXPECT_FALSE(p.AwaitFor(absl::Milliseconds(1)));
  EXPECT_FALSE(p.AwaitUntil(absl::Now() - absl::Seconds(1)));
  internal::SetAwaitSpinForTesting(absl::Microseconds(20));
  p.TrySuccess(1);
  EXPECT_TRUE(p.AwaitFor(absl::ZeroDuration()));
}

TEST(AwaitTest, ManyWaitersReleasedByOneCompletion) {
  constexpr int kWaiters = 16;
  Promise<int> p;
  std::atomic<int> released{0};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      ++started;
      absl::StatusOr<int> v = p.Sync();
      EXPECT_TRUE(v.ok());
      EXPECT_EQ(*v, 11);
      ++released;
    });
  }
  while (started.load() < kWaiters) std::this_thread::yield();
  p.TrySuccess(11);
  for (auto& t : threads) t.join();
  EXPECT_EQ(released.load(), kWaiters);
}

TEST(AwaitTest, CompletionRacingAwaitNeverLosesWakeupB46) {
  const int kIterations = static_cast<int>(testing::Iterations(2000 * kStressFactor));
  test::ThreadCrew crew(1);
  // Half the rounds sleep at once, without the spin that would hide the sleeping path.
  // Await() has no deadline to re-check at: a lost wake-up hangs and the test times out.
  for (int i = 0; i < kIterations; ++i) {
    internal::SetAwaitSpinForTesting(i % 2 == 0 ? absl::ZeroDuration() : absl::Microseconds(20));
    Promise<int> p;
    crew.Start([p](int) mutable { p.TrySuccess(1); });
    ASSERT_TRUE(p.Await().ok()) << i;
    ASSERT_TRUE(crew.Wait());
  }
  internal::SetAwaitSpinForTesting(absl::Microseconds(20));
}

// --- Races (run under TSan) ----------------------------------------------------------

TEST(RaceTest, ExactlyOneCompleterWins) {
  constexpr int kThreads = 8;
  const int iterations = static_cast<int>(testing::Iterations(600 * kStressFactor));
  TestExecutor executor;
  test::ThreadCrew crew(kThreads);
  for (int it = 0; it < iterations; ++it) {
    Promise<int> p(&executor);
    std::atomic<int> notified{0};
    std::atomic<int> winners{0};
    for (int l = 0; l < 3; ++l) p.AddListener([&notified](const Future<int>&) { ++notified; });
    crew.Start([&](int t) {
        bool won = false;
        switch (t % 3) {
          case 0: won = p.TrySuccess(t); break;
          case 1: won = p.TryFailure(absl::InternalError("f")); break;
          case 2: won = p.Cancel(); break;
        }
        if (won) ++winners;
    });
    ASSERT_TRUE(crew.Wait());
    ASSERT_EQ(winners.load(), 1);
    ASSERT_TRUE(p.IsDone());
    executor.RunAndWait([] {});  // the notification task, if any, has run
    // Notification may have been queued behind RunAndWait's task only if it was posted
    // later, which cannot happen after the joins: all completers have returned.
    ASSERT_EQ(notified.load(), 3);
  }
}

TEST(RaceTest, AddListenerRacingCompletionNeverLostNeverTwice) {
  const int iterations = static_cast<int>(testing::Iterations(10000 * kStressFactor));
  TestExecutor executor;
  std::atomic<int> total{0};
  test::ThreadCrew crew(1);
  for (int it = 0; it < iterations; ++it) {
    Promise<int> p(&executor);
    crew.Start([p](int) mutable { p.TrySuccess(1); });
    p.AddListener([&total](const Future<int>&) { total.fetch_add(1); });
    ASSERT_TRUE(crew.Wait());
  }
  executor.RunAndWait([] {});
  EXPECT_EQ(total.load(), iterations);
}

// Listeners run inline on the completing thread without a reference of their own: a
// listener may hand the completing (and only) handle to another thread, which drops it
// while the remaining listeners still run. The state must outlive the notification
// (under ASan, a use after free otherwise) and every listener must still run once.
TEST(PromiseTest, LastHandleDroppedElsewhereWhileListenersRunInline) {
  auto promise = std::make_unique<Promise<void>>();
  std::thread dropper;
  gyre::test::Latch dropped;
  int first = 0, second = 0;
  promise->AddListener([&](const Future<void>& f) {
    ++first;
    dropper = std::thread([h = Promise<void>(std::move(*promise)), &dropped]() mutable {
      { Promise<void> last = std::move(h); }  // the state's last reference goes here
      dropped.Open();
    });
    ASSERT_TRUE(dropped.Wait());
    EXPECT_TRUE(f.IsSuccess());  // the listener's handle holds no reference
  });
  promise->AddListener([&](const Future<void>& f) {
    ++second;
    EXPECT_TRUE(f.IsSuccess());
  });
  EXPECT_TRUE(promise->TrySuccess());
  dropper.join();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_FALSE(promise->valid());
}

// The same on the completing thread itself: a listener destroys the only handle.
TEST(PromiseTest, LastHandleDestroyedByItsOwnListener) {
  auto promise = std::make_unique<Promise<void>>();
  int ran = 0;
  promise->AddListener([&](const Future<void>&) {
    ++ran;
    Promise<void> last = std::move(*promise);  // destroyed at the end of this listener
  });
  promise->AddListener([&](const Future<void>& f) {
    ++ran;
    EXPECT_TRUE(f.IsSuccess());
  });
  EXPECT_TRUE(promise->TrySuccess());
  EXPECT_EQ(ran, 2);
}

// Cancel through the only handle, whose listener destroys it: the state dies at the end
// of the notification, and Cancel() must not touch it after that (its cancellation hook
// runs before the listeners).
TEST(PromiseTest, CancelWhoseListenerDestroysTheOnlyHandle) {
  auto promise = std::make_unique<Promise<int>>();
  int ran = 0;
  promise->AddListener([&](const Future<int>& f) {
    ++ran;
    EXPECT_TRUE(f.IsCancelled());
    promise.reset();
  });
  EXPECT_TRUE(promise->Cancel());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(promise, nullptr);
}

}  // namespace
}  // namespace gyre
