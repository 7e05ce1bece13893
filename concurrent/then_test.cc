// Then continuations (beyond Netty).
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/future.h"
#include "gyre/testing/test_executor.h"
#include "gyre/concurrent/promise.h"

namespace gyre {
namespace {

using ::gyre::testing::TestExecutor;

TEST(ThenTest, MapsValue) {
  Promise<int> p;
  Future<std::string> s = p.Then([](const int& v) { return std::to_string(v * 2); });
  EXPECT_FALSE(s.IsDone());
  p.TrySuccess(21);
  ASSERT_TRUE(s.IsSuccess());
  EXPECT_EQ(*s.GetNow(), "42");
}

TEST(ThenTest, StatusOrResult) {
  Promise<int> p;
  Future<int> ok = p.Then([](const int& v) -> absl::StatusOr<int> { return v + 1; });
  Future<int> bad = p.Then([](const int&) -> absl::StatusOr<int> {
    return absl::OutOfRangeError("too big");
  });
  p.TrySuccess(1);
  EXPECT_EQ(*ok.GetNow(), 2);
  EXPECT_EQ(bad.Cause(), absl::OutOfRangeError("too big"));
}

TEST(ThenTest, StatusResultGivesVoidFuture) {
  Promise<int> p;
  Future<void> ok = p.Then([](const int&) { return absl::OkStatus(); });
  Future<void> bad = p.Then([](const int&) { return absl::AbortedError("no"); });
  p.TrySuccess(1);
  EXPECT_TRUE(ok.IsSuccess());
  EXPECT_EQ(bad.Cause().code(), absl::StatusCode::kAborted);
}

TEST(ThenTest, VoidUpstreamAndVoidContinuation) {
  Promise<void> p;
  int ran = 0;
  Future<void> after = p.Then([&] { ++ran; });
  Future<int> value = p.Then([] { return 5; });
  p.TrySuccess();
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(after.IsSuccess());
  EXPECT_EQ(*value.GetNow(), 5);
}

TEST(ThenTest, FutureResultIsFlattened) {
  Promise<int> p;
  Promise<std::string> inner;
  Future<std::string> out = p.Then([inner](const int&) { return Future<std::string>(inner); });
  p.TrySuccess(1);
  EXPECT_FALSE(out.IsDone());
  inner.TrySuccess("inner");
  EXPECT_EQ(*out.GetNow(), "inner");

  Promise<int> q;
  Promise<int> failing;
  Future<int> out2 = q.Then([failing](const int&) { return Future<int>(failing); });
  q.TrySuccess(1);
  failing.TryFailure(absl::NotFoundError("nf"));
  EXPECT_EQ(out2.Cause(), absl::NotFoundError("nf"));
}

TEST(ThenTest, FailureAndCancellationPropagateWithoutCalling) {
  int calls = 0;
  Promise<int> failed;
  Future<int> f1 = failed.Then([&](const int& v) { ++calls; return v; });
  failed.TryFailure(absl::DataLossError("x"));
  EXPECT_EQ(f1.Cause(), absl::DataLossError("x"));

  Promise<int> cancelled;
  Future<int> f2 = cancelled.Then([&](const int& v) { ++calls; return v; });
  cancelled.Cancel();
  EXPECT_TRUE(f2.IsCancelled());
  EXPECT_EQ(calls, 0);
}

TEST(ThenTest, CancelledDownstreamDoesNotRun) {
  int calls = 0;
  Promise<int> p;
  Future<int> next = p.Then([&](const int& v) { ++calls; return v; });
  EXPECT_TRUE(next.Cancel());
  p.TrySuccess(1);
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(next.IsCancelled());
}

TEST(ThenTest, ThrowingContinuationFailsWithInternal) {
  Promise<int> p;
  Future<int> next = p.Then([](const int&) -> int { throw std::runtime_error("bad math"); });
  p.TrySuccess(1);
  EXPECT_EQ(next.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(next.Cause().message(), "bad math");
}

TEST(ThenTest, MoveOnlyCaptureAndChain) {
  Promise<int> p;
  auto bonus = std::make_unique<int>(100);
  Future<int> f = p.Then([b = std::move(bonus)](const int& v) { return v + *b; })
                      .Then([](const int& v) { return v * 2; });
  p.TrySuccess(1);
  EXPECT_EQ(*f.GetNow(), 202);
}

TEST(ThenTest, RunsOnTheExecutor) {
  TestExecutor executor;
  Promise<int> p(&executor);
  Future<std::thread::id> where = p.Then([](const int&) { return std::this_thread::get_id(); });
  EXPECT_EQ(where.executor(), &executor);
  p.TrySuccess(1);
  absl::StatusOr<std::thread::id> id = where.Sync();
  ASSERT_TRUE(id.ok());
  std::thread::id loop;
  executor.RunAndWait([&] { loop = std::this_thread::get_id(); });
  EXPECT_EQ(*id, loop);
}

}  // namespace
}  // namespace gyre
