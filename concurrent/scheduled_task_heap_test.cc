// The executor's timer queue (internal::ScheduledTaskHeap: a heap for the earliest
// timers, a wheel of buckets for later ones) against a reference model: whatever mix of
// near, far, beyond-the-window, negative and saturated deadlines is pushed, popped and
// removed, Peek() is always the least (deadline, seq) of all, so timers with equal
// deadlines leave in scheduling order (B-numbers: Netty's ScheduledFutureTask ordering,
// deadline then id).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/internal/scheduled_task.h"

namespace gyre {
namespace {

using internal::ScheduledTask;
using internal::ScheduledTaskHeap;
using internal::ScheduledTaskRef;

// A task with a plain reference count and a done flag; no future, no body.
class FakeTask final : public ScheduledTask {
 public:
  explicit FakeTask(int64_t deadline) : ScheduledTask(Kind::kOnce, 0) {
    set_deadline_nanos(deadline);
  }
  void Ref() override { ++refs_; }
  void Unref() override { --refs_; }
  bool RunOnLoop() override { return false; }
  void CancelDetached() override { done_ = true; }
  void FailDetached(absl::Status) override { done_ = true; }
  bool IsTaskDone() const override { return done_; }
  void DestroyBody() override { ++bodies_destroyed_; }

  int refs() const { return refs_; }
  int bodies_destroyed() const { return bodies_destroyed_; }
  void set_done() { done_ = true; }

 private:
  int refs_ = 1;
  bool done_ = false;
  int bodies_destroyed_ = 0;
};

ScheduledTaskRef Adopt(FakeTask* t) {
  t->Ref();  // the queue's reference; the test keeps the one it was made with
  return ScheduledTaskRef(t);
}

constexpr int64_t kBucket = ScheduledTaskHeap::kBucketNanos;
constexpr int64_t kSpan = ScheduledTaskHeap::kWheelSpanNanos;

TEST(ScheduledTaskHeapTest, FarTimersWaitInTheWheelAndLeaveInOrder) {
  ScheduledTaskHeap q;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int64_t d : {int64_t{1000}, 5 * kBucket, 3 * kBucket + 7, 3 * kBucket + 7, 9 * kBucket}) {
    tasks.push_back(std::make_unique<FakeTask>(d));
    q.Push(Adopt(tasks.back().get()));
  }
  EXPECT_EQ(q.size(), 5u);
  // The window starts at the first far timer's bucket (5) and moves back for the two
  // at 3 buckets: all but the earliest wait in the wheel.
  EXPECT_EQ(q.wheel_size(), 4u);
  EXPECT_EQ(q.PeekDeadline(), 1000);
  std::vector<ScheduledTask*> order;
  while (!q.empty()) order.push_back(q.Pop().release());
  EXPECT_EQ(order, (std::vector<ScheduledTask*>{tasks[0].get(), tasks[2].get(), tasks[3].get(),
                                                tasks[1].get(), tasks[4].get()}));
  for (auto& t : tasks) {
    t->Unref();  // the popped references
    EXPECT_EQ(t->refs(), 1);
  }
}

TEST(ScheduledTaskHeapTest, RemovingFromTheWheelIsExactAndReturnsTheReference) {
  ScheduledTaskHeap q;
  FakeTask near(10), far(100 * kBucket), never_queued(300 * kBucket);
  q.Push(Adopt(&near));
  q.Push(Adopt(&far));
  ASSERT_EQ(q.wheel_size(), 1u);
  EXPECT_FALSE(q.Remove(&never_queued));  // in no queue: nothing to remove
  EXPECT_EQ(q.size(), 2u);
  ScheduledTaskRef r = q.Remove(&far);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.get(), &far);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.wheel_size(), 0u);
  EXPECT_FALSE(q.Remove(&far));  // not there any more
  r.reset();
  EXPECT_EQ(far.refs(), 1);
}

