// gyre's demo: what //concurrent does, narrated. Run with `./dev demo`.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/progressive_promise.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/task.h"

namespace {

void Say(const std::string& line) {
  std::printf("  %s\n", line.c_str());
  std::fflush(stdout);
}

void Section(const char* title) { std::printf("\n== %s\n", title); }

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

  std::printf("\ndemo finished: every future above completed exactly once.\n");
  return 0;
}
