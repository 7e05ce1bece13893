// ByteBuf: a reference-counted byte buffer with separate reader and writer indices,
// growable up to a maximum capacity, with slices and duplicates that share its memory.
//
//   GYRE_ASSIGN_OR_RETURN(gyre::ByteBuf buf,
//                         gyre::PooledByteBufAllocator::Default()->Buffer(64));
//   GYRE_RETURN_IF_ERROR(buf.WriteU32(0xCAFEBABE));
//   GYRE_RETURN_IF_ERROR(buf.WriteBytes("hello"));
//   GYRE_ASSIGN_OR_RETURN(uint32_t magic, buf.ReadU32());
//   absl::string_view rest = buf.ReadableView();   // "hello"
//   // `buf` releases its reference when it goes out of scope.
//
// Thread safety: a ByteBuf handle is thread-compatible (one thread at a time; it may be
// moved to another thread). Retain(), Release() and RefCount() are thread-safe across
// handles that share a root, so buffers may be released on a different thread than the
// one that allocated them. Reading through one handle while another handle writes the
// same bytes or grows the buffer is a data race, as with any memory.
#ifndef GYRE_CHANNEL_BYTE_BUF_H_
#define GYRE_CHANNEL_BYTE_BUF_H_

#include <sys/uio.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gyre/channel/internal/byte_buf_core.h"

namespace gyre {

class ByteBufAllocator;

// ByteBuf is a move-only handle (one pointer) to a view of a reference-counted buffer.
//
// Layout (Netty's):
//
//   +-------------------+------------------+------------------+
//   | discardable bytes |  readable bytes  |  writable bytes  |
//   +-------------------+------------------+------------------+
//   0      <=      reader_index   <=   writer_index    <=    capacity  <= max_capacity
//
// Write* appends at writer_index and grows the buffer (EnsureWritable) up to
// max_capacity; Read* consumes from reader_index; Get*/Set* work at an absolute index
// in [0, capacity) and move no index. Integers are big-endian (network order) unless the
// name ends in LE. The widths are 8, 16, 24, 32 and 64 bits, unsigned (U) and signed
// (I); 24-bit values travel in 32-bit integers (signed ones sign-extended on read).
//
// Errors: nothing here crashes or touches memory out of range. Every access returns an
// absl::Status or absl::StatusOr:
//   OutOfRange          the index/length is outside the buffer (not enough readable
//                       bytes; a write beyond max_capacity; a slice outside capacity)
//   FailedPrecondition  the handle is empty (default-constructed or moved from), or the
//                       buffer was already released (RefCount() == 0)
//   ResourceExhausted   growing needed memory the allocator could not provide
//   InvalidArgument     a bad argument that is not a range (e.g. Retain(0))
// A failed call changes nothing.
//
// Slices and duplicates: Slice()/Duplicate() share the memory and the reference count of
// the root buffer, with their own indices (a slice has a fixed capacity: its length;
// a duplicate sees the root's whole, growable capacity). They never copy. Copy() copies.
//
// Ownership: a handle either owns one reference to the buffer or none.
//   - Handles from an allocator, RetainedSlice(), RetainedDuplicate(), Copy() and
//     ReadBytes(n) own one. Destroying (or Reset()) such a handle releases it.
//   - Slice() and Duplicate() own none: they borrow, valid while the root is alive.
//     Used after the last release they return FailedPrecondition (never freed memory).
//   - Retain() adds a reference owned by no handle; it must be balanced by an explicit
//     Release() on some handle of the same buffer. Release() on a handle first balances
//     that handle's own Retain()s, then drops the reference the handle owns (which its
//     destructor then no longer releases), then references held elsewhere (Netty's
//     "release through a slice"). When the last handle of a buffer goes away while
//     references remain, that is a leak: the allocator counts it
//     (ByteBufAllocator::LeakedBuffers()), logs it with the allocation site in debug
//     builds, and reclaims the memory.
// Passing a buffer along (a pipeline message) is a move: one pointer, no atomics.
// Every buffer's allocator must outlive it.
class ByteBuf {
 public:
  // A handle is one pointer that its move leaves null: moving it and destroying the
  // source is the same as copying its bytes (Message relies on this).
  using IsTriviallyRelocatable = std::true_type;

