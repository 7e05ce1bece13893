// UnpooledByteBufAllocator: one heap block per ByteBuf, freed on the last release.
//
//   GYRE_ASSIGN_OR_RETURN(auto alloc, gyre::UnpooledByteBufAllocator::Create(
//                                         {.max_memory = 16 << 20}));
//   absl::StatusOr<gyre::ByteBuf> buf = alloc->Buffer(512);
//
// Thread safety: thread-safe. A buffer may be released on any thread.
#ifndef GYRE_CHANNEL_UNPOOLED_BYTE_BUF_ALLOCATOR_H_
#define GYRE_CHANNEL_UNPOOLED_BYTE_BUF_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/internal/byte_buf_core.h"
#include "gyre/channel/internal/memory_budget.h"

namespace gyre {

struct UnpooledByteBufAllocatorOptions {
  // Bytes the allocator may have behind live buffers at once; 0 = no limit.
  size_t max_memory = 0;
};

// One heap block per buffer, freed on the last release; growth reallocates in place
// when the heap can.
//
// Thread safety: thread-safe.
// Ownership: must outlive its buffers. Default() is never destroyed.
class UnpooledByteBufAllocator final : public ByteBufAllocator {
 public:
  static absl::StatusOr<std::unique_ptr<UnpooledByteBufAllocator>> Create(
      UnpooledByteBufAllocatorOptions options = {});
  // A process-wide instance with no memory limit.
  static UnpooledByteBufAllocator* Default();
  ~UnpooledByteBufAllocator() override;

  ByteBufAllocatorStats Stats() const override;

 private:
  explicit UnpooledByteBufAllocator(UnpooledByteBufAllocatorOptions options);
  absl::Status AllocateMemory(internal::BufRoot* root, size_t capacity) override;
  absl::Status ReallocateMemory(internal::BufRoot* root, size_t new_capacity) override;
  // Makes `memory` (what malloc or realloc returned for `size` bytes) `root`'s block.
  // Null: returns the `reserved` bytes to the budget and fails (`root` is unchanged).
  absl::Status Adopt(internal::BufRoot* root, void* memory, size_t size, size_t reserved);
  void FreeMemory(internal::BufRoot* root) override;
  internal::BufRoot* NewRoot() override;
  void DeleteRoot(internal::BufRoot* root) override;

  const UnpooledByteBufAllocatorOptions options_;
  internal::MemoryBudget used_;
  // All relaxed: statistics.
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> releases_{0};
  std::atomic<int64_t> system_allocations_{0};
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_UNPOOLED_BYTE_BUF_ALLOCATOR_H_
