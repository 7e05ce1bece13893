#include "gyre/codec/line_based_frame_decoder.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "gyre/codec/codec_status.h"

namespace gyre {

LineBasedFrameDecoder::LineBasedFrameDecoder(size_t max_length, bool strip_delimiter,
                                             bool fail_fast)
    : max_length_(max_length > 0 ? max_length : 1),
      strip_delimiter_(strip_delimiter),
      fail_fast_(fail_fast) {}

int64_t LineBasedFrameDecoder::FindEndOfLine(const ByteBuf& in) {
  absl::string_view view = in.ReadableView();
  if (offset_ > view.size()) offset_ = 0;
  const void* hit = std::memchr(view.data() + offset_, '\n', view.size() - offset_);
  if (hit == nullptr) {
    offset_ = view.size();
    return -1;
  }
  offset_ = 0;
  size_t i = static_cast<size_t>(static_cast<const char*>(hit) - view.data());
  if (i > 0 && view[i - 1] == '\r') --i;
  return static_cast<int64_t>(in.reader_index() + i);
}

void LineBasedFrameDecoder::Fail(ChannelHandlerContext& ctx, size_t length, bool discarding) {
  ctx.FireExceptionCaught(TooLongFrameError(
      discarding ? absl::StrCat("frame length over ", length, " exceeds the allowed maximum (",
                                max_length_, ")")
                 : absl::StrCat("frame length (", length, ") exceeds the allowed maximum (",
                                max_length_, ")")));
}

absl::Status LineBasedFrameDecoder::Decode(ChannelHandlerContext& ctx, ByteBuf& in,
                                           DecoderOutput& out) {
  const int64_t eol = FindEndOfLine(in);
  const size_t reader = in.reader_index();
  if (!discarding_) {
    if (eol >= 0) {
      const size_t end = static_cast<size_t>(eol);
      const size_t length = end - reader;
      absl::StatusOr<uint8_t> c = in.GetU8(end);
      const size_t delim = (c.ok() && *c == '\r') ? 2 : 1;
      if (length > max_length_) {
        (void)in.SetReaderIndex(end + delim);
        Fail(ctx, length, false);
        return absl::OkStatus();
      }
      absl::StatusOr<ByteBuf> frame = in.ReadRetainedSlice(strip_delimiter_ ? length : length + delim);
      if (!frame.ok()) return frame.status();
      if (strip_delimiter_) (void)in.Skip(delim);
      out.push_back(*std::move(frame));
      return absl::OkStatus();
    }
    // A trailing '\r' may be the start of the line end: it does not count (Netty counts
    // it, and so refuses a line of exactly max_length split between '\r' and '\n').
    const absl::string_view view = in.ReadableView();
    const size_t length = view.size() - (!view.empty() && view.back() == '\r' ? 1 : 0);
    if (length > max_length_) {
      discarded_bytes_ = view.size();
      (void)in.SetReaderIndex(in.writer_index());
      discarding_ = true;
      offset_ = 0;
      if (fail_fast_) Fail(ctx, discarded_bytes_, true);
    }
    return absl::OkStatus();
  }
  if (eol >= 0) {
    const size_t end = static_cast<size_t>(eol);
    const size_t length = discarded_bytes_ + end - reader;
    absl::StatusOr<uint8_t> c = in.GetU8(end);
    const size_t delim = (c.ok() && *c == '\r') ? 2 : 1;
    (void)in.SetReaderIndex(end + delim);
    discarded_bytes_ = 0;
    discarding_ = false;
    if (!fail_fast_) Fail(ctx, length, false);
  } else {
    discarded_bytes_ += in.ReadableBytes();
    (void)in.SetReaderIndex(in.writer_index());
    offset_ = 0;
  }
  return absl::OkStatus();
}

}  // namespace gyre
