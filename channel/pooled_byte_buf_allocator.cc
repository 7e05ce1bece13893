// PooledByteBufAllocator: size classes, per-thread caches, a shared arena.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "gyre/channel/internal/memory_budget.h"
#include "gyre/channel/pooled_byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {
namespace internal {
namespace {

constexpr int kMinShift = 6;  // the smallest class is 64 B
constexpr size_t kMaxArenaRoots = 4096;

struct ThreadCache;

// Counters bumped only by their owner thread: a relaxed load and store (no locked
// read-modify-write); other threads only read them, for Stats().
struct OwnerCounters {
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> releases{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> cached_bytes{0};  // blocks in this thread's bins
};

inline void Bump(std::atomic<int64_t>& counter, int64_t delta) {
  // Relaxed: single writer; readers want a statistic, not an ordering.
  counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

// The smallest class whose size is at least `capacity`: the bit width of capacity - 1,
// less the smallest class's shift.
int ClassOf(size_t capacity) {
  if (capacity <= (size_t{1} << kMinShift)) return 0;
  const int width = 64 - __builtin_clzll(static_cast<unsigned long long>(capacity - 1));
  return width - kMinShift;
}

size_t ClassSize(int cls) { return size_t{1} << (cls + kMinShift); }

}  // namespace

// The state shared by an allocator and every thread cache for it; shared ownership
// lets a thread exiting after the allocator's destruction still hand its cache back.
class PoolArena {
 public:
  explicit PoolArena(PooledByteBufAllocatorOptions options)
      : reserved_(options.max_memory),
        options_(options),
        pooled_classes_(ClassOf(options.max_pooled_size) + 1),
        cached_classes_(options.thread_cache_entries == 0
                            ? 0
                            : ClassOf(options.max_cached_size) + 1),
        free_(pooled_classes_) {}

  ~PoolArena() {
    for (auto& list : free_) {
      for (void* block : list) std::free(block);
    }
    for (BufRoot* root : roots_) delete root;
  }

  const PooledByteBufAllocatorOptions& options() const { return options_; }
  int pooled_classes() const { return pooled_classes_; }
  int cached_classes() const { return cached_classes_; }

  // Counts `bytes` against max_memory; false if they do not fit.
  bool Reserve(size_t bytes) { return reserved_.Reserve(bytes); }
  void Unreserve(size_t bytes) { reserved_.Release(bytes); }

  void* PopShared(int cls) {
    MutexLock lock(&mu_);
    std::vector<void*>& list = free_[cls];
    if (list.empty()) return nullptr;
    void* block = list.back();
    list.pop_back();
    return block;
  }
  // Keeps `block` for reuse; frees it if even that bookkeeping has no memory.
  void PushShared(int cls, void* block) {
    {
      MutexLock lock(&mu_);
      if (PushNoThrow(free_[cls], block)) return;
    }
    std::free(block);
    pooled_.fetch_sub(static_cast<int64_t>(ClassSize(cls)), std::memory_order_relaxed);
    Unreserve(ClassSize(cls));
  }
  BufRoot* PopRoot() {
    MutexLock lock(&mu_);
    if (roots_.empty()) return nullptr;
    BufRoot* root = roots_.back();
    roots_.pop_back();
    return root;
  }
  void PushRoot(BufRoot* root) {
    {
      MutexLock lock(&mu_);
      if (roots_.size() < kMaxArenaRoots && PushNoThrow(roots_, root)) return;
    }
    delete root;
  }
  // Frees every block in the shared free lists.
  void TrimShared() {
    std::vector<std::vector<void*>> lists(static_cast<size_t>(pooled_classes_));
    {
      MutexLock lock(&mu_);
      lists.swap(free_);
    }
    for (size_t cls = 0; cls < lists.size(); ++cls) {
      for (void* block : lists[cls]) {
        std::free(block);
        pooled_.fetch_sub(static_cast<int64_t>(ClassSize(static_cast<int>(cls))),
                          std::memory_order_relaxed);
        Unreserve(ClassSize(static_cast<int>(cls)));
      }
    }
  }

