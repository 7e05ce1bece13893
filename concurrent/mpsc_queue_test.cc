#include "gyre/concurrent/internal/mpsc_queue.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace internal {
namespace {

// Pops and runs until `expected` tasks ran; the consumer side of TaskQueue.
void Consume(TaskQueue& q, int expected, int& ran) {
  while (ran < expected) {
    TaskNode* n = q.Pop();
    if (n == nullptr) {
      TaskQueue::CpuRelax();
      continue;
    }
    n->fn();
    n->fn = nullptr;
    ++ran;
    if (ran % 100 == 0) q.FlushRetired();
  }
  q.FlushRetired();
}

// Nodes come from per-thread slabs and are freed on the consumer thread; every slab is
// freed once its producer thread has exited and its nodes are gone (with the queue).
TEST(TaskQueueTest, SlabsOfNodesFreedOnTheConsumerAreAllReleased) {
  const size_t slabs_before = NodeSlab::LiveSlabs();
  constexpr int kProducers = 3;
  const int per_producer = static_cast<int>(testing::Iterations(20000));
  std::atomic<int> sum{0};
  {
    TaskQueue q;
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&q, &sum, per_producer] {
        for (int i = 0; i < per_producer; ++i) {
          q.Push(q.NewNode([&sum] { sum.fetch_add(1, std::memory_order_relaxed); }));
        }
      });
    }
    int ran = 0;
    Consume(q, kProducers * per_producer, ran);
    for (std::thread& t : producers) t.join();
    EXPECT_EQ(ran, kProducers * per_producer);
    EXPECT_GT(NodeSlab::LiveSlabs(), slabs_before);  // recycled nodes still hold some
  }
  EXPECT_EQ(sum.load(), kProducers * per_producer);
  EXPECT_EQ(NodeSlab::LiveSlabs(), slabs_before);
}

// A queue destroyed with tasks still in it destroys them unrun (their captures go).
TEST(TaskQueueTest, DestroyingAQueueDestroysQueuedTasks) {
  auto alive = std::make_shared<int>(0);
  bool ran = false;
  const size_t slabs_before = NodeSlab::LiveSlabs();
  std::thread producer([&] {
    TaskQueue q;
    for (int i = 0; i < 200; ++i) q.Push(q.NewNode([keep = alive, &ran] { ran = true; }));
    EXPECT_EQ(alive.use_count(), 201);
  });
  producer.join();  // the producer's slab and cache go with its thread
  EXPECT_FALSE(ran);
  EXPECT_EQ(alive.use_count(), 1);
  EXPECT_EQ(NodeSlab::LiveSlabs(), slabs_before);
}

}  // namespace
}  // namespace internal
}  // namespace gyre
