// Tests of the event-loop bases: SingleThreadEventLoop's channel bookkeeping and
// graceful shutdown of channels, and MultithreadEventLoopGroup's creation and choice.
#include "gyre/channel/single_thread_event_loop.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/multithread_event_loop_group.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

using ::gyre::testing::Scaled;

// A loop that only runs tasks (no I/O): the smallest SingleThreadEventLoop.
class TaskOnlyLoop final : public SingleThreadEventLoop {
 public:
  TaskOnlyLoop(EventLoopGroup* parent, ExecutorOptions options)
      : SingleThreadEventLoop(parent, std::move(options)) {}
  ~TaskOnlyLoop() override { ShutdownAndJoin(); }

 protected:
  void Run() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    for (;;) {
      WaitForTasks();
      RunAllTasks();
      ReleaseRemovedChannels();
      if (ShutdownConfirmed()) break;
    }
  }
};

// A channel that registers with a SingleThreadEventLoop and, when asked to drain,
// says what the test set; a draining one closes when the test calls FinishDrain().
class FakeChannel final : public Channel {
 public:
  explicit FakeChannel(bool drains) : Channel(nullptr), drains_(drains) {}

  bool IsOpen() const override { return open_.load(); }
  bool IsActive() const override { return open_.load(); }
  SocketAddress local_address() const override { return {}; }
  SocketAddress remote_address() const override { return {}; }
  Unsafe& unsafe() override { return unsafe_; }

  int drain_asks() const { return drain_asks_.load(); }
  SingleThreadEventLoop* loop() const { return loop_; }
  // Loop thread: the drain is over; the channel closes itself.
  void FinishDrain() { unsafe_.Close(ChannelPromise(nullptr)); }

 protected:
  bool BeginShutdownDrain() override {
    drain_asks_.fetch_add(1);
    return drains_;
  }

 private:
  class FakeUnsafe final : public Unsafe {
   public:
    explicit FakeUnsafe(FakeChannel* ch) : ch_(ch) {}
    void Register(EventLoop* loop, ChannelPromise promise) override {
      auto* base = dynamic_cast<SingleThreadEventLoop*>(loop);
      ASSERT_NE(base, nullptr);
      ch_->loop_ = base;
      ch_->set_event_loop(loop);
      absl::Status s = base->Execute([ch = ch_, base, promise]() mutable {
        ch->set_registered(true);
        base->AddChannel(ch->shared_from_this());
        promise.TrySuccess();
      });
      if (!s.ok()) promise.TryFailure(s);
    }
    void Bind(const SocketAddress&, ChannelPromise p) override { p.TrySuccess(); }
    void Connect(const SocketAddress&, const SocketAddress&, ChannelPromise p) override {
      p.TrySuccess();
    }
    void Disconnect(ChannelPromise p) override { Close(std::move(p)); }
    void Close(ChannelPromise promise) override {
      if (ch_->open_.exchange(false)) {
        ch_->CompleteCloseFuture();
        Deregister(ChannelPromise(nullptr));
      }
      promise.TrySuccess();
    }
    void Deregister(ChannelPromise promise) override {
      if (ch_->IsRegistered()) {
        ch_->set_registered(false);
        ch_->loop_->RemoveChannel(ch_);
      }
      promise.TrySuccess();
    }
    void BeginRead() override {}
    void Write(Message, ChannelPromise p) override { p.TrySuccess(); }
    void Flush() override {}

   private:
    FakeChannel* const ch_;
  };

  const bool drains_;
  std::atomic<bool> open_{true};
  std::atomic<int> drain_asks_{0};
  SingleThreadEventLoop* loop_ = nullptr;  // set at registration
  FakeUnsafe unsafe_{this};
};

