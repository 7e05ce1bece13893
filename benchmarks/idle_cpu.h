// IdleCpuMs: how much CPU an idle event loop's thread burns, the same measurement for
// gyre's in-process benchmark and for the peers' (tools/bench/peers) harnesses.
//
//   double ms = gyre::bench::IdleCpuMs([&](auto fn) { RunOnLoopAndWait(loop, fn); },
//                                std::chrono::seconds(1));
//
// Thread safety: call from a thread other than the loop's; `on_loop` must run its
// argument on the loop's thread and return after it has run.
#ifndef GYRE_BENCHMARKS_IDLE_CPU_H_
#define GYRE_BENCHMARKS_IDLE_CPU_H_

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <thread>

namespace gyre::bench {

// CPU time, in ms, the loop's thread uses over `idle` while it has nothing to do.
template <typename OnLoop>
double IdleCpuMs(OnLoop&& on_loop, std::chrono::milliseconds idle) {
  clockid_t cpu{};
  on_loop([&cpu] { pthread_getcpuclockid(pthread_self(), &cpu); });
  auto read = [&cpu] {
    timespec ts{};
    clock_gettime(cpu, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  const double before = read();
  std::this_thread::sleep_for(idle);  // the measurement: how much the loop runs meanwhile
  return read() - before;
}

}  // namespace gyre::bench

#endif  // GYRE_BENCHMARKS_IDLE_CPU_H_
