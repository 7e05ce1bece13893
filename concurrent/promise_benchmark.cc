// Benchmarks of the future/promise hot paths (run by `./dev bench`).
//
// BM_PromiseCreateListenComplete: on the executor's own thread, create a promise, add a
//   listener, complete it (the listener runs inline).
// BM_PromiseCrossThreadWakeup: two threads, each blocked in Await in turn; one iteration
//   is a round trip of two wakeups.
// BM_ThenChain10: ten Then continuations, completed at the head, on the executor thread.

#include <atomic>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/future_core.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/executor_test_util.h"

namespace gyre {
namespace {

// An executor whose thread is the one that constructed it (the benchmark thread), so
// that promise work measured there is "on the executor's own thread". Runs nothing else.
class CallerThreadExecutor final : public test::NeverShutDownExecutor {
 public:
  // As an executor thread does, mark this thread as this executor's.
  CallerThreadExecutor() { internal::tls_current_executor = this; }
  ~CallerThreadExecutor() override { internal::tls_current_executor = nullptr; }

  using EventExecutor::InEventLoop;
  bool InEventLoop(std::thread::id id) const override { return id == thread_; }
  absl::Status Execute(absl::AnyInvocable<void()> task) override {
    // Only reached past the listener depth bound, which these benchmarks never hit.
    task();
    return absl::OkStatus();
  }

 private:
  std::thread::id thread_ = std::this_thread::get_id();
};

void BM_PromiseCreateListenComplete(benchmark::State& state) {
  CallerThreadExecutor executor;
  int64_t sum = 0;
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    Promise<int> p(&executor);
    p.AddListener([&sum](const Future<int>& f) { sum += *f.GetNow(); });
    p.TrySuccess(1);
  }
  benchmark::DoNotOptimize(sum);
  if (sum != state.iterations()) state.SkipWithError("a listener did not run");
  state.SetItemsProcessed(state.iterations());
  allocs.Report(state);
}
BENCHMARK(BM_PromiseCreateListenComplete)->Apply(bench::FixedIterations);

void BM_PromiseCreateComplete(benchmark::State& state) {
  CallerThreadExecutor executor;
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    Promise<int> p(&executor);
    p.TrySuccess(1);
    benchmark::DoNotOptimize(p.GetNow());
  }
  state.SetItemsProcessed(state.iterations());
  allocs.Report(state);
}
BENCHMARK(BM_PromiseCreateComplete)->Apply(bench::FixedIterations);

// Arg 1: the default Await (spins up to 20 us before sleeping); arg 0: sleeps at once,
// so every wakeup goes through the kernel.
void BM_PromiseCrossThreadWakeup(benchmark::State& state) {
  internal::SetAwaitSpinForTesting(state.range(0) ? absl::Microseconds(20) : absl::ZeroDuration());
  constexpr int kBatch = 64;
  struct Batch {
    std::vector<Promise<void>> go;
    std::vector<Promise<void>> done;
    Promise<Batch*> next;
  };
  auto make_batch = [] {
    auto* b = new Batch;
    for (int i = 0; i < kBatch; ++i) {
      b->go.emplace_back();
      b->done.emplace_back();
    }
    return b;
  };
  Promise<Batch*> first;
  std::thread peer([first] {
    Promise<Batch*> current = first;
    for (;;) {
      absl::StatusOr<Batch*> b = current.Sync();
      if (!b.ok() || *b == nullptr) return;
      for (int i = 0; i < kBatch; ++i) {
        (*b)->go[i].Await().IgnoreError();
        (*b)->done[i].TrySuccess();
      }
      current = (*b)->next;
    }
  });
  Promise<Batch*> publish = first;
  std::vector<Batch*> all;
  while (state.KeepRunningBatch(kBatch)) {
    Batch* b = make_batch();
    all.push_back(b);
    publish.TrySuccess(b);
    publish = b->next;
    for (int i = 0; i < kBatch; ++i) {
      b->go[i].TrySuccess();
      b->done[i].Await().IgnoreError();
    }
  }
  publish.TrySuccess(nullptr);
  peer.join();
  for (Batch* b : all) delete b;
  state.counters["ns_per_wakeup"] = benchmark::Counter(
      2.0 * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  internal::SetAwaitSpinForTesting(absl::Microseconds(20));
}
BENCHMARK(BM_PromiseCrossThreadWakeup)->Arg(1)->Arg(0)->UseRealTime();

void BM_ThenChain10(benchmark::State& state) {
  CallerThreadExecutor executor;
  bench::AllocationCounter allocs;  // per chain of ten
  for (auto _ : state) {
    Promise<int> head(&executor);
    Future<int> tail = head;
    for (int i = 0; i < 10; ++i) tail = tail.Then([](const int& v) { return v + 1; });
    head.TrySuccess(0);
    if (*tail.GetNow() != 10) state.SkipWithError("wrong result");
  }
  state.SetItemsProcessed(state.iterations());
  allocs.Report(state);
}
BENCHMARK(BM_ThenChain10);

}  // namespace
}  // namespace gyre
