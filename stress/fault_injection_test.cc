// Fault injection: a thread factory that fails part-way through a group; tasks,
// timers, listeners and channel handlers that throw on a real event loop; epoll_wait
// interrupted by a storm of signals while echo traffic runs; a handler that blocks its
// loop (the snapshot the admin service reads must report it stalled); a pooled
// allocator at its memory limit under concurrent load. Each test checks the promise it
// guards (docs/reliability.md), not only that nothing crashed.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/thread_factory.h"
#include "gyre/stress/stress_util.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

const absl::Duration kWait = gyre::testing::Scaled(absl::Seconds(30));

// Counts log lines at or above a severity, and those containing a word, while alive.
class LogCounter {
 public:
  LogCounter() {
    internal::SetLogSinkForTesting([this](internal::LogSeverity severity, const char*, int,
                                          const std::string& message) {
      std::lock_guard<std::mutex> lock(mu_);
      if (severity >= internal::LogSeverity::kWarning) ++warnings_;
      lines_.push_back(message);
    });
  }
  ~LogCounter() { internal::SetLogSinkForTesting(nullptr); }
  int warnings() {
    std::lock_guard<std::mutex> lock(mu_);
    return warnings_;
  }
  int Containing(const std::string& word) {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return l.find(word) != std::string::npos;
    }));
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  int warnings_ = 0;
  std::vector<std::string> lines_;
};

// ---------------------------------------------------------------------------------
// A thread factory that refuses its k-th thread.

// Wraps DefaultThreadFactory: refuses call number `fail_at` (1-based) and counts the
// threads whose bodies are still running.
class FailingAtKFactory final : public ThreadFactory {
 public:
  explicit FailingAtKFactory(int fail_at) : fail_at_(fail_at), inner_("failk") {}
  absl::StatusOr<std::unique_ptr<Thread>> NewThread(absl::AnyInvocable<void()> body) override {
    if (calls_.fetch_add(1) + 1 == fail_at_) {
      return absl::ResourceExhaustedError("thread k refused by the test");
    }
    live_.fetch_add(1);
    return inner_.NewThread([this, body = std::move(body)]() mutable {
      body();
      live_.fetch_sub(1);
    });
  }
  int live() const { return live_.load(); }
  int calls() const { return calls_.load(); }

 private:
  const int fail_at_;
  DefaultThreadFactory inner_;
  std::atomic<int> calls_{0};
  std::atomic<int> live_{0};
};

// Threads start lazily, on each child's first task: the k-th child to start gets the
// factory's error back from Execute (its task never runs), the others are unaffected,
// a later task on that child starts its thread, and shutdown leaves no thread behind.
TEST(FaultInjectionTest, ThreadFactoryFailingAtChildKIsReportedAndLeavesNoThread) {
  constexpr int kChildren = 5;
  constexpr int kFailAt = 3;
  // A first thread makes a sanitizer start its own background thread now, not later.
  std::thread([] {}).join();
  const int threads_before = testing::ThreadCount();
  auto factory = std::make_shared<FailingAtKFactory>(kFailAt);
  {
    GroupOptions o;
    o.thread_factory = factory;
    auto group = DefaultEventExecutorGroup::Create(kChildren, o);
    ASSERT_TRUE(group.ok()) << group.status();
    std::vector<EventExecutor*> children = (*group)->executors();
    std::atomic<int> ran{0};
    for (int i = 0; i < kChildren; ++i) {
      absl::Status s = children[i]->Execute([&ran] { ran.fetch_add(1); });
      if (i == kFailAt - 1) {
        EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
        EXPECT_NE(s.message().find("thread k refused"), std::string::npos) << s;
        EXPECT_EQ(dynamic_cast<SingleThreadEventExecutor*>(children[i])->state(),
                  ExecutorState::kNotStarted);
      } else {
        EXPECT_TRUE(s.ok()) << i << ": " << s;
      }
    }
    // The refusal was not permanent: the next task starts the thread.
    EXPECT_TRUE(children[kFailAt - 1]->Execute([&ran] { ran.fetch_add(1); }).ok());
    for (EventExecutor* c : children) ASSERT_TRUE(c->Submit([] { return 0; }).Sync().ok());
    EXPECT_EQ(ran.load(), kChildren);  // the refused task never ran; its retry did
    EXPECT_EQ(factory->live(), kChildren);
    EXPECT_EQ(factory->calls(), kChildren + 1);
    Future<void> done = (*group)->ShutdownGracefully(absl::ZeroDuration(), kWait);
    ASSERT_TRUE(done.AwaitFor(kWait * 2));
    EXPECT_TRUE(done.IsSuccess()) << done.Cause();
  }
  // Destroying the group joined every thread.
  EXPECT_EQ(factory->live(), 0);
  EXPECT_EQ(testing::ThreadCount(), threads_before);
}

