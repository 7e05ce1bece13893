#include "gyre/channel/byte_buf_allocator.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

// --- ByteBufAllocator ---

ByteBufAllocator::~ByteBufAllocator() = default;

void ByteBufAllocator::ReportLeaksAtDestruction() const {
  const int64_t live = ReportLeaks();
  if (live > 0) {
    GYRE_LOG(ERROR) << "ByteBufAllocator destroyed with " << live << " live buffers";
  }
}

absl::StatusOr<ByteBuf> ByteBufAllocator::Buffer(size_t initial_capacity,
                                                 size_t max_capacity,
                                                 internal::SourceSite site) {
  if (initial_capacity > max_capacity) {
    return absl::InvalidArgumentError(absl::StrCat("ByteBufAllocator: initial capacity ",
                                                   initial_capacity, " > max capacity ",
                                                   max_capacity));
  }
  internal::BufRoot* root = NewRoot();
  if (root == nullptr) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError("ByteBufAllocator: no memory for metadata");
  }
  absl::Status s = AllocateMemory(root, initial_capacity);
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    DeleteRoot(root);
    return s;
  }
  root->view = internal::BufView{};
  root->view.root = root;
  root->view.owns_ref = true;
  root->view.embedded = true;
  root->capacity = initial_capacity;
  root->max_capacity = max_capacity;
  root->alloc = this;
  root->site = site;
  // Relaxed: the root is not yet visible to any other thread.
  root->refcnt.store(1, std::memory_order_relaxed);
  root->views.store(1, std::memory_order_relaxed);
  TrackLive(root);
  return ByteBuf(&root->view);
}

absl::StatusOr<ByteBuf> ByteBufAllocator::CopiedBuffer(absl::string_view bytes,
                                                       internal::SourceSite site) {
  absl::StatusOr<ByteBuf> buf = Buffer(bytes.size(), kDefaultMaxCapacity, site);
  if (!buf.ok()) return buf;
  absl::Status s = buf->WriteBytes(bytes);
  if (!s.ok()) return s;
  return buf;
}

int64_t ByteBufAllocator::ReportLeaks() const {
  const int64_t live = LiveBuffers();
#ifndef NDEBUG
  internal::MutexLock lock(&live_mu_);
  for (internal::BufRoot* r = live_head_; r != nullptr; r = r->live_next) {
    GYRE_LOG(WARNING) << "ByteBuf live: capacity " << r->capacity << ", refCnt "
                      << r->refcnt.load(std::memory_order_relaxed) << ", allocated at "
                      << r->site.file_name() << ":" << r->site.line() << " ("
                      << r->site.function_name() << ")";
  }
#endif
  return live;
}

void ByteBufAllocator::TrackLive(internal::BufRoot* root) {
#ifndef NDEBUG
  internal::MutexLock lock(&live_mu_);
  root->live_prev = nullptr;
  root->live_next = live_head_;
  if (live_head_ != nullptr) live_head_->live_prev = root;
  live_head_ = root;
#else
  (void)root;
#endif
}

void ByteBufAllocator::UntrackLive(internal::BufRoot* root) {
#ifndef NDEBUG
  internal::MutexLock lock(&live_mu_);
  if (root->live_prev != nullptr) {
    root->live_prev->live_next = root->live_next;
  } else {
    live_head_ = root->live_next;
  }
  if (root->live_next != nullptr) root->live_next->live_prev = root->live_prev;
  root->live_prev = root->live_next = nullptr;
#else
  (void)root;
#endif
}

void ByteBufAllocator::ReleaseMemory(internal::BufRoot* root) {
  UntrackLive(root);
  FreeMemory(root);
}

void ByteBufAllocator::LastViewGone(internal::BufRoot* root) {
  // Acquire: pairs with the releases that brought the count down (no view is left to
  // change it concurrently).
  if (root->refcnt.load(std::memory_order_acquire) > 0) {
    leaked_.fetch_add(1, std::memory_order_relaxed);
#ifndef NDEBUG
    GYRE_LOG(ERROR) << "LEAK: ByteBuf lost its last handle with reference count "
                    << root->refcnt.load(std::memory_order_relaxed)
                    << " (reclaimed); allocated at " << root->site.file_name() << ":"
                    << root->site.line() << " (" << root->site.function_name() << ")";
#endif
    root->refcnt.store(0, std::memory_order_relaxed);
    ReleaseMemory(root);
  }
  DeleteRoot(root);
}

absl::Status ByteBufAllocator::Grow(internal::BufRoot* root, size_t new_capacity) {
  absl::Status s = ReallocateMemory(root, new_capacity);
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  root->capacity = new_capacity;
  return absl::OkStatus();
}

// --- UnpooledByteBufAllocator ---

UnpooledByteBufAllocator::UnpooledByteBufAllocator(UnpooledByteBufAllocatorOptions options)
    : options_(options) {}

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
  stats.used_memory = used_.load(std::memory_order_relaxed);
  stats.system_allocations = system_allocations_.load(std::memory_order_relaxed);
  return stats;
}

bool UnpooledByteBufAllocator::Reserve(size_t bytes) {
  const int64_t n = static_cast<int64_t>(bytes);
  if (options_.max_memory == 0) {
    used_.fetch_add(n, std::memory_order_relaxed);
    return true;
  }
  const int64_t max = static_cast<int64_t>(options_.max_memory);
  int64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (n > max - cur) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

absl::Status UnpooledByteBufAllocator::AllocateMemory(internal::BufRoot* root,
                                                      size_t capacity) {
  if (!Reserve(capacity)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UnpooledByteBufAllocator: ", capacity, " bytes exceed max_memory ",
                     options_.max_memory));
  }
  void* memory = nullptr;
  if (capacity > 0) {
    memory = std::malloc(capacity);
    if (memory == nullptr) {
      used_.fetch_sub(static_cast<int64_t>(capacity), std::memory_order_relaxed);
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
  if (!Reserve(extra)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("UnpooledByteBufAllocator: growing to ", new_capacity,
                     " bytes exceeds max_memory ", options_.max_memory));
  }
  void* memory = std::realloc(root->memory, new_capacity);
  if (memory == nullptr) {
    used_.fetch_sub(static_cast<int64_t>(extra), std::memory_order_relaxed);
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
  used_.fetch_sub(static_cast<int64_t>(root->alloc_size), std::memory_order_relaxed);
  releases_.fetch_add(1, std::memory_order_relaxed);
}

internal::BufRoot* UnpooledByteBufAllocator::NewRoot() {
  return new (std::nothrow) internal::BufRoot();
}

void UnpooledByteBufAllocator::DeleteRoot(internal::BufRoot* root) { delete root; }

}  // namespace gyre
