// Executor workloads W1, W2, W3, W5, W6 (see issue 4). Items/s via SetItemsProcessed.
//
//   bazel run --config=bench //concurrent:executor_benchmark
#include <malloc.h>

#include <atomic>
#include <memory>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/executor_test_util.h"

namespace gyre {
namespace {

// Keep freed memory mapped between iterations, as a managed runtime's heap stays: on
// these VMs a first-touch page fault costs about 10 us per 4 KiB page, so a cold run of
// a million timers (192 MB of task state) would mostly measure the kernel. W5 reports
// the warm figure; run with GYRE_BENCH_COLD_HEAP=1 for the cold one.
const bool kWarmHeap = [] {
  if (std::getenv("GYRE_BENCH_COLD_HEAP") != nullptr) return false;
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  return true;
}();

// W1 / W2: producers submit no-op tasks to one executor; time until all ran.
void SubmitNoops(benchmark::State& state, int producers) {
  const int64_t per_producer = state.range(0) / producers;
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    DefaultEventExecutor executor;
    executor.Submit([] {}).Await().IgnoreError();  // start the thread outside the count
    std::atomic<int64_t> ran{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&] {
        for (int64_t i = 0; i < per_producer; ++i) {
          // Relaxed: a counter only read after the final barrier.
          executor.Execute([&ran] { ran.fetch_add(1, std::memory_order_relaxed); }).IgnoreError();
        }
      });
    }
    for (auto& t : threads) t.join();
    executor.Submit([] {}).Await().IgnoreError();
    benchmark::DoNotOptimize(ran.load());
  }
  state.SetItemsProcessed(state.iterations() * per_producer * producers);
  allocs.Report(state, static_cast<double>(state.iterations() * per_producer * producers));
}

void BM_W1_OneProducer(benchmark::State& state) { SubmitNoops(state, 1); }
void BM_W2_TwoProducers(benchmark::State& state) { SubmitNoops(state, 2); }
BENCHMARK(BM_W1_OneProducer)->Arg(bench::SizeArg(1'000'000))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W2_TwoProducers)->Arg(bench::SizeArg(1'000'000))->Unit(benchmark::kMillisecond)->UseRealTime();

// W3: a task bounces between two executors; one item per hop.
void BM_W3_PingPong(benchmark::State& state) {
  const int hops = static_cast<int>(state.range(0));
  DefaultEventExecutor a, b;
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    Promise<void> done;
    test::StartPingPong(a, b, hops, done).IgnoreError();
    done.Await().IgnoreError();
  }
  state.SetItemsProcessed(state.iterations() * hops);
  allocs.Report(state, static_cast<double>(state.iterations() * hops));
  state.counters["ns_per_hop"] = benchmark::Counter(
      static_cast<double>(state.iterations() * hops),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_W3_PingPong)->Arg(bench::SizeArg(10'000))->Unit(benchmark::kMillisecond)->UseRealTime();

// W5: schedule N timers with random delays 1 ms..10 s from outside the loop, then
// cancel them all. Reports schedules/s and cancels/s.
void BM_W5_ScheduleThenCancel(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> delay_us(1'000, 10'000'000);
  std::vector<absl::Duration> delays(n);
  for (auto& d : delays) d = absl::Microseconds(delay_us(rng));
  DefaultEventExecutor executor;
  double schedule_s = 0, cancel_s = 0;
  {  // untimed warm-up: the heap's pages are touched once (see kWarmHeap)
    std::vector<ScheduledFuture<void>> fs;
    fs.reserve(n);
    for (int i = 0; i < n; ++i) fs.push_back(executor.Schedule([] {}, delays[i]));
    for (auto& f : fs) f.Cancel();
    executor.Submit([] {}).Await().IgnoreError();
  }
  bench::AllocationCounter allocs;  // per timer scheduled and cancelled
  for (auto _ : state) {
    std::vector<ScheduledFuture<void>> fs;
    fs.reserve(n);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) fs.push_back(executor.Schedule([] {}, delays[i]));
    executor.Submit([] {}).Await().IgnoreError();  // all inserted
    auto t1 = std::chrono::steady_clock::now();
    for (auto& f : fs) f.Cancel();
    executor.Submit([] {}).Await().IgnoreError();  // all removed
    auto t2 = std::chrono::steady_clock::now();
    schedule_s += std::chrono::duration<double>(t1 - t0).count();
    cancel_s += std::chrono::duration<double>(t2 - t1).count();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["schedules_per_s"] = static_cast<double>(state.iterations() * n) / schedule_s;
  state.counters["cancels_per_s"] = static_cast<double>(state.iterations() * n) / cancel_s;
  allocs.Report(state, static_cast<double>(state.iterations() * n));
}
BENCHMARK(BM_W5_ScheduleThenCancel)->Arg(bench::SizeArg(1'000'000))->Unit(benchmark::kMillisecond)->UseRealTime();

// W6: a task resubmits itself from its own loop N times. The task captures two
// pointers (it fits an AnyInvocable's inline storage), so this measures the executor,
// not the allocator.
void BM_W6_SelfResubmit(benchmark::State& state) {
  const int64_t n = state.range(0);
  DefaultEventExecutor executor;
  struct Chain {
    int64_t left;
    Promise<void> done;
  };
  struct Again {
    DefaultEventExecutor* e;
    Chain* chain;
    void operator()() const {
      if (chain->left-- == 0) {
        chain->done.TrySuccess();
        return;
      }
      e->Execute(Again{e, chain}).IgnoreError();
    }
  };
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    Chain chain{n, Promise<void>()};
    executor.Execute(Again{&executor, &chain}).IgnoreError();
    chain.done.Await().IgnoreError();
  }
  state.SetItemsProcessed(state.iterations() * n);
  allocs.Report(state, static_cast<double>(state.iterations() * n));
}
BENCHMARK(BM_W6_SelfResubmit)->Arg(bench::SizeArg(1'000'000))->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gyre
