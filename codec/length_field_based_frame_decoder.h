// LengthFieldBasedFrameDecoder: splits a byte stream into frames whose length is given
// by a length field in each frame's header, as Netty's LengthFieldBasedFrameDecoder.
//
//   // 2-byte big-endian length, then that many bytes; strip the header:
//   auto dec = LengthFieldBasedFrameDecoder::Create({.max_frame_length = 65536,
//                                                    .length_field_offset = 0,
//                                                    .length_field_length = 2,
//                                                    .initial_bytes_to_strip = 2});
//   // "\x00\x03abc" -> ByteBuf "abc"
//
// The frame length is: length field value + length_adjustment + length_field_offset +
// length_field_length (the whole frame, header included); initial_bytes_to_strip bytes
// are then removed from the front of it. Length fields of 1, 2, 3 and 4 bytes are
// unsigned; an 8-byte field is signed (as Java's long).
//
// Errors (through ExceptionCaught; see codec_status.h):
//   TooLongFrame   frame length > max_frame_length. The whole frame is discarded, also
//                  the part that has not arrived yet; with fail_fast (default) the error
//                  is raised at once, else when the last discarded byte went by. The
//                  next frame decodes normally.
//   CorruptedFrame negative 8-byte length; adjusted frame length shorter than the
//                  header; initial_bytes_to_strip beyond the frame. The header (or,
//                  for the last, the frame) is skipped, as in Netty, and decoding goes on
//                  with the bytes after it (Netty stops until the next read).
//
// Thread safety: loop-confined. Ownership: as ByteToMessageDecoder; frames are retained
// slices of the cumulation.
#ifndef GYRE_CODEC_LENGTH_FIELD_BASED_FRAME_DECODER_H_
#define GYRE_CODEC_LENGTH_FIELD_BASED_FRAME_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "gyre/codec/byte_to_message_decoder.h"

namespace gyre {

enum class ByteOrder { kBigEndian, kLittleEndian };

struct LengthFieldBasedFrameDecoderOptions {
  size_t max_frame_length = 1 << 20;
  size_t length_field_offset = 0;
  int length_field_length = 4;  // 1, 2, 3, 4 or 8
  int64_t length_adjustment = 0;
  size_t initial_bytes_to_strip = 0;
  bool fail_fast = true;
  ByteOrder byte_order = ByteOrder::kBigEndian;
};

class LengthFieldBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  // Returns InvalidArgument for a length_field_length other than 1/2/3/4/8, a zero
  // max_frame_length, or length_field_offset + length_field_length > max_frame_length.
  static absl::StatusOr<std::shared_ptr<LengthFieldBasedFrameDecoder>> Create(
      LengthFieldBasedFrameDecoderOptions options);

 protected:
  explicit LengthFieldBasedFrameDecoder(LengthFieldBasedFrameDecoderOptions options);
  absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override;

 private:
  // The raw length field at `index` (signed for 8 bytes).
  int64_t ReadLength(const ByteBuf& in, size_t index) const;
  void ExceededFrameLength(ChannelHandlerContext& ctx, ByteBuf& in, int64_t frame_length);
  void DiscardTooLongFrame(ChannelHandlerContext& ctx, ByteBuf& in);
  void FailIfNecessary(ChannelHandlerContext& ctx, bool first_detection);

  const LengthFieldBasedFrameDecoderOptions o_;
  const size_t length_field_end_;
  bool discarding_ = false;
  int64_t too_long_frame_length_ = 0;
  int64_t bytes_to_discard_ = 0;
  int64_t frame_length_ = -1;  // of the frame being waited for, -1 between frames
};

}  // namespace gyre

#endif  // GYRE_CODEC_LENGTH_FIELD_BASED_FRAME_DECODER_H_
