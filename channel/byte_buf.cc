#include "gyre/channel/byte_buf.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace {

constexpr size_t kGrowThreshold = size_t{4} << 20;  // Netty's CALCULATE_THRESHOLD

// Netty's AbstractByteBufAllocator.calculateNewCapacity: double from 64 B up to 4 MiB,
// then grow in 4 MiB steps; never beyond max_capacity.
size_t NewCapacity(size_t min_capacity, size_t max_capacity) {
  if (min_capacity == kGrowThreshold) return kGrowThreshold;
  if (min_capacity > kGrowThreshold) {
    size_t n = min_capacity / kGrowThreshold * kGrowThreshold;
    if (n > max_capacity - kGrowThreshold) return max_capacity;
    return n + kGrowThreshold;
  }
  size_t n = 64;
  while (n < min_capacity) n <<= 1;
  return std::min(n, max_capacity);
}

absl::Status Released() {
  return absl::FailedPreconditionError("ByteBuf: already released (refCnt 0)");
}

absl::Status EmptyHandle() {
  return absl::FailedPreconditionError("ByteBuf: empty handle");
}

}  // namespace

size_t ByteBuf::max_capacity() const {
  if (v_ == nullptr) return 0;
  return v_->fixed_capacity == internal::kDynamicCapacity ? v_->root->max_capacity
                                                           : v_->fixed_capacity;
}

absl::Status ByteBuf::Usable() const {
  if (v_ == nullptr) return EmptyHandle();
  if (!Alive()) return Released();
  return absl::OkStatus();
}

absl::Status ByteBuf::AccessError(size_t index, size_t n) const {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  return absl::OutOfRangeError(absl::StrCat("ByteBuf: index ", index, ", length ", n,
                                            " outside capacity ", Capacity()));
}

absl::Status ByteBuf::ReadError(size_t n) const {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  return absl::OutOfRangeError(absl::StrCat("ByteBuf: read of ", n, " bytes with ",
                                            v_->writer - v_->reader, " readable"));
}

absl::Status ByteBuf::SetReaderIndex(size_t index) {
  if (v_ == nullptr) return EmptyHandle();
  if (index > v_->writer) {
    return absl::OutOfRangeError(absl::StrCat("ByteBuf: reader index ", index,
                                              " beyond writer index ", v_->writer));
  }
  v_->reader = index;
  return absl::OkStatus();
}

absl::Status ByteBuf::WriterIndexError(size_t index) const {
  if (v_ == nullptr) return EmptyHandle();
  return absl::OutOfRangeError(absl::StrCat("ByteBuf: writer index ", index, " outside [",
                                            v_->reader, ", ", Capacity(), "]"));
}

absl::Status ByteBuf::SetIndex(size_t reader, size_t writer) {
  if (v_ == nullptr) return EmptyHandle();
  if (reader > writer || writer > Capacity()) {
    return absl::OutOfRangeError(absl::StrCat("ByteBuf: indices ", reader, ", ", writer,
                                              " invalid for capacity ", Capacity()));
  }
  v_->reader = reader;
  v_->writer = writer;
  return absl::OkStatus();
}

absl::Status ByteBuf::ResetReaderIndex() {
  if (v_ == nullptr) return EmptyHandle();
  return SetReaderIndex(v_->marked_reader);
}

absl::Status ByteBuf::ResetWriterIndex() {
  if (v_ == nullptr) return EmptyHandle();
  return SetWriterIndex(v_->marked_writer);
}

absl::Status ByteBuf::EnsureWritableSlow(size_t n) {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  const size_t capacity = Capacity();
  if (n <= capacity - v_->writer) return absl::OkStatus();
  const size_t max = max_capacity();
  if (n > max - v_->writer) {
    return absl::OutOfRangeError(absl::StrCat("ByteBuf: writer index ", v_->writer, " + ",
                                              n, " exceeds max capacity ", max));
  }
  // Only root views and duplicates get here (a slice's capacity is its max).
  internal::BufRoot* root = v_->root;
  const size_t new_capacity = NewCapacity(v_->writer + n, max);
  if (new_capacity <= root->alloc_size) {
    root->capacity = new_capacity;
    return absl::OkStatus();
  }
  return root->alloc->Grow(root, new_capacity);
}

