#include "gyre/channel/unpooled_byte_buf_allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"

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
  void* memory = nullptr;
  if (capacity > 0) {
    memory = std::malloc(capacity);
    if (memory == nullptr) {
      used_.Release(capacity);
      return absl::ResourceExhaustedError("UnpooledByteBufAllocator: out of memory");
    }
    system_allocations_.fetch_add(1, std::memory_order_relaxed);
  }
  root->memory = static_cast<uint8_t*>(memory);
  root->alloc_size = capacity;
  allocations_.fetch_add(1, std::memory_order_relaxed);
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
  void* memory = std::realloc(root->memory, new_capacity);
  if (memory == nullptr) {
    used_.Release(extra);
    return absl::ResourceExhaustedError("UnpooledByteBufAllocator: out of memory");
  }
  system_allocations_.fetch_add(1, std::memory_order_relaxed);
  root->memory = static_cast<uint8_t*>(memory);
  root->alloc_size = new_capacity;
  return absl::OkStatus();
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
