// Stress: a promise storm. Many threads race to complete, listen to, stop listening to
// and await the same promises, bound to executors or to none. Guards the listener
// rules of API.md: exactly one completer wins; every listener that was not removed
// runs exactly once and sees the winning outcome; a removed one never runs; listeners
// of a promise with an executor run on that executor's thread; every awaiter wakes.
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/promise.h"
#include "gyre/stress/stress_util.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

// What happened to one promise; written by the racing threads, checked afterwards.
struct Slot {
  Promise<int> promise{nullptr};
  std::atomic<int> winners{0};
  std::atomic<int> winner_kind{-1};  // 0 success, 1 failure, 2 cancelled
};

int KindOf(const Future<int>& f) {
  if (f.IsSuccess()) return 0;
  if (f.IsCancelled()) return 2;
  return 1;
}

TEST(PromiseStormStressTest, EveryListenerExactlyOnceEveryAwaiterWakes) {
  constexpr int kThreads = 6;
  const int batch = stress::Scaled(2'000, 10'000);
  const int rounds = stress::LongProfile() ? 200 : (stress::kSanitized ? 5 : 25);
  auto group = DefaultEventExecutorGroup::Create(2);
  ASSERT_TRUE(group.ok()) << group.status();
  std::vector<EventExecutor*> executors = (*group)->executors();

  int64_t listeners_total = 0, removed_total = 0, off_executor_total = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<Slot> slots(batch);
    for (int i = 0; i < batch; ++i) {
      // One in three has no executor: listeners then run on the completing thread.
      EventExecutor* e = i % 3 == 0 ? nullptr : executors[i % executors.size()];
      slots[i].promise = e == nullptr ? Promise<int>(nullptr) : e->NewPromise<int>();
    }
    // runs[i * kThreads + t]: how often thread t's listener on promise i ran.
    std::unique_ptr<std::atomic<uint8_t>[]> runs(new std::atomic<uint8_t>[batch * kThreads]);
    std::unique_ptr<std::atomic<uint8_t>[]> removed(new std::atomic<uint8_t>[batch * kThreads]);
    std::unique_ptr<std::atomic<int8_t>[]> seen(new std::atomic<int8_t>[batch * kThreads]);
    for (int i = 0; i < batch * kThreads; ++i) {
      runs[i].store(0, std::memory_order_relaxed);
      removed[i].store(0, std::memory_order_relaxed);
      seen[i].store(-1, std::memory_order_relaxed);
    }
    std::atomic<int> off_executor{0};
    std::atomic<int> await_failures{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (int k = 0; k < batch; ++k) {
          // Each thread walks the whole batch in its own order (a stride coprime to the
          // batch size, which is 2^a * 5^b), so the races differ per promise.
          static constexpr int kStride[kThreads] = {1, 3, 7, 11, 13, 17};
          const int i = static_cast<int>((static_cast<int64_t>(k) * kStride[t] + t * 97) % batch);
          Slot& s = slots[i];
          const int at = i * kThreads + t;
          EventExecutor* e = s.promise.executor();
          ListenerId id = s.promise.AddListener([&, at, e](const Future<int>& f) {
            runs[at].fetch_add(1, std::memory_order_relaxed);
            seen[at].store(static_cast<int8_t>(KindOf(f)), std::memory_order_relaxed);
            if (e != nullptr && !e->InEventLoop()) off_executor.fetch_add(1);
          });
          if ((i + t) % 7 == 0 && s.promise.RemoveListener(id)) {
            removed[at].store(1, std::memory_order_relaxed);
          }
          bool won = false;
          switch ((i + t) % 4) {
            case 0: won = s.promise.TrySuccess(i); break;
            case 1: won = s.promise.TryFailure(absl::InternalError("storm")); break;
            case 2: won = s.promise.Cancel(); break;
            default: break;  // a pure listener
          }
          if (won) {
            s.winners.fetch_add(1, std::memory_order_relaxed);
            s.winner_kind.store((i + t) % 4 == 0 ? 0 : (i + t) % 4 == 1 ? 1 : 2,
                                std::memory_order_relaxed);
          }
          if (t % 3 == 0 && !s.promise.AwaitFor(gyre::testing::Scaled(absl::Seconds(60)))) await_failures.fetch_add(1);
        }
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& th : threads) th.join();
    ASSERT_EQ(await_failures.load(), 0);

    // Every notification task was queued before the joins; a task queued after them on
    // each executor runs after them.
    for (EventExecutor* e : executors) ASSERT_TRUE(e->Submit([] { return 0; }).Sync().ok());

    for (int i = 0; i < batch; ++i) {
      Slot& s = slots[i];
      ASSERT_TRUE(s.promise.IsDone()) << i;
      ASSERT_EQ(s.winners.load(), 1) << "promise " << i;
      const int kind = s.winner_kind.load();
      ASSERT_EQ(KindOf(s.promise), kind) << i;
      for (int t = 0; t < kThreads; ++t) {
        const int at = i * kThreads + t;
        ++listeners_total;
        if (removed[at].load()) {
          ++removed_total;
          ASSERT_EQ(runs[at].load(), 0) << "removed listener ran: promise " << i << " thread " << t;
        } else {
          ASSERT_EQ(runs[at].load(), 1) << "promise " << i << " thread " << t;
          ASSERT_EQ(seen[at].load(), kind) << "listener saw another outcome";
        }
      }
    }
    off_executor_total += off_executor.load();
  }
  EXPECT_EQ(off_executor_total, 0) << "listeners ran off their executor's thread";
  EXPECT_GT(listeners_total, removed_total);
  RecordProperty("listeners", static_cast<int>(listeners_total));
  RecordProperty("removed", static_cast<int>(removed_total));
  ASSERT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(30)).Await().ok());
}

}  // namespace
}  // namespace gyre
