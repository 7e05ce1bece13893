// StringEncoder: turns each outbound std::string into a ByteBuf of its bytes (from
// PooledByteBufAllocator::Default() unless another allocator is given), so handlers
// before it (LengthFieldPrepender, ...) see bytes. Other messages pass through.
//
//   pipeline.AddLast("text-out", std::make_shared<StringEncoder>()).IgnoreError();
//
// Thread safety: stateless; IsSharable() is true.
// Ownership: the allocator (if given) must outlive the encoder.
#ifndef GYRE_CODEC_STRING_ENCODER_H_
#define GYRE_CODEC_STRING_ENCODER_H_

#include <string>

#include "gyre/codec/message_to_byte_encoder.h"

namespace gyre {

class StringEncoder final : public MessageToByteEncoder<std::string> {
 public:
  using MessageToByteEncoder<std::string>::MessageToByteEncoder;
  bool IsSharable() const override { return true; }

 protected:
  absl::Status Encode(ChannelHandlerContext& ctx, std::string& msg, ByteBuf& out) override;
  size_t InitialCapacity(const std::string& msg) override { return msg.empty() ? 1 : msg.size(); }
};

}  // namespace gyre

#endif  // GYRE_CODEC_STRING_ENCODER_H_
