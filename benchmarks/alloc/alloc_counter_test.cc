#include "gyre/benchmarks/alloc/alloc_counter.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gyre::bench {
namespace {

// Sanitizer runtimes install their own operator new, which takes precedence over a
// replacement in a shared library; the counter is for benchmark (opt) builds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GYRE_SKIP_UNDER_SANITIZER() GTEST_SKIP() << "sanitizer runtime owns operator new"
#else
#define GYRE_SKIP_UNDER_SANITIZER() (void)0
#endif

// Keeps the compiler from eliding a new/delete pair.
template <typename T>
void Escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
}

TEST(AllocationCounterTest, CountsEachOperatorNew) {
  GYRE_SKIP_UNDER_SANITIZER();
  const uint64_t before = TotalAllocations();
  for (int i = 0; i < 10; ++i) {
    auto p = std::make_unique<int>(i);
    Escape(p.get());
  }
  EXPECT_EQ(TotalAllocations() - before, 10u);
}

TEST(AllocationCounterTest, CountsArrayAndAlignedForms) {
  GYRE_SKIP_UNDER_SANITIZER();
  struct alignas(128) Wide {
    char bytes[128];
  };
  const uint64_t before = TotalAllocations();
  int* a = new int[4];
  Escape(a);
  delete[] a;
  Wide* w = new Wide;
  Escape(w);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 128, 0u);
  delete w;
  EXPECT_EQ(TotalAllocations() - before, 2u);
}

TEST(AllocationCounterTest, NoAllocationCountsZero) {
  GYRE_SKIP_UNDER_SANITIZER();
  const uint64_t before = TotalAllocations();
  int x = 0;
  for (int i = 0; i < 100; ++i) x += i;
  Escape(&x);
  EXPECT_EQ(TotalAllocations() - before, 0u);
}

TEST(AllocationCounterTest, IncludesOtherThreads) {
  GYRE_SKIP_UNDER_SANITIZER();
  std::vector<std::thread> threads;
  threads.reserve(4);
  const uint64_t before = TotalAllocations();
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) {
        auto p = std::make_unique<long>(i);
        Escape(p.get());
      }
    });
  }
  for (auto& t : threads) t.join();
  // std::thread's own state is allocated too: at least the 4,000 counted here.
  EXPECT_GE(TotalAllocations() - before, 4000u);
  EXPECT_LT(TotalAllocations() - before, 4100u);
}

}  // namespace
}  // namespace gyre::bench