  template <typename T>
  static bool PushNoThrow(std::vector<T>& list, T item) {
    if (list.size() == list.capacity()) {
      // Grow without exceptions: reserve through a nothrow-checked capacity first.
      const size_t want = list.capacity() == 0 ? 16 : list.capacity() * 2;
      T* probe = static_cast<T*>(::operator new(want * sizeof(T), std::nothrow));
      if (probe == nullptr) return false;
      ::operator delete(probe);
      list.reserve(want);
    }
    list.push_back(std::move(item));
    return true;
  }

  internal::MemoryBudget reserved_;  // bytes taken from the system
  // All relaxed: statistics.
  std::atomic<int64_t> pooled_{0};  // of which kept free for reuse
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> releases_{0};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> arena_hits_{0};
  std::atomic<int64_t> system_allocations_{0};

  void Register(ThreadCache* cache) {
    MutexLock lock(&mu_);
    caches_.push_back(cache);
  }
  // Folds a departing cache's counters into the arena's.
  void Unregister(ThreadCache* cache, const OwnerCounters& c);
  // Sums the live caches' counters.
  void SumCaches(OwnerCounters* sum) const;

 private:
  const PooledByteBufAllocatorOptions options_;
  const int pooled_classes_;
  const int cached_classes_;
  mutable Mutex mu_;
  std::vector<std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  std::vector<BufRoot*> roots_ ABSL_GUARDED_BY(mu_);
  std::vector<ThreadCache*> caches_ ABSL_GUARDED_BY(mu_);
};

namespace {

// One thread's free lists for one arena. Touched only by its thread.
struct ThreadCache {
  explicit ThreadCache(std::shared_ptr<PoolArena> a)
      : arena(std::move(a)), bins(arena->cached_classes()), whole(arena->cached_classes()) {
    const size_t bound = arena->options().thread_cache_entries;
    for (auto& bin : bins) bin.reserve(bound);
    for (auto& list : whole) list.reserve(bound);
    roots.reserve(bound);
    arena->Register(this);
  }
  ~ThreadCache() {
    arena->Unregister(this, counters);  // its cached bytes now count as the arena's
    for (size_t cls = 0; cls < bins.size(); ++cls) {
      for (void* block : bins[cls]) arena->PushShared(static_cast<int>(cls), block);
      for (BufRoot* root : whole[cls]) {
        arena->PushShared(static_cast<int>(cls), root->memory);
        root->memory = nullptr;
        arena->PushRoot(root);
      }
    }
    for (BufRoot* root : roots) arena->PushRoot(root);
  }

  // Whether class `cls` has room for one more free block (loose or attached to a root).
  bool HasRoom(int cls) const {
    return bins[cls].size() + whole[cls].size() < arena->options().thread_cache_entries;
  }

