// DelimiterBasedFrameDecoder: splits a byte stream at any of several delimiters, as
// Netty's DelimiterBasedFrameDecoder (the earliest delimiter in the input wins).
//
//   auto dec = DelimiterBasedFrameDecoder::Create(8192, {"\0"s});
//   if (!dec.ok()) return dec.status();
//   pipeline.AddLast("frames", *std::move(dec)).IgnoreError();
//
// Each frame is a ByteBuf sharing the cumulation's memory (a retained slice).
//
// Too long: a frame longer than `max_frame_length` is discarded up to and including
// its delimiter and reported through ExceptionCaught as TooLongFrame (codec_status.h);
// decoding continues after it (also when a delimiter straddles two reads). fail_fast (the default, as in Netty) raises the error
// as soon as more than max_frame_length bytes without a delimiter arrived; otherwise
// when the delimiter after the discarded bytes shows up.
//
// Thread safety: loop-confined. Ownership: as ByteToMessageDecoder.
#ifndef GYRE_CODEC_DELIMITER_BASED_FRAME_DECODER_H_
#define GYRE_CODEC_DELIMITER_BASED_FRAME_DECODER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gyre/codec/byte_to_message_decoder.h"

namespace gyre {

class DelimiterBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  // Returns InvalidArgument if max_frame_length is 0, `delimiters` is empty, or a
  // delimiter is empty.
  static absl::StatusOr<std::shared_ptr<DelimiterBasedFrameDecoder>> Create(
      size_t max_frame_length, std::vector<std::string> delimiters,
      bool strip_delimiter = true, bool fail_fast = true);

  // The delimiters Netty's Delimiters.lineDelimiter() returns: "\r\n" and "\n".
  static std::vector<std::string> LineDelimiters();
  // A single NUL byte (Delimiters.nulDelimiter()).
  static std::vector<std::string> NulDelimiter();

 protected:
  DelimiterBasedFrameDecoder(size_t max_frame_length, std::vector<std::string> delimiters,
                             bool strip_delimiter, bool fail_fast);
  absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override;

 private:
  void Fail(ChannelHandlerContext& ctx, size_t frame_length);
  // The length of the longest suffix of `view` that is a proper prefix of a delimiter.
  size_t PendingDelimiterPrefix(absl::string_view view) const;

  const size_t max_frame_length_;
  const std::vector<std::string> delimiters_;
  const bool strip_delimiter_;
  const bool fail_fast_;
  size_t max_delim_ = 1;  // longest delimiter
  bool discarding_ = false;
  size_t too_long_frame_length_ = 0;
};

}  // namespace gyre

#endif  // GYRE_CODEC_DELIMITER_BASED_FRAME_DECODER_H_