// ---------------------------------------------------------------------------------
// Throwing user code on a real event loop.

// Throws on a message starting with "boom", echoes anything else.
class ThrowingEcho final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    ByteBuf* b = msg.Get<ByteBuf>();
    if (b != nullptr && b->ReadableView().substr(0, 4) == "boom") {
      throw std::runtime_error("handler boom");
    }
    ctx.WriteAndFlush(std::move(msg));
  }
  void ExceptionCaught(ChannelHandlerContext& ctx, absl::Status cause) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      causes.push_back(cause);
    }
    ctx.FireExceptionCaught(cause);
  }
  std::mutex mu;
  std::vector<absl::Status> causes;
};

// A test server: one boss loop, one worker loop, `handler` on every child.
struct TestServer {
  std::unique_ptr<NioEventLoopGroup> bosses, workers;
  std::shared_ptr<Channel> channel;
  uint16_t port = 0;

  absl::Status Start(std::shared_ptr<ChannelHandler> handler) {
    auto b = NioEventLoopGroup::Create(1);
    auto w = NioEventLoopGroup::Create(1);
    if (!b.ok()) return b.status();
    if (!w.ok()) return w.status();
    bosses = *std::move(b);
    workers = *std::move(w);
    ServerBootstrap bootstrap;
    bootstrap.Group(bosses.get(), workers.get())
        .Channel<NioServerSocketChannel>()
        .ChildHandler(std::move(handler));
    absl::StatusOr<std::shared_ptr<Channel>> ch = bootstrap.Bind(SocketAddress::Loopback(0)).Sync();
    if (!ch.ok()) return ch.status();
    channel = *ch;
    port = channel->local_address().port();
    return absl::OkStatus();
  }
  ~TestServer() {
    if (channel != nullptr) channel->Close().AwaitFor(kWait);
    bosses.reset();
    workers.reset();
  }
};

bool EchoOnce(int fd, const std::string& msg) {
  std::string got;
  return stress::SendAll(fd, msg) && stress::RecvExactly(fd, msg.size(), &got) && got == msg;
}