  // An empty handle: every access returns FailedPrecondition.
  ByteBuf() = default;
  ByteBuf(ByteBuf&& other) noexcept : v_(std::exchange(other.v_, nullptr)) {}
  ByteBuf& operator=(ByteBuf&& other) noexcept {
    if (this != &other) {
      Reset();
      v_ = std::exchange(other.v_, nullptr);
    }
    return *this;
  }
  ByteBuf(const ByteBuf&) = delete;
  ByteBuf& operator=(const ByteBuf&) = delete;
  ~ByteBuf() {
    if (v_ != nullptr) Drop();
  }

  // Releases the reference this handle owns (if any) and empties the handle.
  void Reset() {
    if (v_ != nullptr) {
      Drop();
      v_ = nullptr;
    }
  }

  // True unless empty (default-constructed, moved from, or Reset()).
  explicit operator bool() const { return v_ != nullptr; }

  // --- Indices and capacity (an empty handle reports zeros) ---

  size_t reader_index() const { return v_ ? v_->reader : 0; }
  size_t writer_index() const { return v_ ? v_->writer : 0; }
  size_t capacity() const { return v_ ? Capacity() : 0; }
  size_t max_capacity() const;
  size_t ReadableBytes() const { return v_ ? v_->writer - v_->reader : 0; }
  size_t WritableBytes() const { return v_ ? Capacity() - v_->writer : 0; }
  // Bytes writable by growing up to max_capacity().
  size_t MaxWritableBytes() const { return v_ ? max_capacity() - v_->writer : 0; }
  bool IsReadable(size_t n = 1) const { return ReadableBytes() >= n; }
  bool IsWritable(size_t n = 1) const { return WritableBytes() >= n; }

  // Sets the reader index; OutOfRange unless index <= writer_index().
  absl::Status SetReaderIndex(size_t index);
  // Sets the writer index; OutOfRange unless reader_index() <= index <= capacity().
  // Inline: a transport's read commits what recv wrote with it.
  absl::Status SetWriterIndex(size_t index) {
    if (ABSL_PREDICT_FALSE(v_ == nullptr || index < v_->reader || index > Capacity())) {
      return WriterIndexError(index);
    }
    v_->writer = index;
    return absl::OkStatus();
  }
  // Sets both; OutOfRange unless reader <= writer <= capacity().
  absl::Status SetIndex(size_t reader, size_t writer);
  // Sets both indices to 0 (contents untouched). No-op on an empty handle.
  void Clear() {
    if (v_) v_->reader = v_->writer = 0;
  }
  void MarkReaderIndex() {
    if (v_) v_->marked_reader = v_->reader;
  }
  // Restores the marked reader index; OutOfRange if it is now beyond writer_index().
  absl::Status ResetReaderIndex();
  void MarkWriterIndex() {
    if (v_) v_->marked_writer = v_->writer;
  }
  // Restores the marked writer index; OutOfRange if it is now before reader_index().
  absl::Status ResetWriterIndex();

  // Makes room for `n` more bytes at writer_index(), growing the capacity (doubling
  // from 64 B, then in 4 MiB steps, capped at max_capacity()). OutOfRange if
  // writer_index() + n > max_capacity() (a slice never grows); ResourceExhausted if the
  // allocator has no memory; FailedPrecondition if released.
  absl::Status EnsureWritable(size_t n) {
    if (ABSL_PREDICT_TRUE(v_ != nullptr && Alive() && n <= Capacity() - v_->writer)) {
      return absl::OkStatus();
    }
    return EnsureWritableSlow(n);
  }

