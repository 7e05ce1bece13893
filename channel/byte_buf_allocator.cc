#include "gyre/channel/byte_buf_allocator.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/base/thread_annotations.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {

// --- ByteBufAllocator ---

struct ByteBufAllocator::LiveList {
  internal::Mutex mu;
  internal::BufRoot* head ABSL_GUARDED_BY(mu) = nullptr;
};

ByteBufAllocator::ByteBufAllocator() : live_(std::make_unique<LiveList>()) {}

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
  internal::BufRoot* root = TakeWhole(initial_capacity);
  if (root == nullptr) {
    root = NewRoot();
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
  internal::MutexLock lock(&live_->mu);
  for (internal::BufRoot* r = live_->head; r != nullptr; r = r->live_next) {
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
  internal::MutexLock lock(&live_->mu);
  root->live_prev = nullptr;
  root->live_next = live_->head;
  if (live_->head != nullptr) live_->head->live_prev = root;
  live_->head = root;
#else
  (void)root;
#endif
}

void ByteBufAllocator::UntrackLive(internal::BufRoot* root) {
#ifndef NDEBUG
  internal::MutexLock lock(&live_->mu);
  if (root->live_prev != nullptr) {
    root->live_prev->live_next = root->live_next;
  } else {
    live_->head = root->live_next;
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

void ByteBufAllocator::ReleaseWhole(internal::BufRoot* root) {
  UntrackLive(root);
  if (RecycleWhole(root)) return;
  FreeMemory(root);
  DeleteRoot(root);
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

}  // namespace gyre
