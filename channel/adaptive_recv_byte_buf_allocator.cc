#include "gyre/channel/adaptive_recv_byte_buf_allocator.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"

namespace gyre {
namespace {

constexpr int kIndexIncrement = 4;
constexpr int kIndexDecrement = 1;
constexpr size_t kLargest = size_t{1} << 30;

// 16, 32, ..., 496, then 512, 1024, ..., 1 GiB (Netty's SIZE_TABLE up to 1 GiB).
constexpr int kTableSize = 31 + 22;
constexpr std::array<size_t, kTableSize> MakeTable() {
  std::array<size_t, kTableSize> t{};
  int i = 0;
  for (size_t s = 16; s < 512; s += 16) t[i++] = s;
  for (size_t s = 512; s <= kLargest; s <<= 1) t[i++] = s;
  return t;
}
constexpr std::array<size_t, kTableSize> kSizeTable = MakeTable();

// The index of the smallest table size >= size (the last one if none).
int SizeIndex(size_t size) {
  auto it = std::lower_bound(kSizeTable.begin(), kSizeTable.end(), size);
  if (it == kSizeTable.end()) return kTableSize - 1;
  return static_cast<int>(it - kSizeTable.begin());
}

}  // namespace

absl::Status AdaptiveRecvByteBufAllocator::Validate(const Options& o) {
  if (o.minimum == 0 || o.minimum > o.initial || o.initial > o.maximum || o.maximum > kLargest) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive read buffer sizes need 0 < minimum <= initial <= maximum <= 1 GiB; got ",
                     o.minimum, ", ", o.initial, ", ", o.maximum));
  }
  return absl::OkStatus();
}

AdaptiveRecvByteBufAllocator::Handle::Handle(Options options) {
  if (!Validate(options).ok()) options = Options{};
  // As Netty: the minimum rounds up to a table size, the maximum down to one.
  min_index_ = SizeIndex(options.minimum);
  max_index_ = SizeIndex(options.maximum);
  if (kSizeTable[max_index_] > options.maximum && max_index_ > min_index_) --max_index_;
  index_ = std::clamp(SizeIndex(options.initial), min_index_, max_index_);
  next_size_ = kSizeTable[index_];
}

AdaptiveRecvByteBufAllocator::Handle::Handle() : Handle(Options{}) {}

void AdaptiveRecvByteBufAllocator::Handle::Reset(int max_messages_per_read) {
  max_messages_ = std::max(1, max_messages_per_read);
  messages_ = 0;
  total_bytes_ = 0;
  last_bytes_ = 0;
  last_attempted_ = 0;
}

void AdaptiveRecvByteBufAllocator::Handle::LastBytesRead(int64_t bytes, size_t attempted) {
  last_bytes_ = bytes;
  last_attempted_ = attempted;
  if (bytes <= 0) return;
  ++messages_;
  total_bytes_ += bytes;
  // A full buffer: more is likely waiting, so grow before the next read of this loop.
  if (static_cast<size_t>(bytes) == attempted) Record(bytes);
}

bool AdaptiveRecvByteBufAllocator::Handle::ContinueReading() const {
  return messages_ < max_messages_ && last_bytes_ > 0 &&
         static_cast<size_t>(last_bytes_) == last_attempted_;
}

void AdaptiveRecvByteBufAllocator::Handle::ReadComplete() { Record(total_bytes_); }

void AdaptiveRecvByteBufAllocator::Handle::Record(int64_t actual) {
  const size_t bytes = actual > 0 ? static_cast<size_t>(actual) : 0;
  // Shrink only onto a size the loop's bytes would not have filled. Netty shrinks when the
  // bytes fit the step below exactly too; then a stream of same-sized messages settles on a
  // guess equal to the message, every read fills its buffer, and each loop pays a second
  // read that finds the socket empty (and a four-step growth that starts the cycle again).
  if (index_ > min_index_ && bytes < kSizeTable[std::max(0, index_ - kIndexDecrement)]) {
    if (decrease_now_) {
      index_ = std::max(index_ - kIndexDecrement, min_index_);
      next_size_ = kSizeTable[index_];
      decrease_now_ = false;
    } else {
      decrease_now_ = true;
    }
  } else if (bytes >= next_size_) {
    index_ = std::min(index_ + kIndexIncrement, max_index_);
    next_size_ = kSizeTable[index_];
    decrease_now_ = false;
  }
}

}  // namespace gyre
