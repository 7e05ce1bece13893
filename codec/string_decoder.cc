#include "gyre/codec/string_decoder.h"

#include <string>
#include <utility>

#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_handler_context.h"

namespace gyre {

void StringDecoder::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  if (ByteBuf* buf = msg.Get<ByteBuf>()) {
    std::string text(buf->ReadableView());
    msg.Reset();
    ctx.FireChannelRead(std::move(text));
    return;
  }
  ctx.FireChannelRead(std::move(msg));
}

}  // namespace gyre
