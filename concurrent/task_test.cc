// C++20 coroutines over gyre futures (beyond Netty).
#include "gyre/concurrent/task.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "gyre/testing/test_executor.h"

namespace gyre {
namespace {

using ::gyre::testing::TestExecutor;

Task<int> AddBoth(Future<int> a, Future<int> b) {
  absl::StatusOr<int> x = co_await a;
  if (!x.ok()) co_return x.status();
  absl::StatusOr<int> y = co_await b;
  if (!y.ok()) co_return y.status();
  co_return *x + *y;
}

TEST(TaskTest, AwaitsPendingFutures) {
  Promise<int> a, b;
  Future<int> sum = AddBoth(a, b);
  EXPECT_FALSE(sum.IsDone());
  a.TrySuccess(2);
  EXPECT_FALSE(sum.IsDone());
  b.TrySuccess(40);
  ASSERT_TRUE(sum.IsSuccess());
  EXPECT_EQ(*sum.GetNow(), 42);
}

TEST(TaskTest, AlreadyDoneFuturesDoNotSuspend) {
  Future<int> sum = AddBoth(MakeSucceededFuture<int>(nullptr, 1), MakeSucceededFuture<int>(nullptr, 2));
  EXPECT_EQ(*sum.GetNow(), 3);
}

TEST(TaskTest, FailurePropagatesAsStatus) {
  Promise<int> a, b;
  Future<int> sum = AddBoth(a, b);
  a.TryFailure(absl::UnavailableError("a down"));
  EXPECT_EQ(sum.Cause(), absl::UnavailableError("a down"));
  Promise<int> c, d;
  Future<int> sum2 = AddBoth(c, d);
  c.Cancel();
  EXPECT_EQ(sum2.Cause().code(), absl::StatusCode::kCancelled);
}

Task<void> Throws() {
  absl::Status ready = co_await MakeSucceededFuture(nullptr);
  if (!ready.ok()) co_return ready;
  throw std::runtime_error("coroutine boom");
}

TEST(TaskTest, ExceptionFailsWithInternal) {
  Future<void> f = Throws();
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(f.Cause().message(), "coroutine boom");
}

Task<std::thread::id> WhereResumed(Future<void> gate) {
  absl::Status s = co_await gate;
  if (!s.ok()) co_return s;
  co_return std::this_thread::get_id();
}

TEST(TaskTest, ResumesOnTheAwaitedFuturesExecutor) {
  TestExecutor executor;
  Promise<void> gate(&executor);
  Future<std::thread::id> where = WhereResumed(gate);
  gate.TrySuccess();  // from the test thread
  absl::StatusOr<std::thread::id> id = where.Sync();
  ASSERT_TRUE(id.ok());
  std::thread::id loop;
  executor.RunAndWait([&] { loop = std::this_thread::get_id(); });
  EXPECT_EQ(*id, loop);
}

Task<int> Nested(Future<int> a, Future<int> b) {
  absl::StatusOr<int> inner = co_await AddBoth(a, b);
  if (!inner.ok()) co_return inner.status();
  co_return *inner * 10;
}

TEST(TaskTest, AwaitsOtherTasks) {
  Promise<int> a, b;
  Future<int> f = Nested(a, b);
  a.TrySuccess(1);
  b.TrySuccess(2);
  EXPECT_EQ(*f.GetNow(), 30);
}

Task<void> VoidTask(Future<std::unique_ptr<int>> in, int* out) {
  absl::StatusOr<std::unique_ptr<int>> v = co_await in;
  if (!v.ok()) co_return v.status();
  *out = **v;
  co_return absl::OkStatus();
}

TEST(TaskTest, VoidTaskAndMoveOnlyValue) {
  Promise<std::unique_ptr<int>> p;
  int out = 0;
  Future<void> f = VoidTask(p, &out);
  p.TrySuccess(std::make_unique<int>(7));
  EXPECT_TRUE(f.IsSuccess());
  EXPECT_EQ(out, 7);
}

Task<int> AwaitForever(Future<int> never, std::shared_ptr<int> token) {
  absl::StatusOr<int> v = co_await std::move(never);  // the frame keeps no handle
  co_return v.ok() ? *v : -1;
}

TEST(TaskTest, AbandonedFutureFreesTheSuspendedFrame) {
  auto token = std::make_shared<int>(0);
  Future<int> result;
  {
    Promise<int> never;
    result = AwaitForever(never, token);
    EXPECT_EQ(token.use_count(), 2);  // the frame holds a copy
  }  // the only handle to `never` is gone: its listener, and the frame, are destroyed
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_FALSE(result.IsDone());
}

}  // namespace
}  // namespace gyre