  // Moves the readable bytes to index 0 (reader_index() becomes 0), adjusting marks.
  absl::Status DiscardReadBytes();

  // --- Integers: Get*/Set* at an index, Read*/Write* at the indices ---

#define GYRE_BYTE_BUF_INT_ACCESSORS_(Name, Type, Width, LE)                      \
  absl::StatusOr<Type> Get##Name(size_t index) const {                           \
    return GetInt<Type, Width, LE>(index);                                       \
  }                                                                              \
  absl::Status Set##Name(size_t index, Type value) {                             \
    return SetInt<Type, Width, LE>(index, value);                                \
  }                                                                              \
  absl::StatusOr<Type> Read##Name() { return ReadInt<Type, Width, LE>(); }       \
  absl::Status Write##Name(Type value) { return WriteInt<Type, Width, LE>(value); }

  GYRE_BYTE_BUF_INT_ACCESSORS_(U8, uint8_t, 1, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I8, int8_t, 1, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U16, uint16_t, 2, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U16LE, uint16_t, 2, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I16, int16_t, 2, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I16LE, int16_t, 2, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U24, uint32_t, 3, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U24LE, uint32_t, 3, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I24, int32_t, 3, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I24LE, int32_t, 3, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U32, uint32_t, 4, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U32LE, uint32_t, 4, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I32, int32_t, 4, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I32LE, int32_t, 4, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U64, uint64_t, 8, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(U64LE, uint64_t, 8, true)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I64, int64_t, 8, false)
  GYRE_BYTE_BUF_INT_ACCESSORS_(I64LE, int64_t, 8, true)
