// LengthFieldPrepender: writes a length field before each outbound ByteBuf, the
// counterpart of LengthFieldBasedFrameDecoder (Netty's LengthFieldPrepender).
//
//   auto prepender = LengthFieldPrepender::Create({.length_field_length = 2});
//   // ByteBuf "abc" is written as "\x00\x03" then "abc" (two buffers, one writev)
//
// The field holds ReadableBytes() + length_adjustment (+ length_field_length when
// length_includes_length_field). The header goes out as its own small buffer (the
// payload is not copied); the payload keeps the caller's promise. A length that does
// not fit the field (or is negative) fails that write's promise with InvalidArgument
// and writes nothing. Other message types pass through.
//
// Thread safety: stateless after construction; IsSharable() is true.
// Ownership: the allocator (if given) must outlive the handler.
#ifndef GYRE_CODEC_LENGTH_FIELD_PREPENDER_H_
#define GYRE_CODEC_LENGTH_FIELD_PREPENDER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/codec/length_field_based_frame_decoder.h"

namespace gyre {

struct LengthFieldPrependerOptions {
  int length_field_length = 4;  // 1, 2, 3, 4 or 8
  int64_t length_adjustment = 0;
  bool length_includes_length_field = false;
  ByteOrder byte_order = ByteOrder::kBigEndian;
  ByteBufAllocator* allocator = nullptr;  // null: PooledByteBufAllocator::Default()
};

class LengthFieldPrepender final : public ChannelOutboundHandler {
 public:
  // InvalidArgument for a length_field_length other than 1/2/3/4/8.
  static absl::StatusOr<std::shared_ptr<LengthFieldPrepender>> Create(
      LengthFieldPrependerOptions options);

  bool IsSharable() const override { return true; }
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 private:
  explicit LengthFieldPrepender(LengthFieldPrependerOptions options) : o_(options) {}
  const LengthFieldPrependerOptions o_;
};

}  // namespace gyre

#endif  // GYRE_CODEC_LENGTH_FIELD_PREPENDER_H_
