// The in-process workloads W1-W6, exactly as the performance issue defines them, so that
// gyre's figures compare with the same workloads run on Netty and Boost.Asio:
//
//   W1  one producer thread Execute()s 10,000,000 counting no-ops on one started
//       DefaultEventExecutor; from the producer's release to the last task run; tasks/s.
//   W2  as W1, two producers of 5,000,000 each, released together.
//   W3  two started executors; a task on A re-posts to B, B to A: 1,000,000 one-way hops;
//       ns per hop. Also the CPU time an idle executor's thread uses over 1 s
//       (idle_cpu_ms_per_s: it must not spin).
//   W4  on the loop thread: NewPromise<void>(), AddListener(counting), TrySuccess(),
//       10,000,000 times; ops/s.
//   W5  on the loop thread: Schedule(no-op, delay) 1,000,000 times, delays 1 ms..10 s from
//       xorshift64* seeded 0x9E3779B97F4A7C15 (1 ms + r % (10 s - 1 ms + 1), in ns), then
//       Cancel() them all (each must return true and none may run); schedules/s and
//       cancels/s reported separately.
//   W6  on the loop thread: a task that re-submits itself with Execute() 10,000,000
//       times; tasks/s.
//
// And two floors, the costs that bound W4 and W5-schedule from below (see
// docs/performance.md, "The gaps"), measured the same way so the rates compare:
//
//   Floor_W4_ThreeLockedRmw  three uncontended compare-and-swaps on a line this thread
//       owns, each followed by a release store (W4's lock-unlock pairs: add the listener,
//       complete, end the inline notification); ops/s.
//   Floor_W5_ClockRead  the executor's ticker read once (a schedule's deadline); reads/s.
//
// Each workload runs 1 untimed round and 5 timed ones and reports the median round (as
// the benchmark's manual time and as a rate counter), plus allocs_per_op: calls of
// operator new per operation over all six rounds (//benchmarks/alloc).
//
//   bazel run --config=bench //benchmarks:inproc
//   GYRE_BENCH_DIVISOR=100 ...   # sizes / 100, e.g. under callgrind
#include <malloc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "benchmarks/idle_cpu.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/scheduled_future.h"
#include "gyre/concurrent/ticker.h"

namespace gyre {
namespace {

using Clock = std::chrono::steady_clock;

// Keep freed memory mapped between rounds, as a managed runtime's heap stays: a first
// touch of a page costs about 10 us on these machines, and W5's million live timers
// would otherwise measure the kernel's page faults in every round.
const bool kWarmHeap = [] {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  return true;
}();

constexpr int kTimedRounds = 5;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs `round` (returning its seconds) once untimed and kTimedRounds times; the median.
template <typename F>
double MedianRound(F&& round) {
  round();
  std::array<double, kTimedRounds> t{};
  for (double& s : t) s = round();
  std::sort(t.begin(), t.end());
  return t[kTimedRounds / 2];
}

// Runs `fn` on `executor`'s thread and waits for it.
template <typename F>
void OnLoop(DefaultEventExecutor& executor, F&& fn) {
  executor.Submit(std::forward<F>(fn)).Await().IgnoreError();
}

// Publishes a workload's median round: the manual time, `rate_name` = ops / median, and
// allocations per operation over every round.
void Publish(benchmark::State& state, double median_s, int64_t ops, const char* rate_name,
             const bench::AllocationCounter& allocs) {
  state.SetIterationTime(median_s);
  state.counters[rate_name] = static_cast<double>(ops) / median_s;
  state.counters["allocs_per_op"] =
      static_cast<double>(allocs.Since()) / static_cast<double>(ops * (kTimedRounds + 1));
}

// ---------------------------------------------------------------------------------
// W1 / W2: producers Execute() counting no-ops; release to the last task run.

struct ProducerRound {
  std::atomic<int64_t> ran{0};
  int64_t total = 0;
  Clock::time_point last_ran;
  Promise<void> done;

  void Count() {
    // Relaxed: only the task that makes the count whole reads it, and it is the one
    // that publishes (through `done`) the time.
    if (ran.fetch_add(1, std::memory_order_relaxed) + 1 == total) {
      last_ran = Clock::now();
      done.TrySuccess();
    }
  }
};

void Producers(benchmark::State& state, int producers) {
  const int64_t total = state.range(0);
  const int64_t each = total / producers;
  DefaultEventExecutor executor;
  OnLoop(executor, [] {});  // started
  bench::AllocationCounter allocs;
  auto round = [&] {
    ProducerRound r;
    r.total = each * producers;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (int64_t i = 0; i < each; ++i) {
          executor.Execute([rp = &r] { rp->Count(); }).IgnoreError();
        }
      });
    }
    const Clock::time_point released = Clock::now();
    go.store(true, std::memory_order_release);
    r.done.Await().IgnoreError();
    for (auto& t : threads) t.join();
    return Seconds(released, r.last_ran);
  };
  for (auto _ : state) Publish(state, MedianRound(round), each * producers, "tasks_per_s", allocs);
}

