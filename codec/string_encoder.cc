#include "gyre/codec/string_encoder.h"

namespace gyre {

absl::Status StringEncoder::Encode(ChannelHandlerContext&, std::string& msg, ByteBuf& out) {
  return out.WriteBytes(msg);
}

}  // namespace gyre
