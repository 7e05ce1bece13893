// ByteToMessageDecoder: the base of every stream decoder. It gathers the ByteBufs a
// channel reads into one cumulation buffer and calls Decode() on it until no more
// messages come out, forwarding each decoded message to the next handler.
//
//   class IntDecoder final : public ByteToMessageDecoder {
//     absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in,
//                         DecoderOutput& out) override {
//       if (in.ReadableBytes() < 4) return absl::OkStatus();   // wait for more
//       absl::StatusOr<uint32_t> v = in.ReadU32();
//       if (!v.ok()) return v.status();
//       out.push_back(*v);
//       return absl::OkStatus();
//     }
//   };
//
// The decode loop (Netty's callDecode): while the cumulation is readable, call Decode();
// forward what it produced; stop when a call neither produced a message nor consumed a
// byte (it needs more input). A call that produced a message without consuming anything
// is a bug in the decoder: reported as Internal through ExceptionCaught.
//
// Errors: a Decode() that returns a non-OK status stops the loop; the messages it
// produced first are still forwarded, then the status goes to this handler's
// ExceptionCaught (by default: on to the next handler). The cumulation keeps its unread
// bytes, so a decoder that discarded the bad bytes itself (all of gyre's frame decoders
// do, see codec_status.h) keeps working on the next read.
//
// Channel inactive: the loop runs once more over what is left, then DecodeLast() (by
// default Decode() once more if bytes remain), the results are forwarded, the
// cumulation is released, then ChannelInactive goes on.
//
// Removal: when the decoder is removed from the pipeline (also from inside Decode(), or
// by a later handler while it receives a decoded message), decoding stops, the messages
// already produced are forwarded, then the bytes still cumulated are passed on as one
// ByteBuf (followed by ChannelReadComplete), so no input is lost or reordered;
// HandlerRemovedInternal() runs last.
//
// Non-ByteBuf messages pass through untouched.
//
// Cumulation: the first buffer read is adopted as the cumulation (no copy); later ones
// are appended into it when it is not shared (reference count 1) and can grow, else
// both are copied into a new buffer. Read bytes are discarded before appending when
// room is short, and after every 16 reads, never while the buffer is shared.
//
// Thread safety: loop-confined (a decoder holds per-connection state: never sharable).
// Ownership: owns the cumulation; Decode() may read from `in` and keep slices of it
// (RetainedSlice) in the messages it produces.
#ifndef GYRE_CODEC_BYTE_TO_MESSAGE_DECODER_H_
#define GYRE_CODEC_BYTE_TO_MESSAGE_DECODER_H_

#include <cstddef>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/message.h"

namespace gyre {

// Where Decode() puts the messages it produced, in order.
using DecoderOutput = absl::InlinedVector<Message, 4>;

class ByteToMessageDecoder : public ChannelInboundHandler {
 public:
  ByteToMessageDecoder() = default;
  ~ByteToMessageDecoder() override;

  // When true, at most one message is decoded per ChannelRead (Netty's singleDecode;
  // for decoders that hand the rest of the stream to another handler).
  void SetSingleDecode(bool single) { single_decode_ = single; }
  bool IsSingleDecode() const { return single_decode_; }
  // Number of reads after which already-read bytes are discarded (default 16).
  void SetDiscardAfterReads(int reads) { discard_after_reads_ = reads > 0 ? reads : 1; }

  // Bytes cumulated and not yet decoded.
  size_t ActualReadableBytes() const { return cumulation_.ReadableBytes(); }

  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override;
  void ChannelReadComplete(ChannelHandlerContext& ctx) override;
  void ChannelInactive(ChannelHandlerContext& ctx) override;
  void HandlerRemoved(ChannelHandlerContext& ctx) final;

 protected:
  // Decodes from `in` into `out`. Consumes (reads) the bytes it used; leaves a partial
  // frame unread and returns OK to wait for more. Returns a non-OK status for bad input
  // (after discarding what it must, see the class comment).
  virtual absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) = 0;
  // Called once when the channel goes inactive, after the last Decode() loop, with what
  // is left (possibly nothing). Default: Decode() once more if `in` is readable.
  virtual absl::Status DecodeLast(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out);
  // Called after the decoder was removed and the remaining bytes were forwarded.
  virtual void HandlerRemovedInternal(ChannelHandlerContext& ctx) {}

  // The cumulation (for decoders that inspect it outside Decode()).
  ByteBuf& InternalBuffer() { return cumulation_; }

 private:
  // Appends `in` to the cumulation; returns an error status if memory ran out.
  absl::Status Cumulate(ByteBuf in);
  // The decode loop over the cumulation; forwards every message it produced.
  absl::Status CallDecode(ChannelHandlerContext& ctx, DecoderOutput& out);
  // Decode() (or DecodeLast()) with exceptions turned into Internal.
  absl::Status DecodeProtected(ChannelHandlerContext& ctx, bool last, DecoderOutput& out);
  void FireOut(ChannelHandlerContext& ctx, DecoderOutput& out);
  // Forwards the remaining cumulated bytes and runs HandlerRemovedInternal().
  void FinishRemoval(ChannelHandlerContext& ctx);

  ByteBuf cumulation_;
  // >0 while decoding or forwarding decoded messages; a removal then waits.
  int busy_ = 0;
  bool removal_pending_ = false;
  bool single_decode_ = false;
  bool fired_read_ = false;
  int reads_ = 0;
  int discard_after_reads_ = 16;
};

}  // namespace gyre

#endif  // GYRE_CODEC_BYTE_TO_MESSAGE_DECODER_H_