// One bucket holding many timers, most removed one by one from anywhere in it: every
// remaining timer can still be removed exactly, and the rest leave in (deadline,
// scheduling) order.
TEST(ScheduledTaskHeapTest, ManyRemovalsFromOneBucketKeepEveryOtherTimerReachable) {
  ScheduledTaskHeap q;
  FakeTask earliest(10);
  q.Push(Adopt(&earliest));
  constexpr int kTimers = 1000;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < kTimers; ++i) {
    // All in bucket 40, deadlines descending: the heap order is the reverse of pushes.
    tasks.push_back(std::make_unique<FakeTask>(40 * kBucket + kTimers - i));
    q.Push(Adopt(tasks.back().get()));
  }
  ASSERT_EQ(q.wheel_size(), static_cast<size_t>(kTimers));
  // Remove all but every tenth.
  for (int i = 0; i < kTimers; ++i) {
    if (i % 10 == 0) continue;
    ScheduledTaskRef r = q.Remove(tasks[i].get());
    ASSERT_EQ(r.get(), tasks[i].get()) << i;
  }
  EXPECT_EQ(q.wheel_size(), static_cast<size_t>(kTimers / 10));
  // A survivor is removed exactly; the others leave in order.
  ASSERT_EQ(q.Remove(tasks[500].get()).get(), tasks[500].get());
  EXPECT_FALSE(q.Remove(tasks[501].get()));  // removed before
  std::vector<ScheduledTask*> order;
  while (!q.empty()) order.push_back(q.Pop().release());
  std::vector<ScheduledTask*> expected = {&earliest};
  for (int i = kTimers - 10; i >= 0; i -= 10) {
    if (i != 500) expected.push_back(tasks[i].get());
  }
  EXPECT_EQ(order, expected);
  for (ScheduledTask* t : order) t->Unref();
  for (auto& t : tasks) EXPECT_EQ(t->refs(), 1);
  EXPECT_EQ(earliest.refs(), 1);
}

// A bucket holds its timers in chunks of kChunkEntries; a chunk whose timers are all
// gone is reused, so scheduling and cancelling into one bucket for ever holds a bounded
// number of chunks.
TEST(ScheduledTaskHeapTest, ChurnInOneBucketReusesItsChunks) {
  ScheduledTaskHeap q;
  FakeTask earliest(10);  // keeps the wheel's window where it is
  q.Push(Adopt(&earliest));
  constexpr int kAlive = 3;
  constexpr int kRounds = 50 * ScheduledTaskHeap::kChunksPerSlab * ScheduledTaskHeap::kChunkEntries;
  std::vector<std::unique_ptr<FakeTask>> alive;
  for (int i = 0; i < kRounds; ++i) {
    alive.push_back(std::make_unique<FakeTask>(40 * kBucket + i % 1000));
    q.Push(Adopt(alive.back().get()));
    if (alive.size() > kAlive) {
      ASSERT_EQ(q.Remove(alive.front().get()).get(), alive.front().get()) << i;
      alive.erase(alive.begin());
    }
  }
  EXPECT_EQ(q.wheel_size(), static_cast<size_t>(kAlive));
  EXPECT_EQ(q.wheel_slabs(), 1u);  // 50 slabs' worth of timers went through one
  // The survivors are all still reachable, in order.
  std::sort(alive.begin(), alive.end(), [](const auto& a, const auto& b) {
    return a->deadline_nanos() < b->deadline_nanos();
  });
  ASSERT_EQ(q.Pop().get(), &earliest);
  for (auto& t : alive) ASSERT_EQ(q.Pop().get(), t.get());
  EXPECT_TRUE(q.empty());
}

TEST(ScheduledTaskHeapTest, TheWheelsChunksAreReleasedWhenItEmpties) {
  ScheduledTaskHeap q;
  FakeTask earliest(10);
  q.Push(Adopt(&earliest));
  constexpr int kTimers = 10 * ScheduledTaskHeap::kChunksPerSlab * ScheduledTaskHeap::kChunkEntries;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < kTimers; ++i) {
    tasks.push_back(std::make_unique<FakeTask>(2 * kBucket + int64_t{i} * (kSpan / 2 / kTimers)));
    q.Push(Adopt(tasks.back().get()));
  }
  ASSERT_EQ(q.wheel_size(), static_cast<size_t>(kTimers));
  EXPECT_GE(q.wheel_slabs(), 10u);
  for (auto& t : tasks) ASSERT_EQ(q.Remove(t.get()).get(), t.get());
  EXPECT_EQ(q.wheel_size(), 0u);
  EXPECT_EQ(q.wheel_slabs(), 1u);
  // The wheel works on from its first slab.
  q.Push(Adopt(tasks[7].get()));
  EXPECT_EQ(q.wheel_size(), 1u);
  ASSERT_EQ(q.Pop().get(), &earliest);
  ASSERT_EQ(q.Pop().get(), tasks[7].get());
  for (auto& t : tasks) EXPECT_EQ(t->refs(), 1);
  EXPECT_EQ(earliest.refs(), 1);
}

