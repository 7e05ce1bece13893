#include "gyre/transport/nio/nio_event_loop.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>
#include <set>
#include <chrono>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/ticker.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

std::unique_ptr<NioEventLoopGroup> MakeGroup(int n) {
  absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> g = NioEventLoopGroup::Create(n);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

TEST(NioEventLoopGroupTest, CreateValidatesThreadCount) {
  EXPECT_EQ(NioEventLoopGroup::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(0);
  unsigned hw = std::thread::hardware_concurrency();
  EXPECT_EQ(g->ExecutorCount(), 2 * static_cast<int>(hw == 0 ? 1 : hw));
}

TEST(NioEventLoopGroupTest, NextIsRoundRobinOverNioLoops) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(2);
  EventLoop* a = g->Next();
  EventLoop* b = g->Next();
  EXPECT_NE(a, b);
  EXPECT_EQ(g->Next(), a);
  EXPECT_EQ(a->parent(), g.get());
  EXPECT_EQ(a->Next(), a);
  EXPECT_NE(dynamic_cast<NioEventLoop*>(a), nullptr);
}

TEST(NioEventLoopTest, IoRatioIsValidated) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  EXPECT_EQ(loop->io_ratio(), NioEventLoop::kDefaultIoRatio);
  EXPECT_EQ(loop->SetIoRatio(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(loop->SetIoRatio(101).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g->SetIoRatio(-5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(loop->io_ratio(), 50);
  EXPECT_TRUE(g->SetIoRatio(100).ok());
  EXPECT_EQ(loop->io_ratio(), 100);
  EXPECT_TRUE(loop->SetIoRatio(1).ok());
  // The loop still runs tasks at any ratio.
  Promise<void> ran(nullptr);
  ASSERT_TRUE(loop->Execute([&] { ran.TrySuccess(); }).ok());
  EXPECT_TRUE(ran.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
}

TEST(NioEventLoopTest, TasksRunOnTheLoopThread) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  EventLoop* loop = g->Next();
  Promise<bool> in_loop(nullptr);
  ASSERT_TRUE(loop->Execute([&] { in_loop.TrySuccess(loop->InEventLoop()); }).ok());
  ASSERT_TRUE(in_loop.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_TRUE(*in_loop.GetNow());
  EXPECT_FALSE(loop->InEventLoop());
}

TEST(NioEventLoopTest, ScheduledTaskWakesTheBlockedLoopOnTime) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  EventLoop* loop = g->Next();
  // The loop's timers run on the monotonic clock; so does this measurement.
  const auto start = std::chrono::steady_clock::now();
  auto f = loop->Schedule([] { return std::chrono::steady_clock::now(); },
                          absl::Milliseconds(50));
  ASSERT_TRUE(f.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  ASSERT_TRUE(f.IsSuccess()) << f.Cause();
  EXPECT_GE(absl::FromChrono(*f.GetNow() - start), absl::Milliseconds(50));
}

TEST(NioEventLoopTest, BusyLoopIsNotWokenPerTask) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  Promise<void> started(nullptr);
  Promise<void> release(nullptr);
  ASSERT_TRUE(loop->Execute([&] {
                    started.TrySuccess();
                    (void)release.Await();  // holds the loop busy, outside epoll_wait
                  })
                  .ok());
  ASSERT_TRUE(started.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  const int64_t before = loop->WakeupWritesForTesting();
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(loop->Execute([&] { ran.fetch_add(1, std::memory_order_relaxed); }).ok());
  }
  EXPECT_EQ(loop->WakeupWritesForTesting(), before);
  release.TrySuccess();
  Promise<void> done(nullptr);
  ASSERT_TRUE(loop->Execute([&] { done.TrySuccess(); }).ok());
  ASSERT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_EQ(ran.load(), 1000);
}

TEST(NioEventLoopTest, IdleLoopIsWokenByATask) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  for (int i = 0; i < 50; ++i) {
    Promise<void> done(nullptr);
    ASSERT_TRUE(loop->Execute([&] { done.TrySuccess(); }).ok());
    ASSERT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(10)))) << "iteration " << i;
  }
  EXPECT_GT(loop->SelectCountForTesting(), 0);
}

TEST(NioEventLoopTest, RebuildSelectorSucceeds) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(2);
  Future<void> f = g->RebuildSelectors();
  ASSERT_TRUE(f.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_TRUE(f.IsSuccess()) << f.Cause();
  Promise<void> done(nullptr);
  ASSERT_TRUE(g->Next()->Execute([&] { done.TrySuccess(); }).ok());
  EXPECT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
}

TEST(NioEventLoopTest, ShutdownTerminates) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(2);
  ASSERT_TRUE(g->Next()->Execute([] {}).ok());
  Future<void> t = g->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5));
  ASSERT_TRUE(t.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_TRUE(g->IsTerminated());
}

std::set<int> OpenFds() {
  std::set<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') fds.insert(atoi(e->d_name));
  }
  fds.erase(dirfd(dir));
  closedir(dir);
  return fds;
}

// A monotonic ticker that notes the fds opened since `baseline` when an executor starts
// observing it (the loop's epoll fd and eventfd), and checks they are all still open
// when the executor stops observing it.
class FdCheckingTicker : public Ticker {
 public:
  explicit FdCheckingTicker(std::set<int> baseline) : baseline_(std::move(baseline)) {}
  int64_t Nanos() const override { return Ticker::System()->Nanos(); }
  void AddObserver(Observer* observer) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : OpenFds()) {
      if (baseline_.count(fd) == 0) loop_fds_.insert(fd);
    }
  }
  void RemoveObserver(Observer* observer) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++removals_;
    for (int fd : loop_fds_) {
      if (fcntl(fd, F_GETFD) == -1) ++closed_at_removal_;
    }
  }
  int loop_fd_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(loop_fds_.size());
  }
  int removals() {
    std::lock_guard<std::mutex> lock(mu_);
    return removals_;
  }
  int closed_at_removal() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_at_removal_;
  }

 private:
  std::mutex mu_;
  const std::set<int> baseline_;
  std::set<int> loop_fds_;
  int removals_ = 0;
  int closed_at_removal_ = 0;
};

// Issue 16 item 8: a loop stops observing its ticker before it closes its fds, so a
// concurrent Advance can never write to a closed (or reused) eventfd.
TEST(NioEventLoopTest, StopsObservingTheTickerBeforeClosingItsFds) {
  FdCheckingTicker ticker(OpenFds());
  {
    GroupOptions options;
    options.ticker = &ticker;
    absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> g =
        NioEventLoopGroup::Create(1, std::move(options));
    ASSERT_TRUE(g.ok()) << g.status();
    auto f = (*g)->Next()->Submit([] { return 1; });
    ASSERT_TRUE(f.AwaitFor(gyre::testing::Scaled(absl::Seconds(30))));
  }
  EXPECT_GE(ticker.loop_fd_count(), 2);
  EXPECT_GE(ticker.removals(), 1);
  EXPECT_EQ(ticker.closed_at_removal(), 0);
}

}  // namespace
}  // namespace gyre
