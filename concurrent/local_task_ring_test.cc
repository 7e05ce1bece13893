#include "gyre/concurrent/internal/local_task_ring.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "gtest/gtest.h"

namespace gyre {
namespace internal {
namespace {

using Task = LocalTaskRing::Task;

void RunOne(LocalTaskRing& ring) {
  ring.RunFront([](Task& task) { task(); });
}

TEST(LocalTaskRingTest, RunsInOrderAndDestroysEachTaskOnce) {
  LocalTaskRing ring;
  std::vector<int> order;
  auto alive = std::make_shared<int>(0);
  for (int i = 0; i < 200; ++i) {  // past the first capacity: grows while queueing
    ring.Emplace([&order, i, keep = alive] { order.push_back(i); });
  }
  EXPECT_EQ(ring.size(), 200u);
  EXPECT_EQ(alive.use_count(), 201);
  while (!ring.empty()) RunOne(ring);
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(alive.use_count(), 1);  // every task destroyed after it ran
}

TEST(LocalTaskRingTest, ATaskThatFillsTheRingKeepsItsCapturesWhileItRuns) {
  // The running task queues enough tasks to grow the ring (several times), then reads
  // its own captures: they must still be there (its array is kept until it returns),
  // and its slot must not have been reused by one of the new tasks.
  LocalTaskRing ring;
  std::vector<std::string> seen;
  const std::string tag(100, 'x');  // a capture that lives on the heap
  ring.Emplace([&ring, &seen, tag] {
    for (int i = 0; i < 1000; ++i) {
      ring.Emplace([&seen, i] { seen.push_back(std::to_string(i)); });
    }
    seen.push_back(tag);
  });
  RunOne(ring);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], tag);
  EXPECT_EQ(ring.size(), 1000u);
  while (!ring.empty()) RunOne(ring);
  ASSERT_EQ(seen.size(), 1001u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[i + 1], std::to_string(i));
}

TEST(LocalTaskRingTest, TheRunningSlotIsNotReusedWhenTheRingWrapsAround) {
  // Capacity 64 once warm: with 63 tasks behind the running one, the 64th that the
  // running task queues would land in its slot if that slot counted as free. The tasks'
  // captures (two words) are stored in the slot itself, so reuse would overwrite the
  // running task's `magic` with the new task's `i`.
  struct Context {
    LocalTaskRing ring;
    std::vector<uint64_t> seen;
  } ctx;
  for (int i = 0; i < 64; ++i) ctx.ring.Emplace([] {});
  while (!ctx.ring.empty()) RunOne(ctx.ring);  // head and tail now sit mid-array
  constexpr uint64_t kMagic = 0x5eed5eed5eed5eedull;
  Context* c = &ctx;
  ctx.ring.Emplace([c, magic = kMagic] {
    for (uint64_t i = 0; i < 64; ++i) c->ring.Emplace([c, i] { c->seen.push_back(i); });
    c->seen.push_back(magic);
  });
  RunOne(ctx.ring);
  ASSERT_EQ(ctx.seen.size(), 1u);
  EXPECT_EQ(ctx.seen[0], kMagic);
  ASSERT_EQ(ctx.ring.size(), 64u);
  while (!ctx.ring.empty()) RunOne(ctx.ring);
  ASSERT_EQ(ctx.seen.size(), 65u);
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(ctx.seen[i + 1], i);
}

TEST(LocalTaskRingTest, ARunNestedInARunningTaskTakesTheNextTask) {
  LocalTaskRing ring;
  std::vector<std::string> order;
  ring.Emplace([&] {
    order.push_back("outer start");
    RunOne(ring);  // runs the second task, not this one again
    order.push_back("outer end");
  });
  ring.Emplace([&] { order.push_back("inner"); });
  ring.Emplace([&] { order.push_back("last"); });
  RunOne(ring);
  EXPECT_EQ(order, (std::vector<std::string>{"outer start", "inner", "outer end"}));
  ASSERT_EQ(ring.size(), 1u);
  RunOne(ring);
  EXPECT_EQ(order.back(), "last");
}

TEST(LocalTaskRingTest, PopMovesTheFrontTaskOut) {
  LocalTaskRing ring;
  int ran = 0;
  ring.Push(Task([&ran] { ran += 1; }));
  ring.Emplace([&ran] { ran += 10; });
  Task first = ring.Pop();
  EXPECT_EQ(ring.size(), 1u);
  first();
  EXPECT_EQ(ran, 1);
  RunOne(ring);
  EXPECT_EQ(ran, 11);
}

TEST(LocalTaskRingTest, DestroyingTheRingDestroysQueuedTasksUnrun) {
  auto alive = std::make_shared<int>(0);
  bool ran = false;
  {
    LocalTaskRing ring;
    for (int i = 0; i < 100; ++i) ring.Emplace([keep = alive, &ran] { ran = true; });
    RunOne(ring);
    EXPECT_TRUE(ran);
    ran = false;
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(alive.use_count(), 1);
}

}  // namespace
}  // namespace internal
}  // namespace gyre
