#include "gyre/codec/delimiter_based_frame_decoder.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/codec/codec_status.h"

namespace gyre {

absl::StatusOr<std::shared_ptr<DelimiterBasedFrameDecoder>> DelimiterBasedFrameDecoder::Create(
    size_t max_frame_length, std::vector<std::string> delimiters, bool strip_delimiter,
    bool fail_fast) {
  if (max_frame_length == 0) {
    return absl::InvalidArgumentError("DelimiterBasedFrameDecoder: max_frame_length must be > 0");
  }
  if (delimiters.empty()) {
    return absl::InvalidArgumentError("DelimiterBasedFrameDecoder: no delimiters");
  }
  for (const std::string& d : delimiters) {
    if (d.empty()) return absl::InvalidArgumentError("DelimiterBasedFrameDecoder: empty delimiter");
  }
  return std::shared_ptr<DelimiterBasedFrameDecoder>(new DelimiterBasedFrameDecoder(
      max_frame_length, std::move(delimiters), strip_delimiter, fail_fast));
}

std::vector<std::string> DelimiterBasedFrameDecoder::LineDelimiters() { return {"\r\n", "\n"}; }
std::vector<std::string> DelimiterBasedFrameDecoder::NulDelimiter() {
  return {std::string(1, '\0')};
}

DelimiterBasedFrameDecoder::DelimiterBasedFrameDecoder(size_t max_frame_length,
                                                       std::vector<std::string> delimiters,
                                                       bool strip_delimiter, bool fail_fast)
    : max_frame_length_(max_frame_length),
      delimiters_(std::move(delimiters)),
      strip_delimiter_(strip_delimiter),
      fail_fast_(fail_fast) {
  for (const std::string& d : delimiters_) max_delim_ = std::max(max_delim_, d.size());
}

void DelimiterBasedFrameDecoder::Fail(ChannelHandlerContext& ctx, size_t frame_length) {
  ctx.FireExceptionCaught(TooLongFrameError(
      frame_length > 0 ? absl::StrCat("frame length exceeds ", max_frame_length_, ": ",
                                      frame_length, " - discarded")
                       : absl::StrCat("frame length exceeds ", max_frame_length_,
                                      " - discarding")));
}

size_t DelimiterBasedFrameDecoder::PendingDelimiterPrefix(absl::string_view view) const {
  size_t best = 0;
  for (const std::string& d : delimiters_) {
    for (size_t k = std::min(d.size() - 1, view.size()); k > best; --k) {
      if (view.substr(view.size() - k) == absl::string_view(d).substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

absl::Status DelimiterBasedFrameDecoder::Decode(ChannelHandlerContext& ctx, ByteBuf& in,
                                                DecoderOutput& out) {
  const absl::string_view view = in.ReadableView();
  size_t min_frame = std::numeric_limits<size_t>::max();
  size_t min_delim = 0;
  for (const std::string& d : delimiters_) {
    size_t at = view.find(d);
    if (at != absl::string_view::npos && at < min_frame) {
      min_frame = at;
      min_delim = d.size();
    }
  }
  if (min_delim != 0) {
    if (discarding_) {
      discarding_ = false;
      (void)in.Skip(min_frame + min_delim);
      const size_t too_long = too_long_frame_length_ + min_frame;
      too_long_frame_length_ = 0;
      if (!fail_fast_) Fail(ctx, too_long);
      return absl::OkStatus();
    }
    if (min_frame > max_frame_length_) {
      (void)in.Skip(min_frame + min_delim);
      Fail(ctx, min_frame);
      return absl::OkStatus();
    }
    absl::StatusOr<ByteBuf> frame =
        in.ReadRetainedSlice(strip_delimiter_ ? min_frame : min_frame + min_delim);
    if (!frame.ok()) return frame.status();
    if (strip_delimiter_) (void)in.Skip(min_delim);
    out.push_back(*std::move(frame));
    return absl::OkStatus();
  }
  // No delimiter yet. While discarding, keep the last max_delim_ - 1 bytes: they may be
  // the start of a delimiter that the next read completes.
  const size_t readable = in.ReadableBytes();
  if (!discarding_) {
    // Trailing bytes that may begin a delimiter do not count toward the frame (Netty
    // counts them, so a frame of exactly max_frame_length split inside its delimiter
    // would be refused, and the outcome would depend on how the input was split).
    if (readable - PendingDelimiterPrefix(view) > max_frame_length_) {
      const size_t skip = readable - std::min(readable, max_delim_ - 1);
      too_long_frame_length_ = skip;
      (void)in.Skip(skip);
      discarding_ = true;
      if (fail_fast_) Fail(ctx, 0);
    }
  } else {
    const size_t skip = readable - std::min(readable, max_delim_ - 1);
    too_long_frame_length_ += skip;
    (void)in.Skip(skip);
  }
  return absl::OkStatus();
}

}  // namespace gyre