#undef GYRE_BYTE_BUF_INT_ACCESSORS_

  // --- Bytes ---

  // Appends `bytes` (growing as needed).
  absl::Status WriteBytes(absl::string_view bytes);
  // Appends the readable bytes of `src` (which may share this buffer's memory); `src`'s
  // indices do not move.
  absl::Status WriteBytes(const ByteBuf& src);
  // Appends `n` zero bytes.
  absl::Status WriteZero(size_t n);
  // Copies bytes [index, index + bytes.size()) from `bytes`; no index moves.
  absl::Status SetBytes(size_t index, absl::string_view bytes);
  // Copies `n` bytes at `index` into `dst`; no index moves.
  absl::Status GetBytes(size_t index, void* dst, size_t n) const;
  // Copies the next `n` readable bytes into `dst` and advances reader_index().
  absl::Status ReadBytes(void* dst, size_t n);
  // Reads the next `n` bytes into a new buffer (from the same allocator) that the
  // returned handle owns.
  absl::StatusOr<ByteBuf> ReadBytes(size_t n);
  // Reads the next `n` bytes as a borrowed slice (no copy) / as an owning slice.
  absl::StatusOr<ByteBuf> ReadSlice(size_t n);
  absl::StatusOr<ByteBuf> ReadRetainedSlice(size_t n);
  // Advances reader_index() by `n`; OutOfRange if fewer bytes are readable.
  absl::Status Skip(size_t n);

  // Returns the first index in [from, to) holding `value` (or, when from > to, the last
  // one in [to, from)), or -1 if there is none. The range is clamped to [0, capacity())
  // as Netty does. FailedPrecondition if released or empty.
  absl::StatusOr<int64_t> IndexOf(size_t from, size_t to, uint8_t value) const;
  // Returns the number of readable bytes before the first `value`, or -1.
  absl::StatusOr<int64_t> BytesBefore(uint8_t value) const;

  // The readable bytes, valid until the buffer is written to, grown, or released.
  // gyre buffers are contiguous, so this is always the whole readable region; an empty
  // view for an empty handle or a released buffer.
  absl::string_view ReadableView() const;
  // Fills `out` with iovecs covering the readable bytes (for writev) and returns how
  // many it used: 0 when nothing is readable (or released), else 1 for a ByteBuf.
  size_t ReadableIovecs(absl::Span<iovec> out) const;
  // The writable region [writer_index(), capacity()) as raw memory, for a transport
  // that reads straight into the buffer and then advances the writer index with
  // SetWriterIndex. Valid until the buffer grows or is released; empty for an empty
  // handle or a released buffer.
  absl::Span<uint8_t> WritableSpan() const;
  // The readable bytes as a string (a copy); empty if released.
  std::string ToString() const { return std::string(ReadableView()); }

  // --- Derived buffers ---

  // Returns a view of [index, index + length) sharing memory and reference count,
  // owning no reference (Retained*: owning one new reference). Its reader index is 0,
  // writer index `length`, capacity and max capacity `length`. OutOfRange unless
  // index + length <= capacity(); ResourceExhausted if no memory for the view.
  absl::StatusOr<ByteBuf> Slice(size_t index, size_t length) const;
  absl::StatusOr<ByteBuf> RetainedSlice(size_t index, size_t length) const;
  // Slice(reader_index(), ReadableBytes()).
  absl::StatusOr<ByteBuf> Slice() const;
  absl::StatusOr<ByteBuf> RetainedSlice() const;
  // Returns a view of the whole buffer with this handle's indices and marks, sharing
  // memory, capacity and reference count (Retained*: owning one new reference).
  absl::StatusOr<ByteBuf> Duplicate() const;
  absl::StatusOr<ByteBuf> RetainedDuplicate() const;
  // Returns a new buffer (same allocator) holding a copy of [index, index + length) /
  // of the readable bytes; the returned handle owns it.
  absl::StatusOr<ByteBuf> Copy(size_t index, size_t length) const;
  absl::StatusOr<ByteBuf> Copy() const;

  // --- Reference counting (thread-safe) ---

  // Adds `n` references owned by no handle (balance each with Release()).
  // FailedPrecondition if already released or empty; InvalidArgument if n <= 0 or the
  // count would overflow.
  absl::Status Retain(int32_t n = 1);
  // Drops `n` references; returns true if this call released the buffer (count reached
  // 0 and the memory went back to its allocator). Which references it drops: see
  // Ownership above. Returns false, changing nothing, if the count is below `n`
  // (over-release; logged in debug builds) or the handle is empty.
  bool Release(int32_t n = 1);
  // The current reference count (0 once released or for an empty handle). A snapshot:
  // other threads may change it.
  int32_t RefCount() const;
  // True if this handle owns one reference (released when it is destroyed).
  bool OwnsReference() const { return v_ != nullptr && v_->owns_ref; }
  // The allocator this buffer came from (null for an empty handle).
  ByteBufAllocator* alloc() const { return v_ ? v_->root->alloc : nullptr; }

 private:
  friend class ByteBufAllocator;
  explicit ByteBuf(internal::BufView* v) : v_(v) {}

  // SetWriterIndex's error for `index`.
  absl::Status WriterIndexError(size_t index) const;

  size_t Capacity() const {
    return v_->fixed_capacity == internal::kDynamicCapacity ? v_->root->capacity
                                                             : v_->fixed_capacity;
  }
  // Relaxed is enough: this only detects use after the last release by this thread or
  // one it synchronized with; a concurrent release is a data race in user code.
  bool Alive() const { return v_->root->refcnt.load(std::memory_order_relaxed) > 0; }
  uint8_t* Data() const { return v_->root->memory + v_->adjustment; }
  bool CanAccess(size_t index, size_t n) const {
    return v_ != nullptr && Alive() && index <= Capacity() && n <= Capacity() - index;
  }

  template <typename T, size_t N, bool LE>
  static T Load(const uint8_t* p) {
    using U = std::make_unsigned_t<T>;
    if constexpr (N == 3) {
      uint32_t v = LE ? (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16)
                      : (uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | uint32_t{p[2]});
      if constexpr (std::is_signed_v<T>) {
        return static_cast<T>(static_cast<int32_t>(v << 8) >> 8);
      } else {
        return static_cast<T>(v);
      }
    } else {
      U v;
      std::memcpy(&v, p, N);
      if constexpr (N > 1 && (LE != (std::endian::native == std::endian::little))) {
        v = ByteSwap(v);
      }
      return static_cast<T>(v);
    }
  }
  template <typename T, size_t N, bool LE>
  static void Store(uint8_t* p, T value) {
    using U = std::make_unsigned_t<T>;
    U v = static_cast<U>(value);
    if constexpr (N == 3) {
      const uint32_t w = static_cast<uint32_t>(v);
      if (LE) {
        p[0] = static_cast<uint8_t>(w);
        p[1] = static_cast<uint8_t>(w >> 8);
        p[2] = static_cast<uint8_t>(w >> 16);
      } else {
        p[0] = static_cast<uint8_t>(w >> 16);
        p[1] = static_cast<uint8_t>(w >> 8);
        p[2] = static_cast<uint8_t>(w);
      }
    } else {
      if constexpr (N > 1 && (LE != (std::endian::native == std::endian::little))) {
        v = ByteSwap(v);
      }
      std::memcpy(p, &v, N);
    }
  }
  template <typename U>
  static U ByteSwap(U v) {
    if constexpr (sizeof(U) == 2) return __builtin_bswap16(v);
    if constexpr (sizeof(U) == 4) return __builtin_bswap32(v);
    if constexpr (sizeof(U) == 8) return __builtin_bswap64(v);
    return v;
  }

  template <typename T, size_t N, bool LE>
  absl::StatusOr<T> GetInt(size_t index) const {
    if (ABSL_PREDICT_FALSE(!CanAccess(index, N))) return AccessError(index, N);
    return Load<T, N, LE>(Data() + index);
  }
  template <typename T, size_t N, bool LE>
  absl::Status SetInt(size_t index, T value) {
    if (ABSL_PREDICT_FALSE(!CanAccess(index, N))) return AccessError(index, N);
    Store<T, N, LE>(Data() + index, value);
    return absl::OkStatus();
  }
  template <typename T, size_t N, bool LE>
  absl::StatusOr<T> ReadInt() {
    if (ABSL_PREDICT_FALSE(v_ == nullptr || !Alive() || v_->writer - v_->reader < N)) {
      return ReadError(N);
    }
    T value = Load<T, N, LE>(Data() + v_->reader);
    v_->reader += N;
    return value;
  }
  template <typename T, size_t N, bool LE>
  absl::Status WriteInt(T value) {
    if (ABSL_PREDICT_FALSE(v_ == nullptr || !Alive() || Capacity() - v_->writer < N)) {
      absl::Status s = EnsureWritable(N);
      if (!s.ok()) return s;
    }
    Store<T, N, LE>(Data() + v_->writer, value);
    v_->writer += N;
    return absl::OkStatus();
  }

  // The error for an access of `n` bytes at `index` that CanAccess() refused.
  absl::Status AccessError(size_t index, size_t n) const;
  // The error for a read of `n` bytes that the fast path refused.
  absl::Status ReadError(size_t n) const;
  absl::Status Usable() const;
  // EnsureWritable when the room is not there already (or the handle is unusable).
  absl::Status EnsureWritableSlow(size_t n);
  absl::StatusOr<ByteBuf> Derive(size_t index, size_t length, bool slice,
                                 bool retained) const;
  // Releases the owned reference (if any) and this handle's view.
  void Drop();

  internal::BufView* v_ = nullptr;
};

static_assert(sizeof(ByteBuf) == sizeof(void*), "ByteBuf must stay one pointer");

}  // namespace gyre

#endif  // GYRE_CHANNEL_BYTE_BUF_H_
