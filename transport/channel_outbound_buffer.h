// ChannelOutboundBuffer: a socket channel's queue of writes: what was written and not
// yet flushed, what was flushed and not yet handed to the kernel, the bytes pending
// against the channel's write-buffer water marks, and the writability that follows
// them.
//
//   outbound_.Add(std::move(msg), std::move(promise));  // Unsafe::Write
//   outbound_.AddFlush();                               // Unsafe::Flush
//   absl::Status s = outbound_.WriteTo(fd);             // when the socket has room
//
// Add takes a ByteBuf (moved) or a std::string (copied into a pooled buffer) and fails
// the promise with InvalidArgument for anything else. WriteTo gathers the flushed
// buffers into one sendmsg (MSG_NOSIGNAL: a reset peer is an EPIPE status, not a
// SIGPIPE) per round, up to kWriteSpins rounds, retires what the kernel took and
// completes each write's promise once all its bytes went. The pending bytes rise with
// Add and fall as bytes are handed over; crossing WRITE_BUFFER_HIGH_WATER_MARK upwards
// makes the channel unwritable, falling below WRITE_BUFFER_LOW_WATER_MARK writable
// again, and each change fires ChannelWritabilityChanged on the channel's pipeline.
// FailAll drops everything (buffers released before the promises fail; no
// writability change fires). A write with the void promise (VoidPromise()) completes
// nothing; its failure goes to the pipeline's ExceptionCaught (once for all the void
// writes FailAll drops).
//
// Re-entrancy: promise listeners and writability handlers run inside WriteTo and may
// write, flush or close the channel; a WriteTo called from inside one returns at once
// and the outer call picks up what was added.
//
// Thread safety: loop-confined (the owning channel guards it with its loop affinity),
// except IsWritable() and pending_bytes(), which any thread may call.
// Ownership: owned by its channel, which it refers to (and must not outlive).
#ifndef GYRE_TRANSPORT_CHANNEL_OUTBOUND_BUFFER_H_
#define GYRE_TRANSPORT_CHANNEL_OUTBOUND_BUFFER_H_

#include <atomic>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/message.h"

namespace gyre {

class ChannelOutboundBuffer {
 public:
  // Buffers gathered into one sendmsg, and sendmsg rounds per WriteTo.
  static constexpr int kMaxIov = 64;
  static constexpr int kWriteSpins = 16;

  // `channel` supplies the water marks (its config) and the pipeline that hears of
  // writability changes; `owner` names the channel type in errors.
  ChannelOutboundBuffer(Channel* channel, absl::string_view owner)
      : channel_(channel), owner_(owner) {}
  ChannelOutboundBuffer(const ChannelOutboundBuffer&) = delete;
  ChannelOutboundBuffer& operator=(const ChannelOutboundBuffer&) = delete;
  // Releases the queued buffers; their promises are dropped, not completed.
  ~ChannelOutboundBuffer();

  // Queues `msg` as unflushed (leaving it empty); fails `promise` when `msg` is not a
  // buffer or a string (or the copy cannot be allocated).
  void Add(Message&& msg, ChannelPromise promise) {
    if (ByteBuf* b = msg.Get<ByteBuf>()) {
      Enqueue(std::move(*b), std::move(promise));
      msg.Reset();
      return;
    }
    AddOther(std::move(msg), std::move(promise));
  }
  // Everything queued so far is to be written.
  void AddFlush() { flushed_end_ = tail_; }
  // Hands flushed bytes to `fd` until none are left, the socket is full, or
  // kWriteSpins rounds ran. Returns the errno status of a failed send (the caller
  // closes the channel); OK otherwise, also when called re-entrantly.
  absl::Status WriteTo(int fd);
  // Fails every queued write with `failure` and forgets its bytes.
  void FailAll(const absl::Status& failure);

  // Flushed bytes wait for the kernel.
  bool HasFlushed() const { return head_ != flushed_end_; }
  // Nothing queued, flushed or not.
  bool empty() const { return head_ == tail_; }

  // Any thread. Relaxed: a hint for producers; the loop is the only writer.
  bool IsWritable() const { return writable_.load(std::memory_order_relaxed); }
  // Any thread. Bytes written and not yet handed to the kernel (relaxed snapshot).
  int64_t pending_bytes() const { return pending_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    ByteBuf buf;
    ChannelPromise promise;
  };

  void Enqueue(ByteBuf&& buf, ChannelPromise&& promise) {
    int64_t size = static_cast<int64_t>(buf.ReadableBytes());
    if (tail_ - head_ == capacity_) Grow();
    new (&At(tail_)) Pending{std::move(buf), std::move(promise)};
    ++tail_;
    AddPending(size);
  }
  Pending& At(uint64_t i) { return slots_[i & (capacity_ - 1)]; }
  // Destroys the oldest write's slot (its promise moved out first if wanted).
  void PopFront() {
    At(head_).~Pending();
    ++head_;
  }
  void Grow();
  void AddOther(Message&& msg, ChannelPromise&& promise);
  void AddPending(int64_t delta);
  void SetWritable(bool writable);

  Channel* const channel_;
  const absl::string_view owner_;
  // The queued writes, oldest first, in a power-of-two ring of raw slots:
  // [head_, flushed_end_) flushed, [flushed_end_, tail_) not yet. The indices only grow
  // (slot = index & (capacity_ - 1)); a flush moves one index, not the writes.
  Pending* slots_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t head_ = 0;
  uint64_t flushed_end_ = 0;
  uint64_t tail_ = 0;
  std::vector<ChannelPromise> done_;  // WriteTo's completed promises, reused
  bool in_write_ = false;
  std::atomic<bool> writable_{true};
  std::atomic<int64_t> pending_bytes_{0};
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_CHANNEL_OUTBOUND_BUFFER_H_