// RemoveDone empties chunks as it goes (including a bucket's newest, still filling).
TEST(ScheduledTaskHeapTest, RemoveDoneEmptiesChunksOnItsWay) {
  ScheduledTaskHeap q;
  FakeTask earliest(10);
  q.Push(Adopt(&earliest));
  constexpr int kTimers = 1003;  // not a multiple of the chunk's entries
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < kTimers; ++i) {
    tasks.push_back(std::make_unique<FakeTask>(40 * kBucket + i));
    q.Push(Adopt(tasks.back().get()));
  }
  // Keep one timer in 17 (so most chunks empty whole, some keep one), and the last.
  for (int i = 0; i < kTimers - 1; ++i) {
    if (i % 17 != 0) tasks[i]->set_done();
  }
  size_t kept = 0;
  for (int i = 0; i < kTimers; ++i) kept += tasks[i]->IsTaskDone() ? 0 : 1;
  EXPECT_EQ(q.RemoveDone(), kTimers - kept);
  EXPECT_EQ(q.wheel_size(), kept);
  ASSERT_EQ(q.Pop().get(), &earliest);
  for (int i = 0; i < kTimers; ++i) {
    if (tasks[i]->IsTaskDone()) {
      EXPECT_EQ(tasks[i]->refs(), 1) << i;
      continue;
    }
    ScheduledTaskRef r = q.Pop();
    ASSERT_EQ(r.get(), tasks[i].get()) << i;
  }
  EXPECT_TRUE(q.empty());
}

TEST(ScheduledTaskHeapTest, RemoveDoneFromHeapLeavesTheWheelAlone) {
  ScheduledTaskHeap q;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  // Saturated deadlines never enter the wheel: these five stay in the heap.
  for (int i = 0; i < 5; ++i) {
    tasks.push_back(std::make_unique<FakeTask>(INT64_MAX - 5 + i));
    q.Push(Adopt(tasks.back().get()));
  }
  tasks.push_back(std::make_unique<FakeTask>(10));  // the earliest: the heap
  q.Push(Adopt(tasks.back().get()));
  tasks.push_back(std::make_unique<FakeTask>(50 * kBucket));  // the wheel
  q.Push(Adopt(tasks.back().get()));
  ASSERT_EQ(q.wheel_size(), 1u);
  ASSERT_EQ(q.heap_size(), 6u);
  EXPECT_TRUE(q.InHeap(tasks[0].get()));
  EXPECT_FALSE(q.InHeap(tasks[6].get()));
  for (int i : {1, 3, 5, 6}) tasks[i]->set_done();
  // Only the heap's done tasks go (1, 3 and the earliest, 5); the wheel's stays linked.
  EXPECT_EQ(q.RemoveDoneFromHeap(), 3u);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(tasks[6]->refs(), 2);
  for (int i : {1, 3, 5}) EXPECT_EQ(tasks[i]->refs(), 1) << i;
  EXPECT_FALSE(q.InHeap(tasks[5].get()));
  // The order is intact: the wheel's timer (now the earliest) first, then 0, 2, 4.
  std::vector<ScheduledTask*> order;
  while (!q.empty()) order.push_back(q.Pop().release());
  EXPECT_EQ(order, (std::vector<ScheduledTask*>{tasks[6].get(), tasks[0].get(), tasks[2].get(),
                                                tasks[4].get()}));
  for (ScheduledTask* t : order) t->Unref();
}

TEST(ScheduledTaskHeapTest, RemoveDoneSweepsTheWheelToo) {
  ScheduledTaskHeap q;
  std::vector<std::unique_ptr<FakeTask>> tasks;
  for (int i = 0; i < 100; ++i) {
    tasks.push_back(std::make_unique<FakeTask>(i * kBucket / 3));
    q.Push(Adopt(tasks.back().get()));
  }
  ASSERT_GT(q.wheel_size(), 50u);
  for (int i = 0; i < 100; i += 2) tasks[i]->set_done();
  EXPECT_EQ(q.RemoveDone(), 50u);
  EXPECT_EQ(q.size(), 50u);
  for (int i = 0; i < 100; ++i) {
    // The queue's reference is dropped for the done ones only.
    EXPECT_EQ(tasks[i]->refs(), i % 2 == 0 ? 1 : 2) << i;
    EXPECT_EQ(tasks[i]->bodies_destroyed(), i % 2 == 0 ? 1 : 0) << i;
  }
  for (int i = 1; i < 100; i += 2) {
    ScheduledTaskRef r = q.Pop();
    ASSERT_TRUE(r);
    EXPECT_EQ(r.get(), tasks[i].get());
    r.reset();
    EXPECT_EQ(tasks[i]->refs(), 1);
  }
  EXPECT_TRUE(q.empty());
}

