// Heap-allocation counting for benchmarks, so "zero allocations per task" is a number.
//
//   void BM_Submit(benchmark::State& state) {
//     ... setup (its allocations are not counted) ...
//     gyre::bench::AllocationCounter allocs;
//     for (auto _ : state) { ... }
//     allocs.Report(state);   // counters["allocs_per_op"]
//   }
//
// Linking `//benchmarks/alloc:alloc_counter` replaces the global `operator new` family
// with versions that count each call (and then call malloc). Every gyre_cc_benchmark
// links it. Only `operator new` is counted: allocations made with malloc directly (by C
// libraries) are not. Under ASan/TSan the sanitizer's own operator new may take precedence,
// and the counter then reads zero.
//
// Counts are kept per thread in single-writer slots (a plain load and store, no locked
// instruction on the allocation path) and summed on read, so allocations made by other
// threads — an executor's loop thread running the benchmark's tasks — are included.
//
// Thread safety: AllocationCounter is thread-compatible; TotalAllocations() is
// thread-safe and exact for the threads that have finished allocating (a concurrent
// allocation may or may not be included).

#ifndef GYRE_BENCHMARKS_ALLOC_ALLOC_COUNTER_H_
#define GYRE_BENCHMARKS_ALLOC_ALLOC_COUNTER_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "benchmark/benchmark.h"

namespace gyre::bench {

// A benchmark's problem size: `n`, or n / 1000 (at least 1) when GYRE_BENCH_SMOKE is set,
// as the `<name>_smoke` tests do, so that a smoke run only proves the benchmark works.
// GYRE_BENCH_DIVISOR=D (a positive integer) divides it by D instead, for a profile of a
// smaller run (callgrind) that keeps the workload's shape.
//   BENCHMARK(BM_Submit)->Arg(gyre::bench::SizeArg(1'000'000));
inline int64_t SizeArg(int64_t n) {
  int64_t divisor = 1;
  if (std::getenv("GYRE_BENCH_SMOKE") != nullptr) {
    divisor = 1000;
  } else if (const char* d = std::getenv("GYRE_BENCH_DIVISOR")) {
    divisor = std::max<int64_t>(1, std::atoll(d));
  }
  return n / divisor > 0 ? n / divisor : 1;
}

// GYRE_BENCH_ITERATIONS=N fixes a benchmark's iteration count, for instruction counts
// under callgrind: run twice with different N and divide the difference.
//   BENCHMARK(BM_Read)->Apply(gyre::bench::FixedIterations);
inline void FixedIterations(benchmark::internal::Benchmark* b) {
  if (const char* n = std::getenv("GYRE_BENCH_ITERATIONS")) b->Iterations(std::atoll(n));
}

// Calls of the global operator new (all forms) since the process started, all threads.
uint64_t TotalAllocations();

// Records the allocation total at construction; Report() publishes the allocations since
// then divided by the benchmark's iterations as the counter "allocs_per_op".
class AllocationCounter {
 public:
  AllocationCounter() : start_(TotalAllocations()) {}

  uint64_t Since() const { return TotalAllocations() - start_; }

  void Report(benchmark::State& state) const {
    const double ops = state.iterations() > 0 ? static_cast<double>(state.iterations()) : 1;
    Publish(state, static_cast<double>(Since()) / ops);
  }

  // As Report(), dividing by `ops` (for benchmarks whose iteration is many operations).
  void Report(benchmark::State& state, double ops) const {
    Publish(state, static_cast<double>(Since()) / (ops > 0 ? ops : 1));
  }

 private:
  // Averaged over the benchmark's threads: with Threads(n) each thread reports the
  // shared total over all threads' operations.
  static void Publish(benchmark::State& state, double per_op) {
    state.counters["allocs_per_op"] = benchmark::Counter(per_op, benchmark::Counter::kAvgThreads);
  }

  uint64_t start_;
};

}  // namespace gyre::bench

#endif  // GYRE_BENCHMARKS_ALLOC_ALLOC_COUNTER_H_
