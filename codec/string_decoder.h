// StringDecoder: turns each inbound ByteBuf into a std::string holding its bytes (the
// bytes are taken as they are: UTF-8 or any other encoding is the application's
// business). Put it after a frame decoder:
//
//   pipeline.AddLast("lines", std::make_shared<LineBasedFrameDecoder>(1024)).IgnoreError();
//   pipeline.AddLast("text", std::make_shared<StringDecoder>()).IgnoreError();
//
// Other messages pass through.
//
// Thread safety: stateless; IsSharable() is true.
#ifndef GYRE_CODEC_STRING_DECODER_H_
#define GYRE_CODEC_STRING_DECODER_H_

#include "gyre/channel/channel_handler.h"

namespace gyre {

class StringDecoder final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override;
};

}  // namespace gyre

#endif  // GYRE_CODEC_STRING_DECODER_H_
