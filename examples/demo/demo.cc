// gyre's demo: what //concurrent does, narrated. Run with `./dev demo`.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/executor_group_registry.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/multithread_event_executor_group.h"
#include "gyre/concurrent/progressive_promise.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/task.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"

namespace {

void Say(const std::string& line) {
  std::printf("  %s\n", line.c_str());
  std::fflush(stdout);
}

void Section(const char* title) { std::printf("\n== %s\n", title); }

// Echoes every message back (the server side of the TCP section).
class Echo : public gyre::ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(gyre::ChannelHandlerContext& ctx, gyre::Message msg) override {
    ctx.WriteAndFlush(std::move(msg));
  }
};

// Completes `reply` with the first `expected` bytes received.
class Reply : public gyre::ChannelInboundHandler {
 public:
  Reply(size_t expected, gyre::Promise<std::string> reply) : expected_(expected), reply_(reply) {}
  void ChannelRead(gyre::ChannelHandlerContext&, gyre::Message msg) override {
    if (gyre::ByteBuf* buf = msg.Get<gyre::ByteBuf>()) got_ += buf->ToString();
    if (got_.size() >= expected_) reply_.TrySuccess(got_);
  }

 private:
  size_t expected_;
  gyre::Promise<std::string> reply_;
  std::string got_;
};

int TcpEchoSection() {
  Section("TCP echo over the epoll transport, set up with ServerBootstrap / Bootstrap");
  gyre::GroupOptions boss_options, worker_options;
  boss_options.name = "boss";
  worker_options.name = "workers";
  auto boss = gyre::NioEventLoopGroup::Create(1, boss_options);
  auto workers = gyre::NioEventLoopGroup::Create(2, worker_options);
  if (!boss.ok() || !workers.ok()) {
    std::fprintf(stderr, "could not create event loop groups\n");
    return 1;
  }
  gyre::ServerBootstrap server;
  server.Group(boss->get(), workers->get())
      .Channel<gyre::NioServerSocketChannel>()
      .ChildOption(gyre::ChannelOption::kTcpNodelay, true)
      .ChildHandler(std::make_shared<gyre::ChannelInitializer>([](gyre::Channel& ch) {
        return ch.pipeline().AddLast("echo", std::make_shared<Echo>());
      }));
  absl::StatusOr<std::shared_ptr<gyre::Channel>> listening =
      server.Bind(gyre::SocketAddress::Loopback(0)).Sync();
  if (!listening.ok()) {
    std::fprintf(stderr, "bind failed: %s\n", listening.status().ToString().c_str());
    return 1;
  }
  Say("listening on " + (*listening)->local_address().ToString());
  const std::string text = "ping over loopback";
  gyre::Promise<std::string> reply;
  gyre::Bootstrap client;
  client.Group(workers->get())
      .Channel<gyre::NioSocketChannel>()
      .Handler(std::make_shared<Reply>(text.size(), reply));
  absl::StatusOr<std::shared_ptr<gyre::Channel>> ch =
      client.Connect((*listening)->local_address()).Sync();
  if (!ch.ok()) {
    std::fprintf(stderr, "connect failed: %s\n", ch.status().ToString().c_str());
    return 1;
  }
  absl::Time sent = absl::Now();
  (*ch)->WriteAndFlush(text).Await().IgnoreError();
  if (!reply.AwaitFor(absl::Seconds(10))) {
    std::fprintf(stderr, "no echo within 10 s\n");
    return 1;
  }
  Say("sent \"" + text + "\", got \"" + *reply.GetNow() + "\" back in " +
      absl::FormatDuration(absl::Now() - sent));
  for (gyre::EventExecutor* e : (*workers)->executors()) {
    gyre::ExecutorSnapshot snap = e->Snapshot();
    Say("worker loop " + snap.thread_name + ": " + std::string(gyre::ExecutorStateName(snap.state)) +
        ", " + std::to_string(snap.completed_tasks) + " tasks done");
  }
  (*ch)->Close().Await().IgnoreError();
  (*listening)->Close().Await().IgnoreError();
  (*workers)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).Await().IgnoreError();
  (*boss)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).Await().IgnoreError();
  Say(std::string("both groups terminated: ") +
      ((*workers)->IsTerminated() && (*boss)->IsTerminated() ? "yes" : "no"));
  return 0;
}

gyre::Task<int> SumOfSquares(gyre::Future<int> a, gyre::Future<int> b) {
  absl::StatusOr<int> x = co_await a;
  if (!x.ok()) co_return x.status();
  absl::StatusOr<int> y = co_await b;
  if (!y.ok()) co_return y.status();
  co_return *x * *x + *y * *y;
}

}  // namespace

