#include "gyre/transport/nio/nio_event_loop.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/internal/log.h"
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

// B04: LazyExecute queues without waking a sleeping loop; the task runs, in order, when
// the loop next wakes for another reason.
TEST(NioEventLoopTest, LazyTaskDoesNotWakeASleepingLoopB04) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  // The epoll_wait count as of a task on the loop: the loop's next wait comes after it,
  // and the count moves only once the loop has announced that it sleeps.
  Promise<int64_t> selects(nullptr);
  ASSERT_TRUE(loop->Execute([&] { selects.TrySuccess(loop->SelectCountForTesting()); }).ok());
  ASSERT_TRUE(selects.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  const int64_t before = *selects.GetNow();
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoNanoseconds(gyre::testing::Scaled(absl::Seconds(30)));
  while (loop->SelectCountForTesting() == before) {  // a hang detector bounds it
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::yield();
  }
  const int64_t wakeups = loop->WakeupWritesForTesting();
  std::mutex mu;
  std::vector<int> order;
  ASSERT_TRUE(loop->LazyExecute([&] {
                    std::lock_guard<std::mutex> lock(mu);
                    order.push_back(1);
                  })
                  .ok());
  EXPECT_EQ(loop->WakeupWritesForTesting(), wakeups);  // no eventfd write for it
  Promise<void> done(nullptr);
  ASSERT_TRUE(loop->Execute([&] {
                    {
                      std::lock_guard<std::mutex> lock(mu);
                      order.push_back(2);
                    }
                    done.TrySuccess();
                  })
                  .ok());
  ASSERT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_EQ(loop->WakeupWritesForTesting(), wakeups + 1);  // the ordinary task woke it
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
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

// The epoll fds among `fds`.
std::set<int> EpollFds(const std::set<int>& fds) {
  std::set<int> out;
  for (int fd : fds) {
    char target[64] = {};
    const std::string link = absl::StrCat("/proc/self/fd/", fd);
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == "anon_inode:[eventpoll]") {
      out.insert(fd);
    }
  }
  return out;
}

// Counts the log lines containing `word` while alive.
class LogWatch {
 public:
  explicit LogWatch(std::string word) : word_(std::move(word)) {
    internal::SetLogSinkForTesting(
        [this](internal::LogSeverity, const char*, int, const std::string& message) {
          if (message.find(word_) != std::string::npos) hits_.fetch_add(1);
        });
  }
  ~LogWatch() { internal::SetLogSinkForTesting(nullptr); }
  int hits() const { return hits_.load(); }

 private:
  const std::string word_;
  std::atomic<int> hits_{0};
};

// Records the events a raw fd's handler saw, on the loop thread.
class RecordingIoHandler final : public NioIoHandler {
 public:
  void OnIoEvent(uint32_t events) override {
    seen.fetch_or(events);
    if ((events & EPOLLIN) != 0) readable.TrySuccess();
  }
  std::atomic<uint32_t> seen{0};
  Promise<void> readable{nullptr};
};

// B31: a raw fd registered with SetInterest reports its readiness to its handler on the
// loop thread (the analogue of registering a foreign SelectableChannel).
TEST(NioEventLoopTest, RawFdInterestIsReportedOnTheLoopB31) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC), 0);
  RecordingIoHandler handler;
  std::atomic<bool> on_loop{false};
  Future<bool> added =
      loop->Submit([&] { return loop->SetInterest(pipe_fds[0], EPOLLIN, &handler).ok(); });
  ASSERT_TRUE(added.Sync().ok());
  ASSERT_TRUE(*added.Sync());
  const char byte = 'x';
  ASSERT_EQ(write(pipe_fds[1], &byte, 1), 1);
  ASSERT_TRUE(handler.readable.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  EXPECT_NE(handler.seen.load() & EPOLLIN, 0u);
  ASSERT_TRUE(loop->Submit([&] {
                    on_loop = loop->InEventLoop();
                    loop->RemoveFd(pipe_fds[0]);
                  })
                  .Await()
                  .ok());
  EXPECT_TRUE(on_loop.load());
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

// B28: a rebuild replaces each loop's epoll set and closes the old one (no fd leaked),
// and the loops keep running tasks.
TEST(NioEventLoopTest, RebuildSelectorsClosesTheOldEpollSetsB28) {
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(2);
  for (NioEventLoop* loop : g->loops()) ASSERT_TRUE(loop->Submit([] {}).Await().ok());
  const size_t before = EpollFds(OpenFds()).size();
  for (int i = 0; i < 3; ++i) {
    Future<void> f = g->RebuildSelectors();
    ASSERT_TRUE(f.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
    ASSERT_TRUE(f.IsSuccess()) << f.Cause();
  }
  EXPECT_EQ(EpollFds(OpenFds()).size(), before);
  for (NioEventLoop* loop : g->loops()) EXPECT_TRUE(loop->Submit([] {}).Await().ok());
}

// B33: an epoll fd closed under the loop (by a bug elsewhere in the process) makes every
// epoll_wait fail. The loop rebuilds its selector once, keeps every registration, logs
// once, and sleeps again instead of spinning and logging on every turn.
TEST(NioEventLoopTest, LostEpollFdIsRebuiltWithItsRegistrationsB33) {
  const std::set<int> before = OpenFds();
  std::unique_ptr<NioEventLoopGroup> g = MakeGroup(1);
  NioEventLoop* loop = g->loops()[0];
  ASSERT_TRUE(loop->Submit([] {}).Await().ok());
  std::set<int> fresh;
  for (int fd : OpenFds()) {
    if (before.count(fd) == 0) fresh.insert(fd);
  }
  const std::set<int> epoll_fds = EpollFds(fresh);
  ASSERT_EQ(epoll_fds.size(), 1u);
  const int epoll_fd = *epoll_fds.begin();

  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC), 0);
  RecordingIoHandler handler;
  Future<bool> added =
      loop->Submit([&] { return loop->SetInterest(pipe_fds[0], EPOLLIN, &handler).ok(); });
  ASSERT_TRUE(added.Sync().ok());
  ASSERT_TRUE(*added.Sync());
  LogWatch rebuilt("the selector was rebuilt");
  // Closed on the loop thread itself, between two waits.
  ASSERT_TRUE(loop->Submit([epoll_fd] { close(epoll_fd); }).Await().ok());
  // Twenty wake-ups: each would be a failing turn (and a log line) for a loop that only
  // logs, and they pass through the rebuilt set here.
  for (int i = 0; i < 20; ++i) {
    Promise<void> done(nullptr);
    ASSERT_TRUE(loop->Execute([&] { done.TrySuccess(); }).ok());
    ASSERT_TRUE(done.AwaitFor(gyre::testing::Scaled(absl::Seconds(10)))) << i;
  }
  EXPECT_EQ(rebuilt.hits(), 1);
  // The raw fd registered before the loss is still watched.
  const char byte = 'x';
  ASSERT_EQ(write(pipe_fds[1], &byte, 1), 1);
  ASSERT_TRUE(handler.readable.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
  ASSERT_TRUE(loop->Submit([&] { loop->RemoveFd(pipe_fds[0]); }).Await().ok());
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  // No epoll fd leaked: the lost one is gone and one new one replaced it.
  std::set<int> now;
  for (int fd : OpenFds()) {
    if (before.count(fd) == 0) now.insert(fd);
  }
  EXPECT_EQ(EpollFds(now).size(), 1u);
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
