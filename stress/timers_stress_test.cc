// Stress: a million timers scheduled from several threads onto two executors, nine in
// ten cancelled from those (foreign) threads. Guards: cancelled timers are freed, not
// kept (the executors' scheduled counts come back to exactly the uncancelled number,
// then to zero), so memory stays bounded under schedule/cancel churn; a cancelled timer
// never runs; every uncancelled one fires exactly once when its time comes. Time is a
// ManualTicker: nothing waits on the wall clock.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/scheduled_future.h"
#include "gyre/stress/stress_util.h"
#include "gyre/testing/manual_ticker.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

// Runs a no-op task on `e` and waits for it: afterwards the loop has absorbed every
// timer scheduled or cancelled from other threads before this call.
void Barrier(EventExecutor* e) { ASSERT_TRUE(e->Submit([] { return 0; }).Sync().ok()); }

TEST(TimersStressTest, MillionTimersScheduledAndCancelledStayBounded) {
  constexpr int kThreads = 4;
  constexpr int kExecutors = 2;
  constexpr int kBatch = 10'000;
  const int total = stress::Scaled(1'000'000, 10'000'000);
  const int per_thread = total / kThreads;
  testing::ManualTicker ticker;
  std::vector<std::unique_ptr<DefaultEventExecutor>> executors;
  for (int i = 0; i < kExecutors; ++i) {
    ExecutorOptions o;
    o.ticker = &ticker;
    executors.push_back(std::make_unique<DefaultEventExecutor>(o));
  }

  std::atomic<int64_t> fired{0};
  std::atomic<int64_t> kept[kExecutors] = {};
  std::atomic<int> bad_cancels{0}, rejected{0};
  std::atomic<int64_t> peak_scheduled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<ScheduledFuture<void>> batch;
      batch.reserve(kBatch);
      for (int done = 0; done < per_thread; done += kBatch) {
        const int ex = (t + done / kBatch) % kExecutors;
        DefaultEventExecutor* e = executors[ex].get();
        batch.clear();
        const int n = std::min(kBatch, per_thread - done);
        for (int i = 0; i < n; ++i) {
          // Deadlines spread over a second, so the heap has real work to do.
          batch.push_back(e->Schedule([&fired] { fired.fetch_add(1, std::memory_order_relaxed); },
                                      absl::Seconds(1) + absl::Microseconds((done + i) % 1'000'000)));
          if (batch.back().IsDone()) rejected.fetch_add(1);
        }
        int64_t keep = 0;
        for (int i = 0; i < n; ++i) {
          if (i % 10 == 3) {
            ++keep;
          } else if (!batch[i].Cancel()) {
            bad_cancels.fetch_add(1);
          }
        }
        kept[ex].fetch_add(keep, std::memory_order_relaxed);
        batch.clear();  // the handles go; the kept timers live on in the executor
        int64_t now = 0;
        for (auto& x : executors) now += static_cast<int64_t>(x->ScheduledTaskCount());
        int64_t seen = peak_scheduled.load(std::memory_order_relaxed);
        while (now > seen && !peak_scheduled.compare_exchange_weak(seen, now)) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(rejected.load(), 0);
  ASSERT_EQ(bad_cancels.load(), 0);
  EXPECT_EQ(fired.load(), 0) << "no time has passed";

  int64_t kept_total = 0;
  for (int i = 0; i < kExecutors; ++i) {
    Barrier(executors[i].get());
    // Every cancelled timer is out of the heap: only the kept ones remain.
    EXPECT_EQ(static_cast<int64_t>(executors[i]->ScheduledTaskCount()), kept[i].load())
        << "executor " << i;
    kept_total += kept[i].load();
  }
  EXPECT_EQ(kept_total, total / 10);
  // Bounded while churning: the heap never held much more than the kept timers plus
  // the batches in flight (one per thread) and the cancellations waiting to be freed.
  EXPECT_LE(peak_scheduled.load(),
            kept_total + int64_t{kThreads} * kBatch + int64_t{kExecutors} * 1024);

  ticker.Advance(absl::Seconds(3));
  // Wait (on the condition, not on a clock) until every kept timer has fired: a task
  // queued just after Advance may run before a loop has seen the new time.
  const absl::Time give_up = absl::Now() + gyre::testing::Scaled(absl::Seconds(120));
  while (fired.load() < kept_total && absl::Now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& e : executors) Barrier(e.get());
  EXPECT_EQ(fired.load(), kept_total);
  for (auto& e : executors) EXPECT_EQ(e->ScheduledTaskCount(), 0u);
  for (auto& e : executors) {
    ASSERT_TRUE(e->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).Await().ok());
  }
  EXPECT_EQ(fired.load(), kept_total) << "a cancelled timer ran";
  RecordProperty("timers", total);
}

}  // namespace
}  // namespace gyre
