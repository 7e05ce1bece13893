// The shared state behind a gyre::ByteBuf handle: the root (memory, capacity, reference
// count, allocator) and the views (indices) that handles point to.
//
// Not for direct use: ByteBuf and the allocators in gyre/channel/byte_buf_allocator.h
// are the only code that touches these structs.
//
// Thread safety: `BufRoot::refcnt` and `BufRoot::views` are atomics and may be changed
// from any thread; every other field belongs to whoever holds the view (root fields
// that change, `memory` and `capacity`, only change under EnsureWritable, which the
// holder of a view must not race with other views' accesses).
#ifndef GYRE_CHANNEL_INTERNAL_BYTE_BUF_CORE_H_
#define GYRE_CHANNEL_INTERNAL_BYTE_BUF_CORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gyre {

class ByteBufAllocator;

namespace internal {

// `BufView::fixed_capacity` of a view whose capacity follows its root (root views and
// duplicates); slices have a fixed capacity.
inline constexpr size_t kDynamicCapacity = ~size_t{0};

struct BufRoot;

// Where a buffer was allocated. Not std::source_location: clang 14 with this libstdc++
// lacks it, and the builtins below work in both compilers (as default arguments they
// name the outermost caller).
class SourceSite {
 public:
  static constexpr SourceSite Current(const char* file = __builtin_FILE(),
                                      int line = __builtin_LINE(),
                                      const char* function = __builtin_FUNCTION()) {
    return SourceSite(file, line, function);
  }
  constexpr SourceSite() = default;
  const char* file_name() const { return file_; }
  int line() const { return line_; }
  const char* function_name() const { return function_; }

 private:
  constexpr SourceSite(const char* file, int line, const char* function)
      : file_(file), line_(line), function_(function) {}
  const char* file_ = "";
  int line_ = 0;
  const char* function_ = "";
};

// The indices of one handle. A root embeds its first view; slices and duplicates get
// their own. Ownership: exactly one ByteBuf handle points to a view and destroys it.
struct BufView {
  BufRoot* root = nullptr;
  size_t adjustment = 0;                     // offset of index 0 in root->memory
  size_t fixed_capacity = kDynamicCapacity;  // slices: their length
  size_t reader = 0;
  size_t writer = 0;
  size_t marked_reader = 0;
  size_t marked_writer = 0;
  bool owns_ref = false;  // the handle releases one reference when destroyed
  int32_t retained = 0;   // Retain()s through this handle not yet Release()d
  bool embedded = false;  // this is BufRoot::view (not separately allocated)
};

// One allocation. Lifetime: `memory` lives while `refcnt > 0`; the BufRoot itself lives
// while any view points to it (`views > 0`), so that a handle used after the last
// release sees `refcnt == 0` instead of freed memory.
struct BufRoot {
  BufView view;                  // the root's own view
  uint8_t* memory = nullptr;     // null once freed (or when alloc_size == 0)
  size_t capacity = 0;           // logical capacity seen by users
  size_t max_capacity = 0;
  size_t alloc_size = 0;         // bytes actually behind `memory` (>= capacity)
  int size_class = -1;           // the allocator's tag for `memory`
  std::atomic<int32_t> refcnt{0};
  std::atomic<int32_t> views{0};
  ByteBufAllocator* alloc = nullptr;
  // Debug leak tracking (filled in when !NDEBUG): where it was allocated, and the
  // allocator's list of live roots.
  SourceSite site;
  BufRoot* live_prev = nullptr;
  BufRoot* live_next = nullptr;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CHANNEL_INTERNAL_BYTE_BUF_CORE_H_