TEST(SingleThreadEventLoopTest, IsItsOwnNextLoopAndCountsRegisteredChannels) {
  TaskOnlyLoop loop(nullptr, {});
  EXPECT_EQ(loop.Next(), &loop);
  EXPECT_EQ(loop.NextExecutor(), &loop);
  EXPECT_EQ(loop.parent(), nullptr);
  auto a = std::make_shared<FakeChannel>(false);
  auto b = std::make_shared<FakeChannel>(false);
  ASSERT_TRUE(loop.Register(a).AwaitFor(Scaled(absl::Seconds(10))));
  ASSERT_TRUE(loop.Register(b).AwaitFor(Scaled(absl::Seconds(10))));
  EXPECT_EQ(loop.RegisteredChannels(), 2);
  ExecutorSnapshot snap = loop.Snapshot();
  EXPECT_TRUE(snap.event_loop);
  EXPECT_EQ(snap.registered_channels, 2);

  ASSERT_TRUE(a->Close().AwaitFor(Scaled(absl::Seconds(10))));
  // The close ran on the loop; a task queued after it sees the count.
  Future<int> count = loop.Submit([&loop] { return loop.RegisteredChannels(); });
  ASSERT_TRUE(count.AwaitFor(Scaled(absl::Seconds(10))));
  EXPECT_EQ(count.Sync().value(), 1);
}

TEST(SingleThreadEventLoopTest, AChannelRemovedInATaskLivesUntilTheTurnEnds) {
  TaskOnlyLoop loop(nullptr, {});
  std::weak_ptr<FakeChannel> weak;
  {
    auto ch = std::make_shared<FakeChannel>(false);
    weak = ch;
    ASSERT_TRUE(loop.Register(ch).AwaitFor(Scaled(absl::Seconds(10))));
  }
  // Only the loop holds the channel now. Close it from a task and look at it again
  // in the same task: the loop's reference is dropped after the task, not inside Close.
  Future<bool> alive = loop.Submit([weak] {
    std::shared_ptr<FakeChannel> ch = weak.lock();
    if (ch == nullptr) return false;
    FakeChannel* raw = ch.get();
    ch.reset();
    raw->unsafe().Close(ChannelPromise(nullptr));
    return !weak.expired();
  });
  ASSERT_TRUE(alive.AwaitFor(Scaled(absl::Seconds(10))));
  EXPECT_TRUE(alive.Sync().value());
  // Once the turn ends the reference is gone (the loop then sleeps, idle).
  EXPECT_TRUE(gyre::testing::Eventually([&] { return weak.expired(); }));
}

// Graceful shutdown closes the loop's channels before it terminates.
TEST(SingleThreadEventLoopTest, GracefulShutdownClosesChannelsThatDoNotDrain) {
  TaskOnlyLoop loop(nullptr, {});
  auto ch = std::make_shared<FakeChannel>(/*drains=*/false);
  ASSERT_TRUE(loop.Register(ch).AwaitFor(Scaled(absl::Seconds(10))));
  loop.ShutdownGracefully(absl::ZeroDuration(), Scaled(absl::Seconds(30)));
  ASSERT_TRUE(loop.AwaitTermination(Scaled(absl::Seconds(30))));
  EXPECT_GE(ch->drain_asks(), 1);
  EXPECT_FALSE(ch->IsOpen());
  EXPECT_TRUE(ch->CloseFuture().IsDone());
  EXPECT_EQ(loop.RegisteredChannels(), 0);
}

TEST(SingleThreadEventLoopTest, ADrainingChannelHoldsTerminationUntilItCloses) {
  TaskOnlyLoop loop(nullptr, {});
  auto ch = std::make_shared<FakeChannel>(/*drains=*/true);
  ASSERT_TRUE(loop.Register(ch).AwaitFor(Scaled(absl::Seconds(10))));
  Future<void> terminated = loop.ShutdownGracefully(absl::ZeroDuration(), absl::Hours(1));
  // The loop asks the channel, which drains; the loop stays up while it does. Wait
  // until the ask happened (the loop then keeps running tasks: a probe task runs).
  ASSERT_TRUE(gyre::testing::Eventually([&] { return ch->drain_asks() >= 1; }));
  Future<bool> still_open = loop.Submit([ch] { return ch->IsOpen(); });
  ASSERT_TRUE(still_open.AwaitFor(Scaled(absl::Seconds(10))));
  ASSERT_TRUE(still_open.IsSuccess()) << still_open.Cause();
  EXPECT_TRUE(still_open.Sync().value());
  EXPECT_FALSE(terminated.IsDone());
  // A draining channel is asked once, not on every turn.
  EXPECT_EQ(ch->drain_asks(), 1);
  // The drain ends: the channel closes itself and the loop terminates.
  ASSERT_TRUE(loop.Execute([ch] { ch->FinishDrain(); }).ok());
  ASSERT_TRUE(terminated.AwaitFor(Scaled(absl::Seconds(30))));
  EXPECT_FALSE(ch->IsOpen());
}