absl::Status ByteBuf::DiscardReadBytes() {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  const size_t r = v_->reader;
  if (r == 0) return absl::OkStatus();
  const size_t readable = v_->writer - r;
  if (readable > 0) std::memmove(Data(), Data() + r, readable);
  v_->writer = readable;
  v_->reader = 0;
  v_->marked_reader = v_->marked_reader > r ? v_->marked_reader - r : 0;
  v_->marked_writer = v_->marked_writer > r ? v_->marked_writer - r : 0;
  return absl::OkStatus();
}

absl::Status ByteBuf::WriteBytes(absl::string_view bytes) {
  absl::Status s = EnsureWritable(bytes.size());
  if (!s.ok()) return s;
  if (!bytes.empty()) std::memcpy(Data() + v_->writer, bytes.data(), bytes.size());
  v_->writer += bytes.size();
  return absl::OkStatus();
}

absl::Status ByteBuf::WriteBytes(const ByteBuf& src) {
  absl::Status s = src.Usable();
  if (!s.ok()) return s;
  const size_t n = src.ReadableBytes();
  // Growing may move memory that `src` shares with this buffer: resolve src's address
  // only afterwards.
  s = EnsureWritable(n);
  if (!s.ok()) return s;
  if (n > 0) std::memmove(Data() + v_->writer, src.Data() + src.v_->reader, n);
  v_->writer += n;
  return absl::OkStatus();
}

absl::Status ByteBuf::WriteZero(size_t n) {
  absl::Status s = EnsureWritable(n);
  if (!s.ok()) return s;
  if (n > 0) std::memset(Data() + v_->writer, 0, n);
  v_->writer += n;
  return absl::OkStatus();
}