TEST(ScheduledTaskHeapTest, DestructionDropsEveryReference) {
  std::vector<std::unique_ptr<FakeTask>> tasks;
  {
    ScheduledTaskHeap q;
    for (int i = 0; i < 64; ++i) {
      tasks.push_back(std::make_unique<FakeTask>(i * kBucket));
      q.Push(Adopt(tasks.back().get()));
    }
    ASSERT_GT(q.wheel_size(), 0u);
  }
  for (auto& t : tasks) EXPECT_EQ(t->refs(), 1);
}

// Random operations against a std::map keyed by (deadline, seq).
TEST(ScheduledTaskHeapTest, MatchesAReferenceModelUnderRandomOperations) {
  std::mt19937_64 rng(0x9E3779B97F4A7C15ull);
  for (int trial = 0; trial < 20; ++trial) {
    ScheduledTaskHeap q;
    std::map<std::pair<int64_t, uint64_t>, FakeTask*> model;
    std::vector<std::unique_ptr<FakeTask>> all;
    std::vector<FakeTask*> queued;  // for picking a random one to remove
    uint64_t seq = 0;
    size_t most_in_wheel = 0;
    int64_t now = static_cast<int64_t>(rng() % (4 * kSpan)) - 2 * kSpan;  // negatives too
    auto deadline = [&]() -> int64_t {
      switch (rng() % 8) {
        case 0: return now + static_cast<int64_t>(rng() % 1000);                 // due soon
        case 1: return now + static_cast<int64_t>(rng() % (3 * kSpan));         // past the window
        case 2: return INT64_MAX - static_cast<int64_t>(rng() % 3);               // saturated
        case 3: return now - static_cast<int64_t>(rng() % kBucket);              // overdue
        case 4: return now + static_cast<int64_t>(rng() % 8) * kBucket;          // bucket edges
        default: return now + static_cast<int64_t>(rng() % kSpan);               // in the window
      }
    };
    for (int op = 0; op < 4000; ++op) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 5) {
        all.push_back(std::make_unique<FakeTask>(deadline()));
        FakeTask* t = all.back().get();
        q.Push(Adopt(t));
        model.emplace(std::make_pair(t->deadline_nanos(), seq++), t);
        queued.push_back(t);
      } else if (what < 7 && !queued.empty()) {
        const size_t i = rng() % queued.size();
        FakeTask* t = queued[i];
        queued[i] = queued.back();
        queued.pop_back();
        ScheduledTaskRef r = q.Remove(t);
        ASSERT_TRUE(r);
        for (auto it = model.begin(); it != model.end(); ++it) {
          if (it->second == t) {
            model.erase(it);
            break;
          }
        }
      } else if (what < 9) {
        ScheduledTaskRef r = q.Pop();
        if (model.empty()) {
          ASSERT_FALSE(r);
        } else {
          ASSERT_EQ(r.get(), model.begin()->second) << "trial " << trial << " op " << op;
          FakeTask* t = model.begin()->second;
          model.erase(model.begin());
          for (size_t i = 0; i < queued.size(); ++i) {
            if (queued[i] == t) {
              queued[i] = queued.back();
              queued.pop_back();
              break;
            }
          }
        }
      } else {
        now += static_cast<int64_t>(rng() % (2 * kBucket));  // time moves on
      }
      ASSERT_EQ(q.size(), model.size());
      most_in_wheel = std::max(most_in_wheel, q.wheel_size());
      if (model.empty()) {
        ASSERT_EQ(q.Peek(), nullptr);
        ASSERT_EQ(q.PeekDeadline(), INT64_MAX);
      } else {
        ASSERT_EQ(q.Peek(), model.begin()->second) << "trial " << trial << " op " << op;
        ASSERT_EQ(q.PeekDeadline(), model.begin()->first.first);
      }
    }
    EXPECT_GT(most_in_wheel, 10u);  // the wheel took part
    while (!q.empty()) q.Pop();
    for (auto& t : all) EXPECT_EQ(t->refs(), 1);
  }
}

}  // namespace
}  // namespace gyre