TEST(FaultInjectionTest, ThrowingTasksTimersListenersAndHandlersNeverKillTheLoop) {
  LogCounter logs;
  auto handler = std::make_shared<ThrowingEcho>();
  TestServer server;
  ASSERT_TRUE(server.Start(handler).ok());
  NioEventLoop* loop = server.workers->loops()[0];

  // Tasks: a std exception, and something that is not one.
  ASSERT_TRUE(loop->Execute([] { throw std::runtime_error("task boom"); }).ok());
  ASSERT_TRUE(loop->Execute([] { throw 42; }).ok());
  // A submitted task: its future fails with Internal carrying what().
  Future<int> submitted = loop->Submit([]() -> int { throw std::logic_error("submit boom"); });
  ASSERT_TRUE(submitted.AwaitFor(kWait));
  EXPECT_EQ(submitted.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_NE(submitted.Cause().message().find("submit boom"), std::string::npos);
  // A timer (a negative delay means now) and a periodic one that throws on its 3rd run.
  ScheduledFuture<void> timer = loop->Schedule([] { throw std::runtime_error("timer boom"); },
                                               absl::Milliseconds(-1));
  std::atomic<int> periodic_runs{0};
  ScheduledFuture<void> periodic = loop->ScheduleAtFixedRate(
      [&periodic_runs] {
        if (periodic_runs.fetch_add(1) + 1 == 3) throw std::runtime_error("periodic boom");
      },
      absl::ZeroDuration(), absl::Milliseconds(1));
  ASSERT_TRUE(timer.AwaitFor(kWait));
  EXPECT_EQ(timer.Cause().code(), absl::StatusCode::kInternal);
  ASSERT_TRUE(periodic.AwaitFor(kWait));
  EXPECT_EQ(periodic.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(periodic_runs.load(), 3) << "a periodic task stops when it throws";
  // Listeners: the throwing one is logged, the one after it still runs, once.
  Promise<int> p = loop->NewPromise<int>();
  std::atomic<int> after{0};
  p.AddListener([](const Future<int>&) { throw std::runtime_error("listener boom"); });
  p.AddListener([&after](const Future<int>&) { after.fetch_add(1); });
  ASSERT_TRUE(loop->Execute([p]() mutable { p.TrySuccess(1); }).ok());  // inline on the loop
  ASSERT_TRUE(loop->Submit([] { return 0; }).Sync().ok());
  EXPECT_EQ(after.load(), 1);

  // A handler that throws: ExceptionCaught carries it, the channel and loop go on.
  int fd = stress::ConnectLoopback(server.port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(EchoOnce(fd, "hello"));
  ASSERT_TRUE(stress::SendAll(fd, "boom"));
  // Another connection on the same loop is served meanwhile, and so is the first one.
  int fd2 = stress::ConnectLoopback(server.port);
  ASSERT_GE(fd2, 0);
  EXPECT_TRUE(EchoOnce(fd2, "second connection"));
  EXPECT_TRUE(EchoOnce(fd, "still here"));
  close(fd);
  close(fd2);
  {
    std::lock_guard<std::mutex> lock(handler->mu);
    ASSERT_EQ(handler->causes.size(), 1u);
    EXPECT_EQ(handler->causes[0].code(), absl::StatusCode::kInternal);
    EXPECT_NE(handler->causes[0].message().find("handler boom"), std::string::npos);
  }

  // The loop still runs tasks, in order, and reports no error of its own.
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(loop->Execute([&order, i] { order.push_back(i); }).ok());
  ASSERT_TRUE(loop->Submit([] { return 0; }).Sync().ok());
  ASSERT_EQ(order.size(), 100u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(loop->state(), ExecutorState::kStarted);
  EXPECT_GE(logs.Containing("task boom"), 1) << logs.All();
  EXPECT_GE(logs.Containing("non-std"), 1) << logs.All();
  EXPECT_GE(logs.Containing("listener boom"), 1) << logs.All();
}

// ---------------------------------------------------------------------------------
// epoll_wait interrupted by signals.

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

// A no-op handler installed without SA_RESTART, so blocking calls on the loop threads
// return EINTR; restored however the test ends.
struct SignalGuard {
  struct sigaction old {};
  SignalGuard() {
    struct sigaction sa {};
    sa.sa_handler = CountSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART
    sigaction(SIGUSR1, &sa, &old);
  }
  ~SignalGuard() { sigaction(SIGUSR1, &old, nullptr); }
};

class Echo final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override { ctx.Write(std::move(msg)); }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override { ctx.Flush(); }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override { errors.fetch_add(1); }
  std::atomic<int> errors{0};
};

TEST(FaultInjectionTest, EintrStormOnTheLoopThreadsLosesNoDataAndLogsNoError) {
  SignalGuard guard;
  LogCounter logs;
  auto echo = std::make_shared<Echo>();
  TestServer server;
  ASSERT_TRUE(server.Start(echo).ok());
  DefaultEventExecutor plain;  // a condition-variable loop too
  // Start every loop thread and learn its kernel thread id.
  ASSERT_TRUE(server.bosses->Next()->Submit([] { return 0; }).Sync().ok());
  ASSERT_TRUE(server.workers->Next()->Submit([] { return 0; }).Sync().ok());
  ASSERT_TRUE(plain.Submit([] { return 0; }).Sync().ok());
  const std::vector<int> tids = {server.bosses->loops()[0]->Snapshot().os_tid,
                                 server.workers->loops()[0]->Snapshot().os_tid,
                                 plain.Snapshot().os_tid};
  for (int tid : tids) ASSERT_GT(tid, 0);

  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    int fd = stress::ConnectLoopback(server.port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  const int kSignals = stress::kSanitized ? 2000 : 10'000;
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread storm([&] {
    const pid_t pid = getpid();
    for (int i = 0; i < kSignals; ++i) {
      syscall(SYS_tgkill, pid, tids[i % tids.size()], SIGUSR1);
      sent.fetch_add(1, std::memory_order_relaxed);
      if (i % 16 == 0) std::this_thread::yield();  // let the loops go back to sleep
    }
    stop.store(true);
  });
  // Echo traffic over several connections while the storm runs (and at least 200
  // round trips), plus tasks and timers on the plain executor.
  int rounds = 0, bad = 0, plain_tasks = 0;
  while (!stop.load() || rounds < 200) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!EchoOnce(fds[i], testing::PatternBytes(rounds, 1 + (rounds * 131 + i) % 4000))) ++bad;
    }
    ++rounds;
    Future<int> f = plain.Schedule([] { return 1; }, absl::Microseconds(50));
    if (f.Sync().ok()) ++plain_tasks;
  }
  storm.join();
  for (int fd : fds) close(fd);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(plain_tasks, rounds);
  EXPECT_EQ(echo->errors.load(), 0);
  EXPECT_EQ(sent.load(), kSignals);
  EXPECT_GT(g_signals.load(), 0) << "no signal was delivered";
  EXPECT_EQ(logs.warnings(), 0) << logs.All();
  // Every loop is still alive and answers (and, having run a task since the last
  // signal was sent, has taken every signal before the handler is restored).
  EXPECT_TRUE(server.bosses->Next()->Submit([] { return 0; }).Sync().ok());
  EXPECT_TRUE(server.workers->Next()->Submit([] { return 0; }).Sync().ok());
  EXPECT_TRUE(plain.Submit([] { return 0; }).Sync().ok());
  // B30: the storm leaves no busy spin behind. With nothing to do, each I/O loop is back
  // in a blocking epoll_wait: over a 200 ms window it selects a few times at most (the
  // closed connections' last events), where a spinning loop selects thousands of times.
  // A loaded machine can only lower the count, so the bound does not fail for load.
  NioEventLoop* const boss = server.bosses->loops()[0];
  NioEventLoop* const worker = server.workers->loops()[0];
  const int64_t boss_selects = boss->SelectCountForTesting();
  const int64_t worker_selects = worker->SelectCountForTesting();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(boss->SelectCountForTesting() - boss_selects, 20);
  EXPECT_LE(worker->SelectCountForTesting() - worker_selects, 20);
  RecordProperty("signals_delivered", g_signals.load());
  RecordProperty("echo_rounds", rounds);
}

// ---------------------------------------------------------------------------------
// A handler that blocks its loop.

// Blocks the loop in ChannelRead until released.
class Blocker final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    entered.set_value();
    released.wait();
    ctx.WriteAndFlush(std::move(msg));
  }
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
};

