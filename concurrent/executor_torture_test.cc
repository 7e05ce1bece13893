// Torture: producers racing a graceful shutdown. Every Execute that returned OK ran
// exactly once; every other was told it was rejected (FailedPrecondition). Nothing lost.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/testing/executor_test_util.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

TEST(ExecutorTortureTest, ProducersRacingShutdownLoseNothing) {
  const int kProducers = 4;
#ifdef GYRE_STRESS
  const int kTotal = 1'000'000;  // the stress variant (//concurrent:executor_torture_stress_test)
#else
  const int kTotal = static_cast<int>(testing::Iterations(100'000));
#endif
  const int kPerProducer = kTotal / kProducers;
  DefaultEventExecutor executor;
  std::unique_ptr<std::atomic<uint8_t>[]> runs(new std::atomic<uint8_t>[kTotal]);
  std::unique_ptr<uint8_t[]> outcome(new uint8_t[kTotal]);  // 1 accepted, 2 rejected, 3 other
  for (int i = 0; i < kTotal; ++i) runs[i].store(0, std::memory_order_relaxed);
  std::atomic<int> submitted{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int k = 0; k < kPerProducer; ++k) {
        int id = p * kPerProducer + k;
        absl::Status s = executor.Execute(
            [&runs, id] { runs[id].fetch_add(1, std::memory_order_relaxed); });
        outcome[id] = s.ok() ? 1 : (s.code() == absl::StatusCode::kFailedPrecondition ? 2 : 3);
        submitted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (submitted.load(std::memory_order_relaxed) < kTotal / 2) std::this_thread::yield();
  Future<void> done = executor.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(60));
  for (auto& t : producers) t.join();
  ASSERT_TRUE(done.Await().ok());
  ASSERT_TRUE(done.IsSuccess());
  int accepted = 0, rejected = 0;
  for (int i = 0; i < kTotal; ++i) {
    ASSERT_NE(outcome[i], 3) << "task " << i << " got an unexpected status";
    if (outcome[i] == 1) {
      ++accepted;
      ASSERT_EQ(runs[i].load(), 1) << "accepted task " << i << " ran " << int(runs[i].load());
    } else {
      ++rejected;
      ASSERT_EQ(runs[i].load(), 0) << "rejected task " << i << " ran";
    }
  }
  EXPECT_EQ(accepted + rejected, kTotal);
  EXPECT_GE(accepted, kTotal / 2);  // submitted before ShutdownGracefully was called
  EXPECT_EQ(executor.PendingTasks(), 0u);
  // Whether any producer lost the race depends on scheduling; rejection after
  // termination does not.
  std::atomic<bool> late_ran{false};
  absl::Status late = executor.Execute([&late_ran] { late_ran.store(true); });
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_FALSE(late_ran.load());
}

}  // namespace
}  // namespace gyre
