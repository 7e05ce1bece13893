// LineBasedFrameDecoder: splits a byte stream at line ends ("\n" or "\r\n"), as Netty's
// LineBasedFrameDecoder.
//
//   pipeline.AddLast("lines", std::make_shared<LineBasedFrameDecoder>(8192)).IgnoreError();
//   // "ab\r\ncd\n" -> ByteBuf "ab", ByteBuf "cd"   (strip_delimiter = true)
//
// Each frame is a ByteBuf sharing the cumulation's memory (a retained slice).
//
// Too long: a line longer than `max_length` (delimiter excluded) is discarded up to and
// including its line end and reported through ExceptionCaught as TooLongFrame
// (codec_status.h); decoding goes on with the next line, so the channel stays usable.
// With fail_fast the error is raised as soon as more than max_length bytes without a
// line end have arrived (then the rest of the line is discarded silently); without it,
// once the end of the over-long line is seen.
//
// Thread safety: loop-confined. Ownership: as ByteToMessageDecoder.
#ifndef GYRE_CODEC_LINE_BASED_FRAME_DECODER_H_
#define GYRE_CODEC_LINE_BASED_FRAME_DECODER_H_

#include <cstddef>

#include "gyre/codec/byte_to_message_decoder.h"

namespace gyre {

class LineBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  // `max_length` must be positive (a non-positive value is treated as 1).
  explicit LineBasedFrameDecoder(size_t max_length, bool strip_delimiter = true,
                                 bool fail_fast = false);

 protected:
  absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override;

 private:
  // Index of the line end ('\r' of "\r\n", else '\n') at or after the reader index, or -1.
  int64_t FindEndOfLine(const ByteBuf& in);
  void Fail(ChannelHandlerContext& ctx, size_t length, bool discarding);

  const size_t max_length_;
  const bool strip_delimiter_;
  const bool fail_fast_;
  bool discarding_ = false;
  size_t discarded_bytes_ = 0;
  // Bytes already searched for '\n' (so a long partial line is not rescanned).
  size_t offset_ = 0;
};

}  // namespace gyre

#endif  // GYRE_CODEC_LINE_BASED_FRAME_DECODER_H_