// The admin service's rule (tools/admin/admin_server.cc): a loop is stalled when its
// running task is older than the threshold while work is queued.
bool Stalled(const ExecutorSnapshot& e, absl::Duration threshold) {
  return e.running_task && e.running_task_age > threshold && e.pending_tasks > 0;
}

TEST(FaultInjectionTest, HandlerBlockingItsLoopIsReportedStalled) {
  auto blocker = std::make_shared<Blocker>();
  TestServer server;
  ASSERT_TRUE(server.Start(blocker).ok());
  const absl::Duration threshold = absl::Milliseconds(30);
  auto snapshot = [&] { return server.workers->Snapshot().executors.at(0); };
  ASSERT_TRUE(server.workers->Next()->Submit([] { return 0; }).Sync().ok());
  EXPECT_FALSE(Stalled(snapshot(), threshold));

  int fd = stress::ConnectLoopback(server.port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(stress::SendAll(fd, "x"));
  ASSERT_EQ(blocker->entered.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  // Work queued behind the blocked handler.
  Future<int> queued = server.workers->Next()->Submit([] { return 2; });
  ExecutorSnapshot s;
  const absl::Time give_up = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    s = snapshot();  // never blocks, although the loop is stuck
  } while (!Stalled(s, threshold) && absl::Now() < give_up);
  EXPECT_TRUE(s.running_task) << "a handler running on the loop is a running task";
  EXPECT_GT(s.running_task_age, threshold);
  EXPECT_GE(s.pending_tasks, 1u);
  EXPECT_TRUE(Stalled(s, threshold));
  EXPECT_FALSE(queued.IsDone());

  blocker->release.set_value();
  ASSERT_TRUE(queued.Sync().ok());
  std::string got;
  EXPECT_TRUE(stress::RecvExactly(fd, 1, &got));
  close(fd);
  const absl::Time again = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    s = snapshot();
  } while (Stalled(s, threshold) && absl::Now() < again);
  EXPECT_FALSE(Stalled(s, threshold));
}

