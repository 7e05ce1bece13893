#include "gyre/concurrent/multithread_event_executor_group.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/executor_group_registry.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/concurrent/internal/status_macros.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using test::CountingThreadFactory;
using test::Latch;

// B114: n_threads <= 0 is a status, not a crash.
TEST(MultithreadEventExecutorGroupTest, RejectsNonPositiveThreadCounts) {
  EXPECT_EQ(DefaultEventExecutorGroup::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DefaultEventExecutorGroup::Create(-3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A group whose child `fail_at` cannot be created.
class FailingGroup final : public MultithreadEventExecutorGroup {
 public:
  static absl::StatusOr<std::unique_ptr<FailingGroup>> Create(
      int n, int fail_at, std::vector<Future<void>>* made, std::vector<bool>* started) {
    GroupOptions o;
    std::unique_ptr<FailingGroup> g(new FailingGroup(std::move(o), fail_at, made, started));
    GYRE_RETURN_IF_ERROR(g->Init(n));
    return g;
  }

 protected:
  absl::StatusOr<std::unique_ptr<EventExecutor>> NewChild(int index) override {
    if (index == fail_at_) return absl::ResourceExhaustedError("no child for you");
    ExecutorOptions o;
    o.thread_factory = thread_factory();
    auto child = std::make_unique<DefaultEventExecutor>(this, std::move(o));
    if (index == 0) child->Execute([] {}).IgnoreError();  // one started child
    made_->push_back(child->TerminationFuture());
    started_->push_back(child->state() != ExecutorState::kNotStarted);
    return std::unique_ptr<EventExecutor>(std::move(child));
  }

 private:
  FailingGroup(GroupOptions o, int fail_at, std::vector<Future<void>>* made,
               std::vector<bool>* started)
      : MultithreadEventExecutorGroup(std::move(o)), fail_at_(fail_at), made_(made),
        started_(started) {}
  const int fail_at_;
  std::vector<Future<void>>* made_;
  std::vector<bool>* started_;
};

// B114: children 0..i-1 are shut down and joined, and the error is returned.
TEST(MultithreadEventExecutorGroupTest, ChildCreationFailureCleansUp) {
  std::vector<Future<void>> made;
  std::vector<bool> started;
  auto group = FailingGroup::Create(4, 2, &made, &started);
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(group.status().message().find("no child for you"), std::string::npos);
  ASSERT_EQ(made.size(), 2u);
  EXPECT_TRUE(started[0]);
  for (auto& f : made) {
    EXPECT_TRUE(f.IsDone());
    EXPECT_TRUE(f.IsSuccess());
  }
}

// B116 through the group: Next() walks the children in order.
TEST(MultithreadEventExecutorGroupTest, NextIsRoundRobin) {
  for (int n : {3, 4}) {
    auto group = DefaultEventExecutorGroup::Create(n);
    ASSERT_TRUE(group.ok());
    std::vector<EventExecutor*> children = (*group)->executors();
    ASSERT_EQ(static_cast<int>(children.size()), n);
    EXPECT_EQ((*group)->ExecutorCount(), n);
    for (int i = 0; i < 3 * n; ++i) EXPECT_EQ((*group)->Next(), children[i % n]);
    for (EventExecutor* c : children) EXPECT_EQ(c->parent(), group->get());
  }
}

// §2.1: shutting down a group that never ran starts no thread.
TEST(MultithreadEventExecutorGroupTest, ShutdownOfUnstartedGroupStartsNoThread) {
  auto factory = std::make_shared<CountingThreadFactory>();
  GroupOptions o;
  o.thread_factory = factory;
  auto group = DefaultEventExecutorGroup::Create(8, o);
  ASSERT_TRUE(group.ok());
  Future<void> done = (*group)->ShutdownGracefully();
  EXPECT_TRUE(done.IsDone());
  EXPECT_TRUE((*group)->IsTerminated());
  EXPECT_EQ(factory->created.load(), 0);
}

// B115: the group terminates when its last child does; predicates need every child.
TEST(MultithreadEventExecutorGroupTest, TerminationWaitsForTheLastChild) {
  auto group = DefaultEventExecutorGroup::Create(3);
  ASSERT_TRUE(group.ok());
  std::vector<EventExecutor*> children = (*group)->executors();
  Latch release, started;
  ASSERT_TRUE(children[2]->Execute([&] {
    started.Open();
    release.Wait();
  }).ok());
  ASSERT_TRUE(started.Wait());
  ASSERT_TRUE(children[0]->Submit([] {}).Await().ok());
  Future<void> done = (*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Hours(1));
  EXPECT_TRUE((*group)->IsShuttingDown());
  ASSERT_TRUE(children[0]->TerminationFuture().Await().ok());
  ASSERT_TRUE(children[1]->TerminationFuture().Await().ok());
  EXPECT_FALSE(done.IsDone());
  EXPECT_FALSE((*group)->IsTerminated());
  EXPECT_FALSE((*group)->AwaitTermination(absl::Milliseconds(20)));  // one shared deadline
  release.Open();
  ASSERT_TRUE(done.Await().ok());
  EXPECT_TRUE((*group)->IsTerminated());
  EXPECT_TRUE((*group)->AwaitTermination(absl::ZeroDuration()));
}

TEST(MultithreadEventExecutorGroupTest, InvalidShutdownArgumentsFail) {
  auto group = DefaultEventExecutorGroup::Create(2);
  ASSERT_TRUE(group.ok());
  Future<void> f = (*group)->ShutdownGracefully(absl::Seconds(3), absl::Seconds(1));
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE((*group)->IsShuttingDown());
}

TEST(MultithreadEventExecutorGroupTest, SubmitAndScheduleGoThroughNext) {
  auto group = DefaultEventExecutorGroup::Create(2);
  ASSERT_TRUE(group.ok());
  auto f = (*group)->Submit([] { return 3; });
  auto s = (*group)->Schedule([] { return 4; }, absl::ZeroDuration());
  ASSERT_TRUE(f.Sync().ok());
  ASSERT_TRUE(s.Sync().ok());
  EXPECT_EQ(*f.Sync() + *s.Sync(), 7);
}

TEST(MultithreadEventExecutorGroupTest, NamedGroupsAreRegisteredWhileAlive) {
  GroupOptions o;
  o.name = "registry-test";
  {
    auto group = DefaultEventExecutorGroup::Create(2, o);
    ASSERT_TRUE(group.ok());
    ASSERT_TRUE((*group)->Submit([] {}).Await().ok());
    std::vector<std::string> names = ExecutorGroupRegistry::Global().Names();
    EXPECT_NE(std::find(names.begin(), names.end(), "registry-test"), names.end());
    bool found = false;
    for (const GroupSnapshot& s : ExecutorGroupRegistry::Global().Snapshots()) {
      if (s.name != "registry-test") continue;
      found = true;
      EXPECT_EQ(s.executors.size(), 2u);
      EXPECT_EQ(s.chooser, "PowerOfTwo");
    }
    EXPECT_TRUE(found);
    EXPECT_TRUE(ExecutorGroupRegistry::Global()
                    .ShutdownGracefully("registry-test", absl::ZeroDuration(), absl::Seconds(5))
                    .ok());
    EXPECT_TRUE((*group)->AwaitTermination(absl::Seconds(30)));
  }
  std::vector<std::string> names = ExecutorGroupRegistry::Global().Names();
  EXPECT_EQ(std::find(names.begin(), names.end(), "registry-test"), names.end());
  EXPECT_EQ(ExecutorGroupRegistry::Global()
                .ShutdownGracefully("registry-test", absl::ZeroDuration(), absl::Seconds(5))
                .code(),
            absl::StatusCode::kNotFound);
  // Unnamed groups are not listed.
  auto unnamed = DefaultEventExecutorGroup::Create(1);
  ASSERT_TRUE(unnamed.ok());
  EXPECT_EQ(ExecutorGroupRegistry::Global().Names().size(), 0u);
}

TEST(MultithreadEventExecutorGroupTest, DestroyingAGroupJoinsItsThreads) {
  std::atomic<int> ran{0};
  {
    auto group = DefaultEventExecutorGroup::Create(4);
    ASSERT_TRUE(group.ok());
    for (int i = 0; i < 400; ++i) ASSERT_TRUE((*group)->Execute([&] { ran.fetch_add(1); }).ok());
  }
  EXPECT_EQ(ran.load(), 400);
}

// Create / submit / shutdown cycles of a 4-thread group: no hang, no leak (ASan). 1,000
// cycles in the stress variant, 100 (fewer under a sanitizer) in the default suite.
TEST(MultithreadEventExecutorGroupTest, ManyCreateSubmitShutdownCycles) {
#ifdef GYRE_STRESS
  const int cycles = 1000;
#else
  const int cycles = static_cast<int>(testing::Iterations(100));
#endif
  for (int c = 0; c < cycles; ++c) {
    auto group = DefaultEventExecutorGroup::Create(4);
    ASSERT_TRUE(group.ok());
    std::vector<Future<int>> fs;
    for (int i = 0; i < 4; ++i) fs.push_back((*group)->Submit([i] { return i; }));
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(fs[i].Sync().ok());
      ASSERT_EQ(*fs[i].Sync(), i);
    }
    ASSERT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).Await().ok());
    ASSERT_TRUE((*group)->IsTerminated());
  }
}

}  // namespace
}  // namespace gyre
