// ByteToMessageDecoder: cumulation, the decode loop, DecodeLast, removal mid-stream.
// Netty's ByteToMessageDecoderTest is the model (B-numbers: see NETTY_REFERENCE.md).
#include "gyre/codec/byte_to_message_decoder.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/codec/codec_test_util.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace codec_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Matcher;

// Emits fixed-size frames; optionally hands the tail out in DecodeLast.
class FixedDecoder : public ByteToMessageDecoder {
 public:
  explicit FixedDecoder(size_t n, bool flush_last = false) : n_(n), flush_last_(flush_last) {}
  int decode_last_calls = 0;

 protected:
  absl::Status Decode(ChannelHandlerContext&, ByteBuf& in, DecoderOutput& out) override {
    if (in.ReadableBytes() < n_) return absl::OkStatus();
    absl::StatusOr<ByteBuf> frame = in.ReadRetainedSlice(n_);
    if (!frame.ok()) return frame.status();
    out.push_back(*std::move(frame));
    return absl::OkStatus();
  }
  absl::Status DecodeLast(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override {
    ++decode_last_calls;
    if (flush_last_ && in.IsReadable()) {
      absl::StatusOr<ByteBuf> rest = in.ReadRetainedSlice(in.ReadableBytes());
      if (rest.ok()) out.push_back(*std::move(rest));
      return absl::OkStatus();
    }
    return ByteToMessageDecoder::DecodeLast(ctx, in, out);
  }

 private:
  const size_t n_;
  const bool flush_last_;
};

TEST(ByteToMessageDecoderTest, CumulatesAcrossReadsAtEveryBoundary) {
  const std::string input = "abcdefghij";
  for (const auto& pieces : Splits(input)) {
    auto dec = std::make_shared<FixedDecoder>(4);
    auto ch = FedChannel({dec}, pieces);
    EXPECT_THAT(InboundStrings(*ch), ElementsAre("abcd", "efgh")) << Describe(pieces);
    EXPECT_EQ(dec->ActualReadableBytes(), 2u) << Describe(pieces);
    EXPECT_THAT(Exceptions(*ch), IsEmpty());
    ch->Finish();
  }
}

TEST(ByteToMessageDecoderTest, FramesHeldDownstreamSurviveLaterReads) {
  // The frames are retained slices of the cumulation, still held (in the channel's
  // inbound queue) while more bytes are appended: the cumulation must not be written
  // over or moved under them.
  std::string input;
  for (int i = 0; i < 200; ++i) input += static_cast<char>('a' + i % 26);
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<FixedDecoder>(3)});
  for (size_t i = 0; i < input.size(); i += 7) ch->WriteInbound(Buf(input.substr(i, 7)));
  std::vector<std::string> frames = InboundStrings(*ch);
  ASSERT_EQ(frames.size(), input.size() / 3);
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(frames[i], input.substr(i * 3, 3)) << i;
  ch->Finish();
}

// Writes `input` to a FixedDecoder(`frame_size`, flush_last) and expects the frames read
// then to match `decoded`; then finishes the channel and expects DecodeLast to run once
// and what it yields to match `decoded_last`.
void ExpectDecodeLastOnInactive(size_t frame_size, absl::string_view input,
                                const Matcher<std::vector<std::string>>& decoded,
                                const Matcher<std::vector<std::string>>& decoded_last) {
  auto dec = std::make_shared<FixedDecoder>(frame_size, /*flush_last=*/true);
  auto ch = testing::EmbeddedChannel::Create({dec});
  ch->WriteInbound(Buf(input));
  EXPECT_THAT(InboundStrings(*ch), decoded);
  ch->Finish();
  EXPECT_EQ(dec->decode_last_calls, 1);
  EXPECT_THAT(InboundStrings(*ch), decoded_last);
}

TEST(ByteToMessageDecoderTest, DecodeLastRunsOnInactiveWithTheRest) {
  ExpectDecodeLastOnInactive(4, "abcdef", ElementsAre("abcd"), ElementsAre("ef"));
}

TEST(ByteToMessageDecoderTest, DecodeLastRunsOnInactiveWithNothingLeft) {
  ExpectDecodeLastOnInactive(2, "ab", ElementsAre("ab"), IsEmpty());
}

// Decodes one byte, then removes itself (Netty's testRemoveItselfWriteBuffer).
class RemoveSelfDecoder : public ByteToMessageDecoder {
 public:
  bool removed_called = false;

 protected:
  absl::Status Decode(ChannelHandlerContext& ctx, ByteBuf& in, DecoderOutput& out) override {
    absl::StatusOr<ByteBuf> one = in.ReadRetainedSlice(1);
    if (!one.ok()) return one.status();
    out.push_back(*std::move(one));
    (void)ctx.pipeline().Remove(this);
    return absl::OkStatus();
  }
  void HandlerRemovedInternal(ChannelHandlerContext&) override { removed_called = true; }
};

TEST(ByteToMessageDecoderTest, RemovedInsideDecodeForwardsTheRest) {
  for (const auto& pieces : Splits("abcd")) {
    auto dec = std::make_shared<RemoveSelfDecoder>();
    auto ch = FedChannel({dec}, pieces);
    std::vector<std::string> got = InboundStrings(*ch);
    std::string joined;
    for (const auto& g : got) joined += g;
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0], "a") << Describe(pieces);
    EXPECT_EQ(joined, "abcd") << Describe(pieces);  // nothing lost, order kept
    // With the whole input at once the rest comes as one buffer (Netty's behaviour).
    if (pieces.size() == 1) {
      EXPECT_THAT(got, ElementsAre("a", "bcd"));
    }
    EXPECT_TRUE(dec->removed_called);
    EXPECT_THAT(ch->pipeline().Names(), IsEmpty()) << Describe(pieces);
    ch->Finish();
  }
}

