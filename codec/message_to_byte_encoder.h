// MessageToByteEncoder<I>: the base of encoders that turn an outbound message of type I
// into bytes, as Netty's MessageToByteEncoder.
//
//   class IntEncoder final : public MessageToByteEncoder<uint32_t> {
//     absl::Status Encode(ChannelHandlerContext&, uint32_t& v, ByteBuf& out) override {
//       return out.WriteU32(v);
//     }
//   };
//
// Write(): a message holding an I (for which AcceptOutbound() is true) is encoded into a
// fresh buffer from the allocator (PooledByteBufAllocator::Default() unless another was
// given), the input is destroyed, and the buffer (even if empty, so the promise still
// completes in order) is written on with the same promise. Other messages pass through.
// If Encode() fails, nothing is written and the promise fails with its status; the
// buffer is released.
//
// Thread safety: loop-confined unless the subclass is stateless and says IsSharable().
// Ownership: the allocator (if given) must outlive the encoder.
#ifndef GYRE_CODEC_MESSAGE_TO_BYTE_ENCODER_H_
#define GYRE_CODEC_MESSAGE_TO_BYTE_ENCODER_H_

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/message.h"

namespace gyre {

template <typename I>
class MessageToByteEncoder : public ChannelOutboundHandler {
 public:
  explicit MessageToByteEncoder(ByteBufAllocator* alloc = nullptr)
      : alloc_(alloc != nullptr ? alloc : PooledByteBufAllocator::Default()) {}

  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    I* value = msg.Get<I>();
    if (value == nullptr || !AcceptOutbound(*value)) {
      ctx.Write(std::move(msg), std::move(promise));
      return;
    }
    absl::StatusOr<ByteBuf> buf = alloc_->Buffer(InitialCapacity(*value));
    if (!buf.ok()) {
      promise.TryFailure(buf.status());
      return;
    }
    absl::Status s = Encode(ctx, *value, *buf);
    msg.Reset();
    if (!s.ok()) {
      promise.TryFailure(std::move(s));
      return;
    }
    ctx.Write(*std::move(buf), std::move(promise));
  }

 protected:
  // Encodes `msg` into `out`; a non-OK status fails the write.
  virtual absl::Status Encode(ChannelHandlerContext& ctx, I& msg, ByteBuf& out) = 0;
  // Whether this encoder handles `msg` (default: every I).
  virtual bool AcceptOutbound(const I& msg) { return true; }
  // The capacity of the buffer Encode() writes into (it grows as needed).
  virtual size_t InitialCapacity(const I& msg) { return 256; }

 private:
  ByteBufAllocator* const alloc_;
};

}  // namespace gyre

#endif  // GYRE_CODEC_MESSAGE_TO_BYTE_ENCODER_H_