void BM_W1_OneProducer(benchmark::State& state) { Producers(state, 1); }
void BM_W2_TwoProducers(benchmark::State& state) { Producers(state, 2); }

// ---------------------------------------------------------------------------------
// W3: ping-pong between two executors; then the idle CPU of a started executor.

struct PingPong {
  DefaultEventExecutor* executors[2];
  int64_t left;
  Promise<void> done;
};

void Hop(PingPong* p, int to) {
  if (--p->left == 0) {
    p->done.TrySuccess();
    return;
  }
  p->executors[to]->Execute([p, to] { Hop(p, 1 - to); }).IgnoreError();
}

void BM_W3_PingPong(benchmark::State& state) {
  const int64_t hops = state.range(0);
  DefaultEventExecutor a, b;
  OnLoop(a, [] {});
  OnLoop(b, [] {});
  bench::AllocationCounter allocs;
  auto round = [&] {
    PingPong p{{&a, &b}, hops, Promise<void>()};
    const Clock::time_point start = Clock::now();
    a.Execute([pp = &p] { Hop(pp, 1); }).IgnoreError();
    p.done.Await().IgnoreError();
    return Seconds(start, Clock::now());
  };
  for (auto _ : state) {
    const double median = MedianRound(round);
    Publish(state, median, hops, "hops_per_s", allocs);
    state.counters["ns_per_hop"] = median * 1e9 / static_cast<double>(hops);
    const std::chrono::milliseconds idle(std::getenv("GYRE_BENCH_SMOKE") ? 20 : 1000);
    state.counters["idle_cpu_ms_per_s"] =
        bench::IdleCpuMs([&a](auto fn) { OnLoop(a, fn); }, idle) * 1e3 /
        static_cast<double>(idle.count());
  }
}

// ---------------------------------------------------------------------------------
// W4: promise, listener, completion on the loop thread.

void BM_W4_PromiseListenComplete(benchmark::State& state) {
  const int64_t n = state.range(0);
  DefaultEventExecutor executor;
  bench::AllocationCounter allocs;
  auto round = [&] {
    double s = 0;
    int64_t heard = 0;
    OnLoop(executor, [&] {
      const Clock::time_point start = Clock::now();
      for (int64_t i = 0; i < n; ++i) {
        Promise<void> p = executor.NewPromise<void>();
        p.AddListener([&heard](const Future<void>&) { ++heard; });
        p.TrySuccess();
      }
      s = Seconds(start, Clock::now());
    });
    if (heard != n) state.SkipWithError("a listener did not run");
    return s;
  };
  for (auto _ : state) Publish(state, MedianRound(round), n, "ops_per_s", allocs);
}

// ---------------------------------------------------------------------------------
// W5: schedule then cancel, on the loop thread.

std::vector<absl::Duration> W5Delays(int64_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  const uint64_t lo = absl::ToInt64Nanoseconds(absl::Milliseconds(1));
  const uint64_t span = absl::ToInt64Nanoseconds(absl::Seconds(10)) - lo + 1;
  std::vector<absl::Duration> delays(n);
  for (auto& d : delays) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t r = x * 0x2545F4914F6CDD1Dull;
    d = absl::Nanoseconds(static_cast<int64_t>(lo + r % span));
  }
  return delays;
}

