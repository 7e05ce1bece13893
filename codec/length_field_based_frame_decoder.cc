#include "gyre/codec/length_field_based_frame_decoder.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gyre/codec/codec_status.h"

namespace gyre {

absl::StatusOr<std::shared_ptr<LengthFieldBasedFrameDecoder>> LengthFieldBasedFrameDecoder::Create(
    LengthFieldBasedFrameDecoderOptions o) {
  const int n = o.length_field_length;
  if (n != 1 && n != 2 && n != 3 && n != 4 && n != 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LengthFieldBasedFrameDecoder: length_field_length must be 1, 2, 3, 4 or 8: ", n));
  }
  if (o.max_frame_length == 0) {
    return absl::InvalidArgumentError("LengthFieldBasedFrameDecoder: max_frame_length must be > 0");
  }
  if (o.max_frame_length < static_cast<size_t>(n) ||
      o.length_field_offset > o.max_frame_length - static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LengthFieldBasedFrameDecoder: max_frame_length (", o.max_frame_length,
        ") must be >= length_field_offset (", o.length_field_offset,
        ") + length_field_length (", n, ")"));
  }
  if (o.max_frame_length > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError("LengthFieldBasedFrameDecoder: max_frame_length too large");
  }
  return std::shared_ptr<LengthFieldBasedFrameDecoder>(new LengthFieldBasedFrameDecoder(o));
}

LengthFieldBasedFrameDecoder::LengthFieldBasedFrameDecoder(LengthFieldBasedFrameDecoderOptions o)
    : o_(o), length_field_end_(o.length_field_offset + static_cast<size_t>(o.length_field_length)) {}

int64_t LengthFieldBasedFrameDecoder::ReadLength(const ByteBuf& in, size_t index) const {
  const bool le = o_.byte_order == ByteOrder::kLittleEndian;
  switch (o_.length_field_length) {
    case 1:
      return in.GetU8(index).value_or(0);
    case 2:
      return le ? in.GetU16LE(index).value_or(0) : in.GetU16(index).value_or(0);
    case 3:
      return le ? in.GetU24LE(index).value_or(0) : in.GetU24(index).value_or(0);
    case 4:
      return le ? in.GetU32LE(index).value_or(0) : in.GetU32(index).value_or(0);
    default:
      return le ? in.GetI64LE(index).value_or(0) : in.GetI64(index).value_or(0);
  }
}

void LengthFieldBasedFrameDecoder::FailIfNecessary(ChannelHandlerContext& ctx,
                                                   bool first_detection) {
  if (bytes_to_discard_ == 0) {
    const int64_t too_long = too_long_frame_length_;
    too_long_frame_length_ = 0;
    discarding_ = false;
    if (!o_.fail_fast || first_detection) {
      ctx.FireExceptionCaught(TooLongFrameError(absl::StrCat(
          "adjusted frame length exceeds ", o_.max_frame_length, ": ", too_long, " - discarded")));
    }
  } else if (o_.fail_fast && first_detection) {
    ctx.FireExceptionCaught(TooLongFrameError(absl::StrCat(
        "adjusted frame length exceeds ", o_.max_frame_length, ": ", too_long_frame_length_,
        " - discarding")));
  }
}

void LengthFieldBasedFrameDecoder::ExceededFrameLength(ChannelHandlerContext& ctx, ByteBuf& in,
                                                       int64_t frame_length) {
  const int64_t readable = static_cast<int64_t>(in.ReadableBytes());
  const int64_t discard = frame_length - readable;
  too_long_frame_length_ = frame_length;
  if (discard < 0) {
    (void)in.Skip(static_cast<size_t>(frame_length));
  } else {
    discarding_ = true;
    bytes_to_discard_ = discard;
    (void)in.Skip(in.ReadableBytes());
  }
  FailIfNecessary(ctx, true);
}

void LengthFieldBasedFrameDecoder::DiscardTooLongFrame(ChannelHandlerContext& ctx, ByteBuf& in) {
  const int64_t local =
      std::min(bytes_to_discard_, static_cast<int64_t>(in.ReadableBytes()));
  (void)in.Skip(static_cast<size_t>(local));
  bytes_to_discard_ -= local;
  FailIfNecessary(ctx, false);
}

absl::Status LengthFieldBasedFrameDecoder::Decode(ChannelHandlerContext& ctx, ByteBuf& in,
                                                  DecoderOutput& out) {
  if (frame_length_ == -1) {
    if (discarding_) DiscardTooLongFrame(ctx, in);
    if (in.ReadableBytes() < length_field_end_) return absl::OkStatus();
    const int64_t raw = ReadLength(in, in.reader_index() + o_.length_field_offset);
    if (raw < 0) {
      (void)in.Skip(length_field_end_);
      ctx.FireExceptionCaught(
          CorruptedFrameError(absl::StrCat("negative pre-adjustment length field: ", raw)));
      return absl::OkStatus();
    }
    // Wide arithmetic: an 8-byte field plus the adjustment may leave int64's range.
    const __int128 wide = static_cast<__int128>(raw) + o_.length_adjustment +
                          static_cast<__int128>(length_field_end_);
    if (wide < static_cast<__int128>(length_field_end_)) {
      (void)in.Skip(length_field_end_);
      ctx.FireExceptionCaught(CorruptedFrameError(
          absl::StrCat("adjusted frame length (", static_cast<int64_t>(wide),
                       ") is less than length_field_end_offset: ", length_field_end_)));
      return absl::OkStatus();
    }
    if (wide > static_cast<__int128>(o_.max_frame_length)) {
      const int64_t clamped = wide > std::numeric_limits<int64_t>::max()
                                  ? std::numeric_limits<int64_t>::max()
                                  : static_cast<int64_t>(wide);
      ExceededFrameLength(ctx, in, clamped);
      return absl::OkStatus();
    }
    frame_length_ = static_cast<int64_t>(wide);
  }
  const size_t frame = static_cast<size_t>(frame_length_);
  if (in.ReadableBytes() < frame) return absl::OkStatus();
  if (o_.initial_bytes_to_strip > frame) {
    (void)in.Skip(frame);
    frame_length_ = -1;
    ctx.FireExceptionCaught(CorruptedFrameError(
        absl::StrCat("adjusted frame length (", frame, ") is less than initial_bytes_to_strip: ",
                     o_.initial_bytes_to_strip)));
    return absl::OkStatus();
  }
  (void)in.Skip(o_.initial_bytes_to_strip);
  frame_length_ = -1;
  absl::StatusOr<ByteBuf> slice = in.ReadRetainedSlice(frame - o_.initial_bytes_to_strip);
  if (!slice.ok()) return slice.status();
  out.push_back(*std::move(slice));
  return absl::OkStatus();
}

}  // namespace gyre
