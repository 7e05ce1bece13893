#include "gyre/channel/unpooled_byte_buf_allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/status_macros.h"

namespace gyre {

UnpooledByteBufAllocator::UnpooledByteBufAllocator(UnpooledByteBufAllocatorOptions options)
    : options_(options), used_(options.max_memory) {}

UnpooledByteBufAllocator::~UnpooledByteBufAllocator() { ReportLeaksAtDestruction(); }

absl::StatusOr<std::unique_ptr<UnpooledByteBufAllocator>> UnpooledByteBufAllocator::Create(
    UnpooledByteBufAllocatorOptions options) {
  return std::unique_ptr<UnpooledByteBufAllocator>(new UnpooledByteBufAllocator(options));
}

UnpooledByteBufAllocator* UnpooledByteBufAllocator::Default() {
  static UnpooledByteBufAllocator* const instance = new UnpooledByteBufAllocator({});
  return instance;
}

ByteBufAllocatorStats UnpooledByteBufAllocator::Stats() const {
  ByteBufAllocatorStats stats;
  stats.allocations = allocations_.load(std::memory_order_relaxed);
  stats.releases = releases_.load(std::memory_order_relaxed);
  stats.live_buffers = stats.allocations - stats.releases;
  stats.leaked_buffers = LeakedBuffers();
  stats.allocation_failures = failures_.load(std::memory_order_relaxed);
  stats.used_memory = used_.used();
  stats.system_allocations = system_allocations_.load(std::memory_order_relaxed);
  return stats;
}

absl::Status UnpooledByteBufAllocator::AllocateMemory(internal::BufRoot* root,
                                                      size_t capacity) {
  if (!used_.Reserve(capacity)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UnpooledByteBufAllocator: ", capacity, " bytes exceed max_memory ",
                     options_.max_memory));
  }
  if (capacity == 0) {
    root->memory = nullptr;
    root->alloc_size = 0;
  } else {
    GYRE_RETURN_IF_ERROR(Adopt(root, std::malloc(capacity), capacity, capacity));
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status UnpooledByteBufAllocator::Adopt(internal::BufRoot* root, void* memory,
                                             size_t size, size_t reserved) {
  if (memory == nullptr) {
    used_.Release(reserved);
    return absl::ResourceExhaustedError("UnpooledByteBufAllocator: out of memory");
  }
  system_allocations_.fetch_add(1, std::memory_order_relaxed);
  root->memory = static_cast<uint8_t*>(memory);
  root->alloc_size = size;
  return absl::OkStatus();
}

absl::Status UnpooledByteBufAllocator::ReallocateMemory(internal::BufRoot* root,
                                                        size_t new_capacity) {
  const size_t extra = new_capacity - root->alloc_size;
  if (!used_.Reserve(extra)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UnpooledByteBufAllocator: growing to ", new_capacity,
                     " bytes exceeds max_memory ", options_.max_memory));
  }
  return Adopt(root, std::realloc(root->memory, new_capacity), new_capacity, extra);
}

void UnpooledByteBufAllocator::FreeMemory(internal::BufRoot* root) {
  std::free(root->memory);
  root->memory = nullptr;
  used_.Release(root->alloc_size);
  releases_.fetch_add(1, std::memory_order_relaxed);
}

internal::BufRoot* UnpooledByteBufAllocator::NewRoot() {
  return new (std::nothrow) internal::BufRoot();
}

void UnpooledByteBufAllocator::DeleteRoot(internal::BufRoot* root) { delete root; }

}  // namespace gyre