TEST(SingleThreadEventLoopTest, TheShutdownTimeoutClosesADrainingChannel) {
  TaskOnlyLoop loop(nullptr, {});
  auto ch = std::make_shared<FakeChannel>(/*drains=*/true);
  ASSERT_TRUE(loop.Register(ch).AwaitFor(Scaled(absl::Seconds(10))));
  // A zero timeout: the first turn after shutdown began closes everything.
  Future<void> terminated = loop.ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration());
  ASSERT_TRUE(terminated.AwaitFor(Scaled(absl::Seconds(30))));
  EXPECT_FALSE(ch->IsOpen());
}

// A group of TaskOnlyLoops.
class TaskOnlyLoopGroup final : public MultithreadEventLoopGroup {
 public:
  static absl::StatusOr<std::unique_ptr<TaskOnlyLoopGroup>> Create(int n, GroupOptions o,
                                                                   int fail_at = -1) {
    std::unique_ptr<TaskOnlyLoopGroup> g(new TaskOnlyLoopGroup(std::move(o), fail_at));
    absl::Status s = g->InitLoops(n);
    if (!s.ok()) return s;
    return g;
  }
  std::string_view GroupKind() const override { return "task_only"; }
  std::vector<std::string> names;

 protected:
  absl::StatusOr<std::unique_ptr<SingleThreadEventLoop>> NewEventLoop(
      int index, ExecutorOptions options) override {
    if (index == fail_at_) return absl::ResourceExhaustedError("no more loops");
    names.push_back(options.name);
    return std::unique_ptr<SingleThreadEventLoop>(new TaskOnlyLoop(this, std::move(options)));
  }

 private:
  TaskOnlyLoopGroup(GroupOptions o, int fail_at)
      : MultithreadEventLoopGroup(std::move(o)), fail_at_(fail_at) {}
  const int fail_at_;
};

TEST(MultithreadEventLoopGroupTest, HandsOutEveryLoopAndNamesThemAfterTheGroup) {
  auto group = TaskOnlyLoopGroup::Create(4, {});
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ((*group)->event_loops().size(), 4u);
  std::set<EventLoop*> seen;
  for (int i = 0; i < 8; ++i) seen.insert((*group)->Next());
  EXPECT_EQ(seen.size(), 4u);
  for (SingleThreadEventLoop* loop : (*group)->event_loops()) {
    EXPECT_EQ(seen.count(loop), 1u);
    EXPECT_EQ(loop->parent(), group->get());
  }
  for (const std::string& name : (*group)->names) EXPECT_EQ(name, "task_only");
  EXPECT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::ZeroDuration())
                  .AwaitFor(Scaled(absl::Seconds(30))));
}

TEST(MultithreadEventLoopGroupTest, ZeroLoopsMeansTwiceTheHardwareConcurrency) {
  GroupOptions options;
  options.name = "loops-default";
  auto group = TaskOnlyLoopGroup::Create(0, std::move(options));
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(static_cast<int>((*group)->event_loops().size()),
            MultithreadEventLoopGroup::DefaultLoopCount());
  EXPECT_GE(MultithreadEventLoopGroup::DefaultLoopCount(), 2);
  for (const std::string& name : (*group)->names) EXPECT_EQ(name, "loops-default");
}

TEST(MultithreadEventLoopGroupTest, BadCountsAndFailedLoopsAreStatuses) {
  auto negative = TaskOnlyLoopGroup::Create(-1, {});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  auto failed = TaskOnlyLoopGroup::Create(3, {}, /*fail_at=*/2);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gyre
