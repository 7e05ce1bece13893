// MemoryBudget: bytes counted against an optional limit, for the ByteBuf allocators'
// max_memory. Lock-free: a reservation is one CAS on the count.
//
// Thread safety: thread-safe; all operations are relaxed (the count is a limit kept on
// itself alone, and a statistic).
// Ownership: a value member of its allocator.
#ifndef GYRE_CHANNEL_INTERNAL_MEMORY_BUDGET_H_
#define GYRE_CHANNEL_INTERNAL_MEMORY_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gyre {
namespace internal {

class MemoryBudget {
 public:
  // `max` bytes at most; 0 = no limit.
  explicit MemoryBudget(size_t max) : max_(static_cast<int64_t>(max)) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Counts `bytes`; false (and nothing counted) when they do not fit under the limit.
  bool Reserve(size_t bytes) {
    const int64_t n = static_cast<int64_t>(bytes);
    if (max_ == 0) {
      used_.fetch_add(n, std::memory_order_relaxed);
      return true;
    }
    int64_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (n > max_ - cur) return false;
    } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
    return true;
  }
  // Gives back `bytes` reserved before.
  void Release(size_t bytes) { used_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }

  int64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const int64_t max_;
  std::atomic<int64_t> used_{0};
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CHANNEL_INTERNAL_MEMORY_BUDGET_H_
