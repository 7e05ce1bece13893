#include "gyre/concurrent/progressive_promise.h"

#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/testing/test_executor.h"

namespace gyre {
namespace {

using ::gyre::testing::TestExecutor;
using Report = std::tuple<int64_t, int64_t>;
using ::testing::ElementsAre;

TEST(ProgressivePromiseTest, IsAPromise) {
  ProgressivePromise<int> p;
  Promise<int>& as_promise = p;
  EXPECT_TRUE(as_promise.TrySuccess(2));
  EXPECT_EQ(*p.GetNow(), 2);
}

TEST(ProgressivePromiseTest, ValidatesProgressB57) {
  ProgressivePromise<void> p;
  EXPECT_TRUE(p.SetProgress(0, 10).ok());
  EXPECT_TRUE(p.SetProgress(10, 10).ok());
  EXPECT_TRUE(p.SetProgress(5, -1).ok());     // unknown total
  EXPECT_TRUE(p.SetProgress(5, -100).ok());   // any negative total is unknown
  EXPECT_EQ(p.SetProgress(11, 10).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.SetProgress(-1, 10).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.SetProgress(-1, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(p.TryProgress(11, 10));
  EXPECT_TRUE(p.TryProgress(1, 2));
  p.TrySuccess();
  EXPECT_EQ(p.SetProgress(1, 2).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(p.TryProgress(1, 2));
}

TEST(ProgressivePromiseTest, ListenersGetEveryReportInOrder) {
  ProgressivePromise<int> p;
  std::vector<Report> first, second;
  p.AddProgressListener([&](const Future<int>& f, int64_t done, int64_t total) {
    EXPECT_FALSE(f.IsDone());
    first.emplace_back(done, total);
  });
  p.AddProgressListener([&](const Future<int>&, int64_t done, int64_t total) {
    second.emplace_back(done, total);
  });
  p.SetProgress(1, 3).IgnoreError();
  p.SetProgress(2, -7).IgnoreError();
  p.SetProgress(4, 3).IgnoreError();  // rejected: nobody notified
  EXPECT_THAT(first, ElementsAre(Report(1, 3), Report(2, -1)));
  EXPECT_EQ(first, second);
}

TEST(ProgressivePromiseTest, ListenersRunOnExecutorB57) {
  TestExecutor executor;
  ProgressivePromise<int> p = executor.NewProgressivePromise<int>();
  Promise<std::thread::id> where;
  p.AddProgressListener([where](const Future<int>&, int64_t, int64_t) mutable {
    where.TrySuccess(std::this_thread::get_id());
  });
  ASSERT_TRUE(p.SetProgress(1, 2).ok());  // from the test thread
  ASSERT_TRUE(where.Await().ok());
  std::thread::id loop;
  executor.RunAndWait([&] { loop = std::this_thread::get_id(); });
  EXPECT_EQ(*where.GetNow(), loop);
  // On the loop: inline.
  int inline_calls = 0;
  executor.RunAndWait([&] {
    p.AddProgressListener([&](const Future<int>&, int64_t, int64_t) { ++inline_calls; });
    p.SetProgress(2, 2).IgnoreError();
    EXPECT_EQ(inline_calls, 1);
  });
}

TEST(ProgressivePromiseTest, ThrowingProgressListenerDoesNotStopOthers) {
  ProgressivePromise<int> p;
  int ran = 0;
  p.AddProgressListener([](const Future<int>&, int64_t, int64_t) { throw std::runtime_error("x"); });
  p.AddProgressListener([&](const Future<int>&, int64_t, int64_t) { ++ran; });
  EXPECT_TRUE(p.SetProgress(1, 1).ok());
  EXPECT_EQ(ran, 1);
}

TEST(ProgressivePromiseTest, CompletionListenersStillWork) {
  ProgressivePromise<int> p;
  int completed = 0;
  p.AddListener([&](const Future<int>& f) { completed = *f.GetNow(); });
  p.TrySuccess(9);
  EXPECT_EQ(completed, 9);
}

}  // namespace
}  // namespace gyre
