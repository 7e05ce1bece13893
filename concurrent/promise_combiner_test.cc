#include "gyre/concurrent/promise_combiner.h"

#include <thread>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "gyre/testing/test_executor.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using ::gyre::testing::TestExecutor;

class PromiseCombinerTest : public ::testing::Test {
 protected:
  // On the executor: combines `a` alone into `aggregate`, then runs `then()` there.
  template <typename F>
  void CombineOne(Promise<int>& a, Promise<void>& aggregate, F then) {
    executor_.RunAndWait([&] {
      PromiseCombiner combiner(&executor_);
      ASSERT_TRUE(combiner.Add(a).ok());
      ASSERT_TRUE(combiner.Finish(aggregate).ok());
      then();
    });
  }

  TestExecutor executor_;
};

TEST_F(PromiseCombinerTest, NothingAddedCompletesAtFinishB59) {
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    Promise<void> aggregate(&executor_);
    ASSERT_TRUE(combiner.Finish(aggregate).ok());
    EXPECT_TRUE(aggregate.IsSuccess());
  });
}

TEST_F(PromiseCombinerTest, WaitsForTheLastFutureB62) {
  Promise<int> a(&executor_);
  Promise<std::string> b(&executor_);
  Promise<void> c(&executor_);
  Promise<void> aggregate(&executor_);
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    ASSERT_TRUE(combiner.Add(a).ok());
    ASSERT_TRUE(combiner.AddAll(b, c).ok());
    c.TrySuccess();  // completed before Finish: counts
    ASSERT_TRUE(combiner.Finish(aggregate).ok());
    EXPECT_FALSE(aggregate.IsDone());
    a.TrySuccess(1);
    EXPECT_FALSE(aggregate.IsDone());
  });
  b.TrySuccess("last");  // from another thread: hops to the executor
  ASSERT_TRUE(aggregate.Await().ok());
  EXPECT_TRUE(aggregate.IsSuccess());
}

TEST_F(PromiseCombinerTest, AllDoneBeforeFinishCompletesAtFinishB62) {
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    combiner.Add(MakeSucceededFuture<int>(&executor_, 1)).IgnoreError();
    combiner.Add(MakeSucceededFuture(&executor_)).IgnoreError();
    Promise<void> aggregate(&executor_);
    ASSERT_TRUE(combiner.Finish(aggregate).ok());
    EXPECT_TRUE(aggregate.IsSuccess());
  });
}

TEST_F(PromiseCombinerTest, FirstFailureWinsB63) {
  Promise<int> a(&executor_), b(&executor_), c(&executor_);
  Promise<void> aggregate(&executor_);
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    ASSERT_TRUE(combiner.AddAll(a, b, c).ok());
    ASSERT_TRUE(combiner.Finish(aggregate).ok());
    b.TryFailure(absl::UnavailableError("first"));
    a.TryFailure(absl::InternalError("second"));
    EXPECT_FALSE(aggregate.IsDone());
    c.TrySuccess(3);
    EXPECT_EQ(aggregate.Cause(), absl::UnavailableError("first"));
  });
}

TEST_F(PromiseCombinerTest, CancelledCountsAsFailure) {
  Promise<int> a(&executor_);
  Promise<void> aggregate(&executor_);
  CombineOne(a, aggregate, [&] {
    a.Cancel();
    EXPECT_EQ(aggregate.Cause().code(), absl::StatusCode::kCancelled);
  });
}

TEST_F(PromiseCombinerTest, AlreadyCompletedAggregateIsFine) {
  Promise<int> a(&executor_);
  Promise<void> aggregate(&executor_);
  CombineOne(a, aggregate, [&] {
    aggregate.TryFailure(absl::AbortedError("user"));
    a.TrySuccess(1);  // TrySuccess on a done aggregate: no error
    EXPECT_EQ(aggregate.Cause().code(), absl::StatusCode::kAborted);
  });
}

TEST_F(PromiseCombinerTest, MisuseIsReportedB61) {
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    ASSERT_TRUE(combiner.Finish(Promise<void>(&executor_)).ok());
    EXPECT_EQ(combiner.Add(MakeSucceededFuture(&executor_)).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(combiner.AddAll(MakeSucceededFuture(&executor_)).code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(combiner.Finish(Promise<void>(&executor_)).code(),
              absl::StatusCode::kFailedPrecondition);
  });
}

TEST_F(PromiseCombinerTest, EmptyFutureIsInvalidB60) {
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    EXPECT_EQ(combiner.Add(Future<int>()).code(), absl::StatusCode::kInvalidArgument);
  });
}

TEST_F(PromiseCombinerTest, EmptyAggregateIsInvalidAndLeavesTheCombinerUsableB58) {
  executor_.RunAndWait([&] {
    PromiseCombiner combiner(&executor_);
    Promise<int> a(&executor_);
    ASSERT_TRUE(combiner.Add(a).ok());
    Promise<void> moved_from(&executor_);
    Promise<void> taken = std::move(moved_from);
    EXPECT_EQ(combiner.Finish(std::move(moved_from)).code(),  // NOLINT(bugprone-use-after-move)
              absl::StatusCode::kInvalidArgument);
    Promise<void> aggregate(&executor_);
    ASSERT_TRUE(combiner.Finish(aggregate).ok());
    EXPECT_FALSE(aggregate.IsDone());
    a.TrySuccess(1);
    EXPECT_TRUE(aggregate.IsSuccess());
  });
}

TEST_F(PromiseCombinerTest, OffExecutorIsFailedPreconditionB64) {
  PromiseCombiner combiner(&executor_);  // constructed anywhere; used on the loop only
  EXPECT_EQ(combiner.Add(MakeSucceededFuture(&executor_)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(combiner.Finish(Promise<void>(&executor_)).code(),
            absl::StatusCode::kFailedPrecondition);
  // Still usable on the loop afterwards.
  executor_.RunAndWait([&] {
    Promise<void> aggregate(&executor_);
    EXPECT_TRUE(combiner.Finish(aggregate).ok());
    EXPECT_TRUE(aggregate.IsSuccess());
  });
}

TEST_F(PromiseCombinerTest, OutlivedByItsFutures) {
  Promise<int> a(&executor_);
  Promise<void> aggregate(&executor_);
  CombineOne(a, aggregate, [] {});  // the combiner is gone when it returns
  a.TrySuccess(1);
  ASSERT_TRUE(aggregate.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  EXPECT_TRUE(aggregate.IsSuccess());
}

}  // namespace
}  // namespace gyre