TEST(ByteToMessageDecoderTest, RemovedBetweenReadsForwardsCumulatedBytes) {
  auto dec = std::make_shared<FixedDecoder>(4);
  auto ch = testing::EmbeddedChannel::Create();
  ASSERT_TRUE(ch->pipeline().AddLast("dec", dec).ok());
  ch->WriteInbound(Buf("abcdef"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("abcd"));
  ASSERT_TRUE(ch->pipeline().Remove("dec").ok());
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("ef"));
  ch->WriteInbound(Buf("gh"));  // now passes straight through
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("gh"));
  ch->Finish();
}

// A later handler removes the decoder while receiving the first decoded message: the
// messages already decoded still come first, then the undecoded bytes, in order.
class RemoveDecoderOnFirstRead : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    if (!done_) {
      done_ = true;
      (void)ctx.pipeline().Remove("dec");
    }
    ctx.FireChannelRead(std::move(msg));
  }

 private:
  bool done_ = false;
};

TEST(ByteToMessageDecoderTest, RemovedByLaterHandlerKeepsOrder) {
  auto ch = testing::EmbeddedChannel::Create();
  ASSERT_TRUE(ch->pipeline().AddLast("dec", std::make_shared<FixedDecoder>(2)).ok());
  ASSERT_TRUE(ch->pipeline().AddLast("remover", std::make_shared<RemoveDecoderOnFirstRead>()).ok());
  ch->WriteInbound(Buf("aabbccd"));
  // Decoding stops at the removal; "aa" was decoded, the rest follows as one buffer.
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("aa", "bbccd"));
  EXPECT_THAT(ch->pipeline().Names(), ElementsAre("remover"));
  ch->WriteInbound(Buf("e"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("e"));
  ch->Finish();
}

TEST(ByteToMessageDecoderTest, ChannelInactiveDecodesWhatIsLeftThenForwardsInactive) {
  class Recorder : public ChannelInboundHandler {
   public:
    std::vector<std::string>* log;
    void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
      log->push_back("read");
      ctx.FireChannelRead(std::move(msg));
    }
    void ChannelInactive(ChannelHandlerContext& ctx) override {
      log->push_back("inactive");
      ctx.FireChannelInactive();
    }
  };
  std::vector<std::string> log;
  auto rec = std::make_shared<Recorder>();
  rec->log = &log;
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<FixedDecoder>(2, true), rec});
  ch->WriteInbound(Buf("abc"));
  EXPECT_THAT(log, ElementsAre("read"));
  ch->Finish();
  EXPECT_THAT(log, ElementsAre("read", "read", "inactive"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("ab", "c"));
}

class FailingDecoder : public ByteToMessageDecoder {
 protected:
  absl::Status Decode(ChannelHandlerContext&, ByteBuf& in, DecoderOutput& out) override {
    absl::StatusOr<uint8_t> c = in.ReadU8();
    if (!c.ok()) return c.status();
    if (*c == '!') return absl::InvalidArgumentError("bang");
    out.push_back(std::string(1, static_cast<char>(*c)));
    return absl::OkStatus();
  }
};

TEST(ByteToMessageDecoderTest, DecodeErrorForwardsEarlierMessagesThenTheError) {
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<FailingDecoder>()});
  ch->WriteInbound(Buf("ab!cd"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("a", "b"));
  std::vector<absl::Status> errors = Exceptions(*ch);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message(), "bang");
  // The rest stays cumulated and decodes with the next read: the channel is usable.
  ch->WriteInbound(Buf("e"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("c", "d", "e"));
  ch->Finish();
}

class NoProgressDecoder : public ByteToMessageDecoder {
 protected:
  absl::Status Decode(ChannelHandlerContext&, ByteBuf&, DecoderOutput& out) override {
    out.push_back(std::string("x"));
    return absl::OkStatus();
  }
};

TEST(ByteToMessageDecoderTest, MessageWithoutConsumingIsAnInternalError) {
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<NoProgressDecoder>()});
  ch->WriteInbound(Buf("a"));
  EXPECT_THAT(Exceptions(*ch), ElementsAre(StatusWith(absl::StatusCode::kInternal, "")));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("x"));  // still forwarded
  ch->Finish();
}

TEST(ByteToMessageDecoderTest, NonBufferMessagesPassThrough) {
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<FixedDecoder>(2)});
  ch->WriteInbound(std::string("text"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("text"));
  ch->Finish();
}

TEST(ByteToMessageDecoderTest, SingleDecodeStopsAfterOneMessagePerRead) {
  auto dec = std::make_shared<FixedDecoder>(1);
  dec->SetSingleDecode(true);
  auto ch = testing::EmbeddedChannel::Create({dec});
  ch->WriteInbound(Buf("abc"));
  EXPECT_THAT(InboundStrings(*ch), ElementsAre("a"));
  EXPECT_EQ(dec->ActualReadableBytes(), 2u);
  ch->Finish();
}

class ThrowingDecoder : public ByteToMessageDecoder {
 protected:
  absl::Status Decode(ChannelHandlerContext&, ByteBuf& in, DecoderOutput&) override {
    (void)in.Skip(1);
    throw std::runtime_error("boom");
  }
};

TEST(ByteToMessageDecoderTest, ThrowingDecodeIsReportedAsInternal) {
  auto ch = testing::EmbeddedChannel::Create({std::make_shared<ThrowingDecoder>()});
  ch->WriteInbound(Buf("ab"));
  EXPECT_THAT(Exceptions(*ch), ElementsAre(StatusWith(absl::StatusCode::kInternal, "boom")));
  ch->Finish();
}

}  // namespace
}  // namespace codec_test
}  // namespace gyre