int main() {
  std::printf("gyre demo: futures and promises with Netty's semantics\n");

  Section("a promise completed by another thread, awaited here");
  gyre::Promise<std::string> greeting;
  greeting.AddListener([](const gyre::Future<std::string>& f) {
    Say("listener: completed with \"" + *f.GetNow() + "\"");
  });
  absl::Time start = absl::Now();
  std::thread worker([greeting]() mutable { greeting.TrySuccess("hello from a worker"); });
  absl::StatusOr<std::string> value = greeting.Sync();
  worker.join();
  Say("Sync() returned \"" + *value + "\" after " +
      absl::FormatDuration(absl::Now() - start));
  Say(std::string("second completion accepted? ") +
      (greeting.TrySuccess("again") ? "yes" : "no (first one wins)"));

  Section("failure, cancellation and uncancellable");
  gyre::Promise<int> failing;
  failing.TryFailure(absl::UnavailableError("backend down"));
  Say("failed future: Cause() = " + failing.Cause().ToString());
  gyre::Promise<int> cancelled;
  cancelled.Cancel();
  Say("cancelled future: Cause() = " + cancelled.Cause().ToString());
  gyre::Promise<int> pinned;
  pinned.SetUncancellable();
  Say(std::string("uncancellable: Cancel() -> ") + (pinned.Cancel() ? "true" : "false"));

  Section("Then continuations");
  gyre::Promise<int> order_id;
  gyre::Future<std::string> receipt =
      order_id.Then([](const int& id) { return id * 10; })
          .Then([](const int& cents) -> absl::StatusOr<std::string> {
            return "receipt for " + std::to_string(cents) + " cents";
          });
  order_id.TrySuccess(7);
  Say("chain of two Thens -> \"" + *receipt.GetNow() + "\"");

  Section("co_await in a gyre::Task coroutine");
  gyre::Promise<int> a, b;
  gyre::Future<int> sum = SumOfSquares(a, b);
  Say(std::string("task started; done? ") + (sum.IsDone() ? "yes" : "no, awaiting a"));
  a.TrySuccess(3);
  b.TrySuccess(4);
  Say("3*3 + 4*4 = " + std::to_string(*sum.GetNow()));

  Section("progress reports");
  gyre::ProgressivePromise<void> upload;
  upload.AddProgressListener([](const gyre::Future<void>&, int64_t done, int64_t total) {
    Say("progress " + std::to_string(done) + "/" + std::to_string(total));
  });
  for (int i = 1; i <= 4; ++i) upload.SetProgress(i * 256, 1024).IgnoreError();
  Say("a bad report is refused: " + upload.SetProgress(2048, 1024).ToString());

  Section("a chain of 10,000 promises, each completing the next from its listener");
  std::vector<gyre::Promise<int>> chain(10000);
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    gyre::Promise<int> next = chain[i + 1];
    chain[i].AddListener(
        [next](const gyre::Future<int>& f) mutable { next.TrySuccess(*f.GetNow() + 1); });
  }
  chain[0].TrySuccess(0);
  Say("last promise holds " + std::to_string(*chain.back().GetNow()) +
      " (inline nesting bounded at depth 8, no stack overflow)");

  Section("an executor group: 2 threads, started lazily, shut down gracefully");
  gyre::GroupOptions options;
  options.name = "demo";
  absl::StatusOr<std::unique_ptr<gyre::DefaultEventExecutorGroup>> created =
      gyre::DefaultEventExecutorGroup::Create(2, options);
  if (!created.ok()) {
    std::fprintf(stderr, "could not create the group: %s\n", created.status().ToString().c_str());
    return 1;
  }
  gyre::DefaultEventExecutorGroup& group = **created;
  auto print_states = [&](const char* when) {
    std::string line = std::string(when) + ":";
    for (const gyre::ExecutorSnapshot& e : group.Snapshot().executors) {
      line += " [" + std::string(gyre::ExecutorStateName(e.state)) + " " +
              (e.thread_name.empty() ? "no thread" : e.thread_name) + ", " +
              std::to_string(e.completed_tasks) + " done]";
    }
    Say(line);
  };
  print_states("before any task");
  std::vector<gyre::Future<int>> results;
  for (int i = 1; i <= 8; ++i) results.push_back(group.Submit([i] { return i * i; }));
  int total = 0;
  for (auto& r : results) total += *r.Sync();
  Say("8 tasks submitted round-robin; sum of squares = " + std::to_string(total));
  gyre::Future<std::string> thrower = group.Submit([]() -> std::string {
    throw std::runtime_error("a task threw");
  });
  Say("a throwing task fails its future, the loop lives on: " + thrower.Sync().status().ToString());
  gyre::ScheduledFuture<void> timer =
      group.Next()->Schedule([] { Say("this timer never runs"); }, absl::Hours(1));
  Say(std::string("a timer an hour away, cancelled: ") + (timer.Cancel() ? "removed" : "?"));
  Say("registered groups: " + std::to_string(gyre::ExecutorGroupRegistry::Global().Snapshots().size()) +
      " (\"" + gyre::ExecutorGroupRegistry::Global().Snapshots().front().name + "\")");
  print_states("after the work");
  absl::Time shutdown_start = absl::Now();
  gyre::Future<void> terminated =
      group.ShutdownGracefully(absl::Milliseconds(100), absl::Seconds(5));
  print_states("shutting down");
  gyre::Future<int> late = group.Submit([] { return 1; });
  absl::Status done = terminated.Await();
  Say("terminated after " + absl::FormatDuration(absl::Now() - shutdown_start) +
      " (quiet period 100ms): " + done.ToString());
  print_states("after termination");
  Say("a task submitted after shutdown began: " +
      (late.Sync().ok() ? std::string("ran (still in the quiet period)")
                        : late.Sync().status().ToString()));
  Say("a task submitted now: " + group.Submit([] { return 1; }).Sync().status().ToString());

  if (int rc = TcpEchoSection(); rc != 0) return rc;

  std::printf("\ndemo finished: every future above completed exactly once; nothing was lost.\n");
  return 0;
}