void BM_W5_ScheduleThenCancel(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<absl::Duration> delays = W5Delays(n);
  DefaultEventExecutor executor;
  std::atomic<int64_t> ran{0};
  std::array<double, kTimedRounds + 1> schedule_s{}, cancel_s{};
  int round_index = 0;
  bool all_cancelled = true;
  bench::AllocationCounter allocs;
  auto round = [&] {
    std::vector<ScheduledFuture<void>> futures;
    futures.reserve(n);
    OnLoop(executor, [&] {
      const Clock::time_point t0 = Clock::now();
      for (int64_t i = 0; i < n; ++i) {
        futures.push_back(executor.Schedule(
            [&ran] { ran.fetch_add(1, std::memory_order_relaxed); }, delays[i]));
      }
      const Clock::time_point t1 = Clock::now();
      for (auto& f : futures) all_cancelled &= f.Cancel();
      const Clock::time_point t2 = Clock::now();
      schedule_s[round_index] = Seconds(t0, t1);
      cancel_s[round_index] = Seconds(t1, t2);
    });
    ++round_index;
    return schedule_s[round_index - 1] + cancel_s[round_index - 1];
  };
  for (auto _ : state) {
    const double median = MedianRound(round);
    Publish(state, median, n, "ops_per_s", allocs);
    // The medians of the timed rounds, each phase on its own.
    std::sort(schedule_s.begin() + 1, schedule_s.end());
    std::sort(cancel_s.begin() + 1, cancel_s.end());
    state.counters["schedules_per_s"] = static_cast<double>(n) / schedule_s[1 + kTimedRounds / 2];
    state.counters["cancels_per_s"] = static_cast<double>(n) / cancel_s[1 + kTimedRounds / 2];
  }
  if (!all_cancelled) state.SkipWithError("a Cancel() returned false");
  if (ran.load() != 0) state.SkipWithError("a cancelled timer ran");
}

// ---------------------------------------------------------------------------------
// W6: a task re-submitting itself on its own loop.

struct SelfSubmit {
  DefaultEventExecutor* executor;
  int64_t left;
  Clock::time_point end;
  Promise<void> done;
};

void Again(SelfSubmit* s) {
  if (--s->left == 0) {
    s->end = Clock::now();
    s->done.TrySuccess();
    return;
  }
  s->executor->Execute([s] { Again(s); }).IgnoreError();
}

void BM_W6_SelfSubmit(benchmark::State& state) {
  const int64_t n = state.range(0);
  DefaultEventExecutor executor;
  OnLoop(executor, [] {});
  bench::AllocationCounter allocs;
  auto round = [&] {
    SelfSubmit s{&executor, n, {}, Promise<void>()};
    Clock::time_point start;
    OnLoop(executor, [&] {
      start = Clock::now();
      executor.Execute([sp = &s] { Again(sp); }).IgnoreError();
    });
    s.done.Await().IgnoreError();
    return Seconds(start, s.end);
  };
  for (auto _ : state) Publish(state, MedianRound(round), n, "tasks_per_s", allocs);
}

// ---------------------------------------------------------------------------------
// Floors.

// Times state.range(0) calls of op(executor) on a started executor's thread, as the
// workloads are timed.
template <typename Op>
void TimeOnLoop(benchmark::State& state, const char* rate_name, Op op) {
  const int64_t n = state.range(0);
  DefaultEventExecutor executor;
  bench::AllocationCounter allocs;
  auto round = [&] {
    double s = 0;
    OnLoop(executor, [&] {
      const Clock::time_point start = Clock::now();
      for (int64_t i = 0; i < n; ++i) op(executor);
      s = Seconds(start, Clock::now());
    });
    return s;
  };
  for (auto _ : state) Publish(state, MedianRound(round), n, rate_name, allocs);
}

void BM_Floor_W4_ThreeLockedRmw(benchmark::State& state) {
  std::atomic<uint32_t> word{0};
  TimeOnLoop(state, "ops_per_s", [&word](DefaultEventExecutor&) {
    for (int k = 0; k < 3; ++k) {
      uint32_t expected = 0;
      word.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                   std::memory_order_relaxed);
      word.store(0, std::memory_order_release);
    }
  });
}

void BM_Floor_W5_ClockRead(benchmark::State& state) {
  TimeOnLoop(state, "reads_per_s", [](DefaultEventExecutor& executor) {
    benchmark::DoNotOptimize(executor.ticker()->Nanos());
  });
}

void Workload(benchmark::internal::Benchmark* b, int64_t n) {
  b->Arg(bench::SizeArg(n))->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_W1_OneProducer)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });
BENCHMARK(BM_W2_TwoProducers)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });
BENCHMARK(BM_W3_PingPong)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 1'000'000); });
BENCHMARK(BM_W4_PromiseListenComplete)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });
BENCHMARK(BM_W5_ScheduleThenCancel)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 1'000'000); });
BENCHMARK(BM_W6_SelfSubmit)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });
BENCHMARK(BM_Floor_W4_ThreeLockedRmw)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });
BENCHMARK(BM_Floor_W5_ClockRead)->Apply([](benchmark::internal::Benchmark* b) { Workload(b, 10'000'000); });

}  // namespace
}  // namespace gyre