  std::shared_ptr<PoolArena> arena;
  OwnerCounters counters;
  // Capacities reserved up front: no allocation. Per class, at most
  // thread_cache_entries blocks between `bins` and `whole`.
  std::vector<std::vector<void*>> bins;     // free blocks
  std::vector<std::vector<BufRoot*>> whole;  // roots released whole, block attached
  std::vector<BufRoot*> roots;              // free roots, no block
};

struct ThreadCaches;
// Trivially destructible, so it stays readable while thread-local destructors run:
// once set, this thread uses the shared arena only.
thread_local bool tls_caches_gone = false;

// The arena and cache this thread used last: plain (trivially destructible) thread
// locals, so the common lookup is two loads with no thread-local init guard.
thread_local PoolArena* tls_last_arena = nullptr;
thread_local ThreadCache* tls_last_cache = nullptr;

struct ThreadCaches {
  ~ThreadCaches() {
    tls_caches_gone = true;
    tls_last_arena = nullptr;
    tls_last_cache = nullptr;
    caches.clear();
  }
  std::vector<std::unique_ptr<ThreadCache>> caches;
};

thread_local ThreadCaches tls_caches;

ThreadCache* CacheForSlow(const std::shared_ptr<PoolArena>& arena);

// The calling thread's cache for `arena`, created on first use; null when thread
// caches are off, the thread is exiting, or there is no memory for one.
inline ThreadCache* CacheFor(const std::shared_ptr<PoolArena>& arena) {
  // The memo is set only to a cache that exists (so caching is on for that arena) and is
  // cleared when the thread's caches go or the arena's cache is dropped.
  if (ABSL_PREDICT_TRUE(tls_last_arena == arena.get())) return tls_last_cache;
  return CacheForSlow(arena);
}

ABSL_ATTRIBUTE_NOINLINE ThreadCache* CacheForSlow(const std::shared_ptr<PoolArena>& arena) {
  if (arena->cached_classes() == 0 || tls_caches_gone) return nullptr;
  ThreadCaches& tls = tls_caches;
  ThreadCache* found = nullptr;
  for (auto& cache : tls.caches) {
    if (cache->arena == arena) found = cache.get();
  }
  if (found == nullptr) {
    auto* cache = new (std::nothrow) ThreadCache(arena);
    if (cache == nullptr) return nullptr;
    if (!PoolArena::PushNoThrow(tls.caches, std::unique_ptr<ThreadCache>())) {
      delete cache;
      return nullptr;
    }
    tls.caches.back().reset(cache);
    found = cache;
  }
  tls_last_arena = arena.get();
  tls_last_cache = found;
  return found;
}

// Hands the calling thread's cache for `arena` back to it (Trim, destruction).
void DropCacheFor(PoolArena* arena) {
  if (tls_caches_gone) return;
  if (tls_last_arena == arena) {
    tls_last_arena = nullptr;
    tls_last_cache = nullptr;
  }
  ThreadCaches& tls = tls_caches;
  for (auto it = tls.caches.begin(); it != tls.caches.end(); ++it) {
    if ((*it)->arena.get() == arena) {
      tls.caches.erase(it);
      return;
    }
  }
}

}  // namespace

void PoolArena::Unregister(ThreadCache* cache, const OwnerCounters& c) {
  {
    MutexLock lock(&mu_);
    for (auto it = caches_.begin(); it != caches_.end(); ++it) {
      if (*it == cache) {
        caches_.erase(it);
        break;
      }
    }
    // Under mu_ so that a concurrent SumCaches() sees the cache or its fold, not both.
    allocations_.fetch_add(c.allocations.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    releases_.fetch_add(c.releases.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
    cache_hits_.fetch_add(c.cache_hits.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    pooled_.fetch_add(c.cached_bytes.load(std::memory_order_relaxed),
                      std::memory_order_relaxed);
  }
}

void PoolArena::SumCaches(OwnerCounters* sum) const {
  MutexLock lock(&mu_);
  auto add = [](std::atomic<int64_t>& to, const std::atomic<int64_t>& from) {
    to.store(to.load(std::memory_order_relaxed) + from.load(std::memory_order_relaxed),
             std::memory_order_relaxed);
  };
  add(sum->allocations, allocations_);
  add(sum->releases, releases_);
  add(sum->cache_hits, cache_hits_);
  add(sum->cached_bytes, pooled_);
  for (const ThreadCache* cache : caches_) {
    add(sum->allocations, cache->counters.allocations);
    add(sum->releases, cache->counters.releases);
    add(sum->cache_hits, cache->counters.cache_hits);
    add(sum->cached_bytes, cache->counters.cached_bytes);
  }
}

}  // namespace internal

using internal::BufRoot;
using internal::ClassOf;
using internal::ClassSize;

PooledByteBufAllocator::PooledByteBufAllocator(PooledByteBufAllocatorOptions options)
    : arena_(std::make_shared<internal::PoolArena>(options)) {}

PooledByteBufAllocator::~PooledByteBufAllocator() {
  ReportLeaksAtDestruction();
  internal::DropCacheFor(arena_.get());
}

absl::StatusOr<std::unique_ptr<PooledByteBufAllocator>> PooledByteBufAllocator::Create(
    PooledByteBufAllocatorOptions options) {
  if (options.max_pooled_size > (size_t{1} << 30)) {
    return absl::InvalidArgumentError("PooledByteBufAllocator: max_pooled_size > 1 GiB");
  }
  if (options.max_cached_size > options.max_pooled_size) {
    return absl::InvalidArgumentError(
        "PooledByteBufAllocator: max_cached_size > max_pooled_size");
  }
  return std::unique_ptr<PooledByteBufAllocator>(new PooledByteBufAllocator(options));
}

PooledByteBufAllocator* PooledByteBufAllocator::Default() {
  static PooledByteBufAllocator* const instance = new PooledByteBufAllocator({});
  return instance;
}

ByteBufAllocatorStats PooledByteBufAllocator::Stats() const {
  const internal::PoolArena& a = *arena_;
  internal::OwnerCounters sum;
  a.SumCaches(&sum);
  ByteBufAllocatorStats stats;
  stats.allocations = sum.allocations.load(std::memory_order_relaxed);
  stats.releases = sum.releases.load(std::memory_order_relaxed);
  stats.live_buffers = stats.allocations - stats.releases;
  stats.leaked_buffers = LeakedBuffers();
  stats.allocation_failures = failures_.load(std::memory_order_relaxed);
  stats.pooled_memory = sum.cached_bytes.load(std::memory_order_relaxed);
  stats.used_memory = a.reserved_.used() - stats.pooled_memory;
  stats.thread_cache_hits = sum.cache_hits.load(std::memory_order_relaxed);
  stats.arena_hits = a.arena_hits_.load(std::memory_order_relaxed);
  stats.system_allocations = a.system_allocations_.load(std::memory_order_relaxed);
  return stats;
}

void PooledByteBufAllocator::Trim() {
  internal::DropCacheFor(arena_.get());
  arena_->TrimShared();
}

namespace {

struct Block {
  void* memory = nullptr;
  size_t size = 0;
  int cls = -1;
};

}  // namespace

// Gets a block of at least `capacity` bytes: thread cache, arena, then the system.
static absl::Status AcquireBlock(const std::shared_ptr<internal::PoolArena>& arena,
                                 internal::ThreadCache* cache, size_t capacity,
                                 Block* out) {
  internal::PoolArena& a = *arena;
  const bool pooled = capacity <= a.options().max_pooled_size;
  const int cls = pooled ? ClassOf(capacity) : -1;
  const size_t size = pooled ? ClassSize(cls) : capacity;
  if (pooled) {
    void* block = nullptr;
    if (cache != nullptr && cls < a.cached_classes() && !cache->bins[cls].empty()) {
      block = cache->bins[cls].back();
      cache->bins[cls].pop_back();
      internal::Bump(cache->counters.cache_hits, 1);
      internal::Bump(cache->counters.cached_bytes, -static_cast<int64_t>(size));
      *out = Block{block, size, cls};
      return absl::OkStatus();
    }
    block = a.PopShared(cls);
    if (block != nullptr) {
      a.arena_hits_.fetch_add(1, std::memory_order_relaxed);
      a.pooled_.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
      *out = Block{block, size, cls};
      return absl::OkStatus();
    }
  }
  if (!a.Reserve(size)) {
    // Give back what this thread's cache and the arena keep free, then try once more.
    if (cache != nullptr) {
      for (size_t c = 0; c < cache->bins.size(); ++c) {
        const size_t block_size = ClassSize(static_cast<int>(c));
        auto give_back = [&](void* free_block) {
          std::free(free_block);
          a.Unreserve(block_size);
          internal::Bump(cache->counters.cached_bytes, -static_cast<int64_t>(block_size));
        };
        for (void* free_block : cache->bins[c]) give_back(free_block);
        cache->bins[c].clear();
        for (BufRoot* root : cache->whole[c]) {
          give_back(root->memory);
          root->memory = nullptr;
          if (cache->roots.size() < a.options().thread_cache_entries) {
            cache->roots.push_back(root);  // capacity reserved: no alloc
          } else {
            a.PushRoot(root);
          }
        }
        cache->whole[c].clear();
      }
    }
    a.TrimShared();
    if (!a.Reserve(size)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("PooledByteBufAllocator: ", size, " bytes exceed max_memory ",
                       a.options().max_memory, " (in use ",
                       a.reserved_.used(), ")"));
    }
  }
  void* block = std::malloc(size == 0 ? 1 : size);
  if (block == nullptr) {
    a.Unreserve(size);
    return absl::ResourceExhaustedError("PooledByteBufAllocator: out of memory");
  }
  a.system_allocations_.fetch_add(1, std::memory_order_relaxed);
  *out = Block{block, size, cls};
  return absl::OkStatus();
}

// Gives a block back: this thread's cache if it has room, else the arena; blocks
// beyond max_pooled_size go back to the system.
static void ReleaseBlock(const std::shared_ptr<internal::PoolArena>& arena,
                         internal::ThreadCache* cache, const Block& block) {
  internal::PoolArena& a = *arena;
  if (block.cls < 0) {
    std::free(block.memory);
    a.Unreserve(block.size);
    return;
  }
  if (cache != nullptr && block.cls < a.cached_classes() && cache->HasRoom(block.cls)) {
    cache->bins[block.cls].push_back(block.memory);  // capacity reserved: no alloc
    internal::Bump(cache->counters.cached_bytes, static_cast<int64_t>(block.size));
    return;
  }
  a.pooled_.fetch_add(static_cast<int64_t>(block.size), std::memory_order_relaxed);
  a.PushShared(block.cls, block.memory);
}

absl::Status PooledByteBufAllocator::AllocateMemory(BufRoot* root, size_t capacity) {
  Block block;
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  absl::Status s = AcquireBlock(arena_, cache, capacity, &block);
  if (!s.ok()) return s;
  root->memory = static_cast<uint8_t*>(block.memory);
  root->alloc_size = block.size;
  root->size_class = block.cls;
  if (cache != nullptr) {
    internal::Bump(cache->counters.allocations, 1);
  } else {
    arena_->allocations_.fetch_add(1, std::memory_order_relaxed);
  }
  return absl::OkStatus();
}

absl::Status PooledByteBufAllocator::ReallocateMemory(BufRoot* root, size_t new_capacity) {
  Block block;
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  absl::Status s = AcquireBlock(arena_, cache, new_capacity, &block);
  if (!s.ok()) return s;
  if (root->capacity > 0) std::memcpy(block.memory, root->memory, root->capacity);
  ReleaseBlock(arena_, cache, Block{root->memory, root->alloc_size, root->size_class});
  root->memory = static_cast<uint8_t*>(block.memory);
  root->alloc_size = block.size;
  root->size_class = block.cls;
  return absl::OkStatus();
}

void PooledByteBufAllocator::FreeMemory(BufRoot* root) {
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  ReleaseBlock(arena_, cache, Block{root->memory, root->alloc_size, root->size_class});
  root->memory = nullptr;
  if (cache != nullptr) {
    internal::Bump(cache->counters.releases, 1);
  } else {
    arena_->releases_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool PooledByteBufAllocator::RecycleWhole(BufRoot* root) {
  const int cls = root->size_class;
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  if (cache == nullptr || cls < 0 || cls >= arena_->cached_classes() || !cache->HasRoom(cls)) {
    return false;
  }
  cache->whole[cls].push_back(root);  // capacity reserved: no alloc
  internal::Bump(cache->counters.releases, 1);
  internal::Bump(cache->counters.cached_bytes, static_cast<int64_t>(root->alloc_size));
  return true;
}

BufRoot* PooledByteBufAllocator::TakeWhole(size_t capacity) {
  internal::PoolArena& a = *arena_;
  if (capacity > a.options().max_pooled_size) return nullptr;
  const int cls = ClassOf(capacity);
  if (cls >= a.cached_classes()) return nullptr;
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  if (cache == nullptr || cache->whole[cls].empty()) return nullptr;
  BufRoot* root = cache->whole[cls].back();
  cache->whole[cls].pop_back();
  internal::Bump(cache->counters.allocations, 1);
  internal::Bump(cache->counters.cache_hits, 1);
  internal::Bump(cache->counters.cached_bytes, -static_cast<int64_t>(root->alloc_size));
  return root;
}

BufRoot* PooledByteBufAllocator::NewRoot() {
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  if (cache != nullptr && !cache->roots.empty()) {
    BufRoot* root = cache->roots.back();
    cache->roots.pop_back();
    return root;
  }
  if (BufRoot* root = arena_->PopRoot()) return root;
  return new (std::nothrow) BufRoot();
}

void PooledByteBufAllocator::DeleteRoot(BufRoot* root) {
  internal::ThreadCache* cache = internal::CacheFor(arena_);
  if (cache != nullptr && cache->roots.size() < arena_->options().thread_cache_entries) {
    cache->roots.push_back(root);  // capacity reserved: no alloc
    return;
  }
  arena_->PushRoot(root);
}

}  // namespace gyre
