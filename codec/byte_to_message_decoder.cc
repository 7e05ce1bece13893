#include "gyre/codec/byte_to_message_decoder.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel.h"

namespace gyre {

ByteToMessageDecoder::~ByteToMessageDecoder() = default;

absl::Status ByteToMessageDecoder::DecodeLast(ChannelHandlerContext& ctx, ByteBuf& in,
                                              DecoderOutput& out) {
  if (in.IsReadable()) return Decode(ctx, in, out);
  return absl::OkStatus();
}

absl::Status ByteToMessageDecoder::Cumulate(ByteBuf in) {
  if (!cumulation_ || !cumulation_.IsReadable()) {
    cumulation_ = std::move(in);
    return absl::OkStatus();
  }
  const size_t n = in.ReadableBytes();
  if (n == 0) return absl::OkStatus();
  // Append in place only to a buffer nobody else sees (Netty's MERGE_CUMULATOR).
  if (cumulation_.OwnsReference() && cumulation_.RefCount() == 1) {
    if (cumulation_.WritableBytes() < n && cumulation_.reader_index() > 0) {
      (void)cumulation_.DiscardReadBytes();
    }
    if (cumulation_.EnsureWritable(n).ok()) return cumulation_.WriteBytes(in);
  }
  ByteBufAllocator* alloc = cumulation_.alloc();
  if (alloc == nullptr) alloc = PooledByteBufAllocator::Default();
  absl::StatusOr<ByteBuf> fresh = alloc->Buffer(cumulation_.ReadableBytes() + n);
  if (!fresh.ok()) return fresh.status();
  absl::Status s = fresh->WriteBytes(cumulation_);
  if (s.ok()) s = fresh->WriteBytes(in);
  if (!s.ok()) return s;
  cumulation_ = *std::move(fresh);
  return absl::OkStatus();
}

void ByteToMessageDecoder::FireOut(ChannelHandlerContext& ctx, DecoderOutput& out) {
  if (out.empty()) return;
  fired_read_ = true;
  for (Message& m : out) ctx.FireChannelRead(std::move(m));
  out.clear();
}

absl::Status ByteToMessageDecoder::DecodeProtected(ChannelHandlerContext& ctx, bool last,
                                                   DecoderOutput& out) {
  try {
    return last ? DecodeLast(ctx, cumulation_, out) : Decode(ctx, cumulation_, out);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("decoder threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("decoder threw a non-std exception");
  }
}

absl::Status ByteToMessageDecoder::CallDecode(ChannelHandlerContext& ctx, DecoderOutput& out) {
  absl::Status status;
  while (cumulation_.IsReadable()) {
    if (!out.empty()) {
      FireOut(ctx, out);
      // A handler that received the messages may have removed this decoder, or closed
      // the channel (ChannelInactive then decoded the rest and released the cumulation).
      if (ctx.IsRemoved() || !cumulation_.IsReadable()) break;
    }
    const size_t before = cumulation_.ReadableBytes();
    status = DecodeProtected(ctx, /*last=*/false, out);
    if (!status.ok() || ctx.IsRemoved()) break;
    const size_t after = cumulation_.ReadableBytes();
    if (out.empty()) {
      if (before == after) break;
      continue;
    }
    if (before == after) {
      status = absl::InternalError(
          "ByteToMessageDecoder: Decode() produced a message without reading anything");
      break;
    }
    if (single_decode_) break;
  }
  FireOut(ctx, out);
  return status;
}

void ByteToMessageDecoder::ChannelRead(ChannelHandlerContext& ctx, Message msg) {
  ByteBuf* in = msg.Get<ByteBuf>();
  if (in == nullptr) {
    ctx.FireChannelRead(std::move(msg));
    return;
  }
  ++busy_;
  absl::Status status = Cumulate(std::move(*in));
  msg.Reset();
  DecoderOutput out;
  if (status.ok()) status = CallDecode(ctx, out);
  --busy_;
  if (busy_ == 0 && removal_pending_) {
    FinishRemoval(ctx);
  } else if (cumulation_ && !cumulation_.IsReadable()) {
    reads_ = 0;
    cumulation_.Reset();
  } else if (++reads_ >= discard_after_reads_) {
    reads_ = 0;
    if (cumulation_.OwnsReference() && cumulation_.RefCount() == 1) {
      (void)cumulation_.DiscardReadBytes();
    }
  }
  if (!status.ok()) ExceptionCaught(ctx, std::move(status));
}

void ByteToMessageDecoder::ChannelReadComplete(ChannelHandlerContext& ctx) {
  reads_ = 0;
  // Netty's discardSomeReadBytes: only once half the buffer is dead, never when shared.
  if (cumulation_ && cumulation_.OwnsReference() && cumulation_.RefCount() == 1 &&
      cumulation_.reader_index() > 0 && cumulation_.reader_index() >= cumulation_.capacity() / 2) {
    (void)cumulation_.DiscardReadBytes();
  }
  // Without auto-read nobody asks for more input when a read produced nothing.
  if (!fired_read_ && !ctx.channel().config().auto_read()) ctx.Read();
  fired_read_ = false;
  ctx.FireChannelReadComplete();
}

void ByteToMessageDecoder::ChannelInactive(ChannelHandlerContext& ctx) {
  DecoderOutput out;
  fired_read_ = false;
  absl::Status status;
  ++busy_;
  if (cumulation_) status = CallDecode(ctx, out);
  if (status.ok() && !ctx.IsRemoved()) {
    status = DecodeProtected(ctx, /*last=*/true, out);
  }
  FireOut(ctx, out);
  --busy_;
  if (busy_ == 0 && removal_pending_) {
    FinishRemoval(ctx);
  } else {
    cumulation_.Reset();
  }
  if (fired_read_) {
    fired_read_ = false;
    ctx.FireChannelReadComplete();
  }
  if (!status.ok()) ExceptionCaught(ctx, std::move(status));
  ctx.FireChannelInactive();
}

void ByteToMessageDecoder::HandlerRemoved(ChannelHandlerContext& ctx) {
  if (busy_ > 0) {
    // Inside Decode() or while forwarding its messages: finish once they are all out,
    // so the remaining bytes follow the decoded messages in order.
    removal_pending_ = true;
    return;
  }
  FinishRemoval(ctx);
}

void ByteToMessageDecoder::FinishRemoval(ChannelHandlerContext& ctx) {
  removal_pending_ = false;
  ByteBuf rest = std::move(cumulation_);
  reads_ = 0;
  if (rest.IsReadable()) {
    ctx.FireChannelRead(std::move(rest));
    ctx.FireChannelReadComplete();
  }
  HandlerRemovedInternal(ctx);
}

}  // namespace gyre
