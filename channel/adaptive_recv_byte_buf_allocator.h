// AdaptiveRecvByteBufAllocator: picks the size of the next read buffer from the sizes of
// recent reads, as Netty's AdaptiveRecvByteBufAllocator does.
//
//   AdaptiveRecvByteBufAllocator::Handle h;   // 64 B .. 64 KiB, 2 KiB first
//   h.Reset(max_messages_per_read);
//   do {
//     size_t attempt = h.Guess();              // allocate a buffer of this size
//     ssize_t n = recv(fd, buf, attempt, 0);
//     h.LastBytesRead(n, attempt);
//   } while (h.ContinueReading());
//   h.ReadComplete();
//
// Sizes come from Netty's table (16 B steps up to 496 B, then powers of two), clamped to
// [minimum, maximum]. A read that fills its buffer grows the guess at once by four steps
// of the table; the guess shrinks by one step only after two consecutive read loops whose
// total is less than the step below it. (Netty also shrinks when the total equals that
// step; gyre does not, so same-sized messages never settle on a guess they fill exactly,
// which would cost every read loop an extra read that finds the socket empty.) A read
// loop continues while each read filled its buffer and fewer than max_messages_per_read
// reads were made.
//
// Thread safety: a Handle is thread-compatible (one per channel, used on its loop).
// Ownership: a value type.
#ifndef GYRE_CHANNEL_ADAPTIVE_RECV_BYTE_BUF_ALLOCATOR_H_
#define GYRE_CHANNEL_ADAPTIVE_RECV_BYTE_BUF_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace gyre {

class AdaptiveRecvByteBufAllocator {
 public:
  static constexpr size_t kDefaultMinimum = 64;
  static constexpr size_t kDefaultInitial = 2048;
  static constexpr size_t kDefaultMaximum = 65536;

  struct Options {
    size_t minimum = kDefaultMinimum;
    size_t initial = kDefaultInitial;
    size_t maximum = kDefaultMaximum;
  };

  // InvalidArgument unless 0 < minimum <= initial <= maximum <= 1 GiB.
  static absl::Status Validate(const Options& options);

  class Handle {
   public:
    // `options` must be valid (see Validate); invalid ones fall back to the defaults.
    explicit Handle(Options options);
    Handle();  // the default bounds

    // Starts a read loop that makes at most `max_messages_per_read` reads (>= 1).
    void Reset(int max_messages_per_read);
    // The buffer size for the next read.
    size_t Guess() const { return next_size_; }
    // Records one read of `bytes` (<= 0: nothing read) into a buffer of `attempted`.
    void LastBytesRead(int64_t bytes, size_t attempted);
    // True while the last read filled its buffer and the read budget is not used up.
    bool ContinueReading() const;
    // Ends the read loop: adapts the guess to the bytes read in it.
    void ReadComplete();

    int messages() const { return messages_; }
    int64_t total_bytes() const { return total_bytes_; }

   private:
    void Record(int64_t actual);

    int min_index_;
    int max_index_;
    int index_;
    size_t next_size_;
    bool decrease_now_ = false;
    int max_messages_ = 16;
    int messages_ = 0;
    int64_t total_bytes_ = 0;
    int64_t last_bytes_ = 0;
    size_t last_attempted_ = 0;
  };
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_ADAPTIVE_RECV_BYTE_BUF_ALLOCATOR_H_