// ---------------------------------------------------------------------------------
// The pooled allocator at its memory limit, from several threads.

TEST(FaultInjectionTest, PooledAllocatorAtItsLimitFailsWithStatusAndStaysBounded) {
  constexpr size_t kMax = 1 << 20;
  auto pool = PooledByteBufAllocator::Create({.max_memory = kMax});
  ASSERT_TRUE(pool.ok()) << pool.status();
  constexpr int kThreads = 4;
  const int ops = stress::kSanitized ? 5'000 : 50'000;
  std::atomic<int64_t> failures{0}, other_errors{0}, over_limit{0}, successes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      std::vector<ByteBuf> held;
      for (int i = 0; i < ops; ++i) {
        if (!held.empty() && rng() % 3 == 0) {
          std::swap(held[rng() % held.size()], held.back());
          held.pop_back();  // released, possibly to this thread's cache
          continue;
        }
        const size_t size = size_t{1} << (6 + rng() % 13);  // 64 B .. 256 KiB
        absl::StatusOr<ByteBuf> b = (*pool)->Buffer(size);
        if (b.ok()) {
          successes.fetch_add(1);
          held.push_back(*std::move(b));
          // Growth at the limit is refused the same way, leaving the buffer intact.
          absl::Status grow = held.back().WriteZero(size + 1);
          if (!grow.ok() && grow.code() != absl::StatusCode::kResourceExhausted) {
            other_errors.fetch_add(1);
          }
        } else if (b.status().code() == absl::StatusCode::kResourceExhausted) {
          failures.fetch_add(1);
        } else {
          other_errors.fetch_add(1);
        }
        if ((*pool)->UsedMemory() > static_cast<int64_t>(kMax)) over_limit.fetch_add(1);
        if (held.size() > 64) held.erase(held.begin(), held.begin() + 32);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(over_limit.load(), 0) << "used memory went past max_memory";
  EXPECT_GT(failures.load(), 0) << "the limit was never reached";
  EXPECT_GT(successes.load(), 0);
  ByteBufAllocatorStats stats = (*pool)->Stats();
  EXPECT_EQ(stats.live_buffers, 0);
  EXPECT_EQ(stats.used_memory, 0);
  EXPECT_LE(stats.pooled_memory, static_cast<int64_t>(kMax));
  EXPECT_GE(stats.allocation_failures, failures.load());
  // Once released, the memory is available again.
  absl::StatusOr<ByteBuf> again = (*pool)->Buffer(kMax / 2);
  EXPECT_TRUE(again.ok()) << again.status();
}

}  // namespace
}  // namespace gyre
