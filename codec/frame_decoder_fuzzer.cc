// A libFuzzer target for the frame decoders (LineBasedFrameDecoder,
// DelimiterBasedFrameDecoder, LengthFieldBasedFrameDecoder) on an EmbeddedChannel.
//
// Input: byte 0 picks the decoder and its flags, byte 1 the size of the pieces the
// stream is fed in, bytes 2..4 the decoder's parameters; the rest is the stream. These
// are findings:
//   - a crash or a sanitizer report;
//   - a frame longer than the decoder's limit;
//   - an exception other than TooLongFrame / CorruptedFrame;
//   - fed in pieces, different frames or errors than fed whole.
// After the stream, one well-formed frame is fed. A line or delimiter decoder must
// decode it: after an over-long frame these decoders stay usable.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/codec/codec_status.h"
#include "gyre/codec/delimiter_based_frame_decoder.h"
#include "gyre/codec/length_field_based_frame_decoder.h"
#include "gyre/codec/line_based_frame_decoder.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/testing/embedded_channel.h"

namespace {

struct Config {
  int kind = 0;  // 0 line, 1 delimiter, 2 length field
  bool strip = true;
  bool fail_fast = false;
  size_t max_length = 1;
  gyre::LengthFieldBasedFrameDecoderOptions length;
};

struct Outcome {
  std::vector<std::string> frames;
  std::vector<bool> too_long;  // per error: TooLongFrame (else CorruptedFrame)
  bool closed_usable = true;   // the trailing well-formed frame came out (line/delimiter)
};

std::shared_ptr<gyre::ChannelHandler> MakeDecoder(const Config& c) {
  switch (c.kind) {
    case 0:
      return std::make_shared<gyre::LineBasedFrameDecoder>(c.max_length, c.strip, c.fail_fast);
    case 1: {
      auto d = gyre::DelimiterBasedFrameDecoder::Create(c.max_length, {"\r\n", "\n", "|"},
                                                        c.strip, c.fail_fast);
      GYRE_CHECK(d.ok()) << d.status();
      return *d;
    }
    default: {
      auto d = gyre::LengthFieldBasedFrameDecoder::Create(c.length);
      return d.ok() ? *d : nullptr;
    }
  }
}

size_t FrameLimit(const Config& c) {
  // A line or delimited frame keeps its delimiter (at most 2 bytes) when not stripped.
  if (c.kind != 2) return c.max_length + (c.strip ? 0 : 2);
  return c.length.max_frame_length;
}

void Drain(gyre::testing::EmbeddedChannel& ch, const Config& c, Outcome& out) {
  while (std::optional<gyre::Message> m = ch.ReadInbound()) {
    gyre::ByteBuf* b = m->Get<gyre::ByteBuf>();
    GYRE_CHECK(b != nullptr) << "a frame decoder produced " << m->type_name();
    std::string frame = b->ToString();
    GYRE_CHECK(frame.size() <= FrameLimit(c)) << frame.size() << " > " << FrameLimit(c);
    out.frames.push_back(std::move(frame));
  }
  for (absl::Status s = ch.CheckException(); !s.ok(); s = ch.CheckException()) {
    const bool too_long = gyre::IsTooLongFrame(s);
    GYRE_CHECK(too_long || gyre::IsCorruptedFrame(s)) << "unexpected error: " << s;
    out.too_long.push_back(too_long);
  }
}

Outcome Run(const Config& c, const uint8_t* data, size_t size, size_t piece) {
  Outcome out;
  std::shared_ptr<gyre::ChannelHandler> decoder = MakeDecoder(c);
  if (decoder == nullptr) return out;  // options refused with a status: nothing to run
  auto ch = gyre::testing::EmbeddedChannel::Create({decoder});
  for (size_t off = 0; off < size; off += piece) {
    const size_t n = std::min(piece, size - off);
    absl::StatusOr<gyre::ByteBuf> buf = gyre::UnpooledByteBufAllocator::Default()->CopiedBuffer(
        absl::string_view(reinterpret_cast<const char*>(data) + off, n));
    GYRE_CHECK(buf.ok());
    ch->WriteInbound(*std::move(buf));
    Drain(*ch, c, out);
  }
  if (c.kind != 2) {
    // A well-formed frame after the stream: a delimiter ends whatever came before, then
    // one short frame follows.
    const size_t before = out.frames.size();
    ch->WriteInbound(*gyre::UnpooledByteBufAllocator::Default()->CopiedBuffer("\nok\n"));
    Drain(*ch, c, out);
    out.closed_usable = !out.frames.empty() && out.frames.size() > before &&
                        out.frames.back().substr(0, 2) == "ok";
  }
  ch->Close();
  Drain(*ch, c, out);
  return out;
}

std::string Show(const std::vector<std::string>& frames) {
  std::string out;
  for (const std::string& f : frames) out += "[" + absl::CEscape(f) + "] ";
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  Config c;
  c.kind = data[0] % 3;
  c.strip = (data[0] & 0x10) != 0;
  c.fail_fast = (data[0] & 0x20) != 0;
  const size_t piece = 1 + data[1] % 16;
  c.max_length = 2 + data[2] % 62;  // room for "ok"
  static constexpr int kLengthSizes[] = {1, 2, 3, 4, 8};
  c.length.max_frame_length = 1 + data[2] % 64;
  c.length.length_field_offset = data[3] % 4;
  c.length.length_field_length = kLengthSizes[(data[3] >> 2) % 5];
  c.length.length_adjustment = static_cast<int64_t>(data[4] % 9) - 4;
  c.length.initial_bytes_to_strip = (data[4] >> 4) % 4;
  c.length.fail_fast = c.fail_fast;
  c.length.byte_order =
      (data[0] & 0x40) != 0 ? gyre::ByteOrder::kLittleEndian : gyre::ByteOrder::kBigEndian;
  const Outcome split = Run(c, data + 5, size - 5, piece);
  const Outcome whole = Run(c, data + 5, size - 5, size);
  GYRE_CHECK(split.frames == whole.frames)
      << "kind " << c.kind << " piece " << piece << " strip " << c.strip << " fail_fast "
      << c.fail_fast << " max " << c.max_length << "\nsplit: " << Show(split.frames)
      << "\nwhole: " << Show(whole.frames);
  GYRE_CHECK(split.too_long == whole.too_long) << "kind " << c.kind << " piece " << piece;
  GYRE_CHECK(split.closed_usable && whole.closed_usable) << "kind " << c.kind;
  return 0;
}