absl::Status ByteBuf::SetBytes(size_t index, absl::string_view bytes) {
  if (!CanAccess(index, bytes.size())) return AccessError(index, bytes.size());
  if (!bytes.empty()) std::memmove(Data() + index, bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status ByteBuf::GetBytes(size_t index, void* dst, size_t n) const {
  if (!CanAccess(index, n)) return AccessError(index, n);
  if (n > 0) std::memcpy(dst, Data() + index, n);
  return absl::OkStatus();
}

absl::Status ByteBuf::ReadBytes(void* dst, size_t n) {
  if (v_ == nullptr || !Alive() || ReadableBytes() < n) return ReadError(n);
  if (n > 0) std::memcpy(dst, Data() + v_->reader, n);
  v_->reader += n;
  return absl::OkStatus();
}

absl::StatusOr<ByteBuf> ByteBuf::ReadBytes(size_t n) {
  if (v_ == nullptr || !Alive() || ReadableBytes() < n) return ReadError(n);
  absl::StatusOr<ByteBuf> copy = Copy(v_->reader, n);
  if (copy.ok()) v_->reader += n;
  return copy;
}

absl::StatusOr<ByteBuf> ByteBuf::ReadSlice(size_t n) {
  if (v_ == nullptr || !Alive() || ReadableBytes() < n) return ReadError(n);
  absl::StatusOr<ByteBuf> slice = Slice(v_->reader, n);
  if (slice.ok()) v_->reader += n;
  return slice;
}

absl::StatusOr<ByteBuf> ByteBuf::ReadRetainedSlice(size_t n) {
  if (v_ == nullptr || !Alive() || ReadableBytes() < n) return ReadError(n);
  absl::StatusOr<ByteBuf> slice = RetainedSlice(v_->reader, n);
  if (slice.ok()) v_->reader += n;
  return slice;
}

absl::Status ByteBuf::Skip(size_t n) {
  if (v_ == nullptr || !Alive() || ReadableBytes() < n) return ReadError(n);
  v_->reader += n;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ByteBuf::IndexOf(size_t from, size_t to, uint8_t value) const {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  const size_t capacity = Capacity();
  const uint8_t* data = Data();
  if (from <= to) {
    to = std::min(to, capacity);
    if (from >= to) return -1;
    const void* hit = std::memchr(data + from, value, to - from);
    return hit == nullptr ? -1 : static_cast<const uint8_t*>(hit) - data;
  }
  // Backwards: the last occurrence in [to, from).
  from = std::min(from, capacity);
  for (size_t i = from; i > to; --i) {
    if (data[i - 1] == value) return static_cast<int64_t>(i - 1);
  }
  return -1;
}

absl::StatusOr<int64_t> ByteBuf::BytesBefore(uint8_t value) const {
  absl::StatusOr<int64_t> at = IndexOf(reader_index(), writer_index(), value);
  if (!at.ok() || *at < 0) return at;
  return *at - static_cast<int64_t>(v_->reader);
}

absl::string_view ByteBuf::ReadableView() const {
  if (v_ == nullptr || !Alive() || v_->writer == v_->reader) return {};
  return absl::string_view(reinterpret_cast<const char*>(Data() + v_->reader),
                           v_->writer - v_->reader);
}

absl::Span<uint8_t> ByteBuf::WritableSpan() const {
  if (v_ == nullptr || !Alive() || v_->writer >= Capacity()) return {};
  return absl::Span<uint8_t>(Data() + v_->writer, Capacity() - v_->writer);
}

size_t ByteBuf::ReadableIovecs(absl::Span<iovec> out) const {
  absl::string_view view = ReadableView();
  if (view.empty() || out.empty()) return 0;
  out[0].iov_base = const_cast<char*>(view.data());
  out[0].iov_len = view.size();
  return 1;
}

absl::StatusOr<ByteBuf> ByteBuf::Derive(size_t index, size_t length, bool slice,
                                        bool retained) const {
  absl::Status s = Usable();
  if (!s.ok()) return s;
  if (slice && (index > Capacity() || length > Capacity() - index)) {
    return AccessError(index, length);
  }
  auto* view = new (std::nothrow) internal::BufView(*v_);
  if (view == nullptr) {
    return absl::ResourceExhaustedError("ByteBuf: no memory for a derived view");
  }
  view->embedded = false;
  view->owns_ref = false;
  view->retained = 0;
  if (slice) {
    view->adjustment = v_->adjustment + index;
    view->fixed_capacity = length;
    view->reader = view->marked_reader = 0;
    view->writer = view->marked_writer = length;
  }
  internal::BufRoot* root = v_->root;
  // Relaxed: the new view is created through a live one, so the count cannot be at zero
  // concurrently; the decrement in Drop() orders the root's destruction.
  root->views.fetch_add(1, std::memory_order_relaxed);
  ByteBuf derived(view);
  if (retained) {
    s = derived.Retain(1);
    if (!s.ok()) return s;  // `derived` owns no reference: dropping it is safe
    view->owns_ref = true;
  }
  return derived;
}

absl::StatusOr<ByteBuf> ByteBuf::Slice(size_t index, size_t length) const {
  return Derive(index, length, /*slice=*/true, /*retained=*/false);
}

absl::StatusOr<ByteBuf> ByteBuf::RetainedSlice(size_t index, size_t length) const {
  return Derive(index, length, /*slice=*/true, /*retained=*/true);
}

absl::StatusOr<ByteBuf> ByteBuf::Slice() const {
  return Derive(reader_index(), ReadableBytes(), /*slice=*/true, /*retained=*/false);
}

absl::StatusOr<ByteBuf> ByteBuf::RetainedSlice() const {
  return Derive(reader_index(), ReadableBytes(), /*slice=*/true, /*retained=*/true);
}

absl::StatusOr<ByteBuf> ByteBuf::Duplicate() const {
  return Derive(0, 0, /*slice=*/false, /*retained=*/false);
}

absl::StatusOr<ByteBuf> ByteBuf::RetainedDuplicate() const {
  return Derive(0, 0, /*slice=*/false, /*retained=*/true);
}

absl::StatusOr<ByteBuf> ByteBuf::Copy(size_t index, size_t length) const {
  if (!CanAccess(index, length)) return AccessError(index, length);
  absl::StatusOr<ByteBuf> copy = v_->root->alloc->Buffer(length, max_capacity());
  if (!copy.ok()) return copy;
  if (length > 0) std::memcpy(copy->Data(), Data() + index, length);
  copy->v_->writer = length;
  return copy;
}

absl::StatusOr<ByteBuf> ByteBuf::Copy() const {
  return Copy(reader_index(), ReadableBytes());
}

absl::Status ByteBuf::Retain(int32_t n) {
  if (v_ == nullptr) return EmptyHandle();
  if (n <= 0) return absl::InvalidArgumentError("ByteBuf: Retain(n) needs n > 0");
  std::atomic<int32_t>& refcnt = v_->root->refcnt;
  int32_t old = refcnt.load(std::memory_order_relaxed);
  do {
    if (old <= 0) return Released();
    if (old > INT32_MAX - n) {
      return absl::InvalidArgumentError("ByteBuf: reference count would overflow");
    }
    // Relaxed: like a shared_ptr copy, an increment publishes nothing; the caller
    // already holds a reference that keeps the memory alive.
  } while (!refcnt.compare_exchange_weak(old, old + n, std::memory_order_relaxed,
                                         std::memory_order_relaxed));
  v_->retained += n;
  return absl::OkStatus();
}

bool ByteBuf::Release(int32_t n) {
  if (v_ == nullptr || n <= 0) return false;
  internal::BufRoot* root = v_->root;
  int32_t old = root->refcnt.load(std::memory_order_relaxed);
  do {
    if (old < n) {
#ifndef NDEBUG
      GYRE_LOG(WARNING) << "ByteBuf: Release(" << n << ") with reference count " << old
                        << " (allocated at " << root->site.file_name() << ":"
                        << root->site.line() << ")";
#endif
      return false;
    }
    // acq_rel: release orders this thread's accesses before the free; acquire makes the
    // thread that frees see every other releaser's accesses.
  } while (!root->refcnt.compare_exchange_weak(old, old - n, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
  const int32_t balanced = std::min(n, v_->retained);
  v_->retained -= balanced;
  if (n > balanced) v_->owns_ref = false;
  if (old != n) return false;
  root->alloc->ReleaseMemory(root);
  return true;
}

int32_t ByteBuf::RefCount() const {
  // Relaxed: a snapshot for diagnostics and tests.
  return v_ ? v_->root->refcnt.load(std::memory_order_relaxed) : 0;
}

void ByteBuf::Drop() {
  internal::BufView* view = v_;
  internal::BufRoot* root = view->root;
  // The common end of a buffer: this handle owns the only reference and its view is the
  // only one. No other handle exists to change either count, so no read-modify-write is
  // needed, and memory and root go back in one call. Acquire: pairs with the decrements
  // of views and references dropped earlier on other threads, as the slow path's acq_rel
  // does. (With owns_ref set, one reference is this handle's; a count of 1 leaves no other.)
  if (view->owns_ref && root->views.load(std::memory_order_acquire) == 1 &&
      root->refcnt.load(std::memory_order_acquire) == 1) {
    if (!view->embedded) delete view;
    root->alloc->ReleaseWhole(root);
    return;
  }
  if (view->owns_ref) {
    // Silent when another handle already released this reference.
    int32_t old = root->refcnt.load(std::memory_order_relaxed);
    while (old > 0 && !root->refcnt.compare_exchange_weak(old, old - 1,
                                                          std::memory_order_acq_rel,
                                                          std::memory_order_relaxed)) {
    }
    if (old == 1) root->alloc->ReleaseMemory(root);
  }
  if (!view->embedded) delete view;
  // acq_rel: the last view's owner must see every other view's accesses before it
  // frees (or recycles) the root.
  if (root->views.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    root->alloc->LastViewGone(root);
  }
}

}  // namespace gyre
