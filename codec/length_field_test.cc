// LengthFieldBasedFrameDecoder and LengthFieldPrepender on EmbeddedChannel, every input
// fed split at every byte boundary. The layouts are the ones in the javadoc of Netty's
// LengthFieldBasedFrameDecoder; Netty's LengthFieldBasedFrameDecoderTest and
// LengthFieldPrependerTest are the model for the rest.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/codec/codec_status.h"
#include "gyre/codec/codec_test_util.h"
#include "gyre/codec/length_field_based_frame_decoder.h"
#include "gyre/codec/length_field_prepender.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace codec_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Options = LengthFieldBasedFrameDecoderOptions;

// `value` as an n-byte field in the given order (written by hand, not by the code
// under test).
std::string Field(uint64_t value, int n, ByteOrder order) {
  std::string out(static_cast<size_t>(n), '\0');
  for (int i = 0; i < n; ++i) {
    const int shift = 8 * (order == ByteOrder::kBigEndian ? n - 1 - i : i);
    out[static_cast<size_t>(i)] = static_cast<char>((value >> shift) & 0xFF);
  }
  return out;
}

// Feeds `input` at every split into a fresh decoder; checks frames and errors.
void ExpectDecodes(const Options& o, const std::string& input,
                   const std::vector<std::string>& frames, int too_long = 0, int corrupted = 0) {
  for (const auto& pieces : Splits(input)) {
    auto dec = LengthFieldBasedFrameDecoder::Create(o);
    ASSERT_TRUE(dec.ok()) << dec.status();
    auto ch = FedChannel({*dec}, pieces);
    EXPECT_EQ(InboundStrings(*ch), frames) << Describe(pieces);
    int tl = 0, co = 0, other = 0;
    for (const absl::Status& s : Exceptions(*ch)) {
      if (IsTooLongFrame(s)) {
        ++tl;
      } else if (IsCorruptedFrame(s)) {
        ++co;
      } else {
        ++other;
      }
    }
    EXPECT_EQ(tl, too_long) << Describe(pieces);
    EXPECT_EQ(co, corrupted) << Describe(pieces);
    EXPECT_EQ(other, 0) << Describe(pieces);
    ch->Finish();
  }
}

TEST(LengthFieldBasedFrameDecoderTest, CreateValidates) {
  EXPECT_FALSE(LengthFieldBasedFrameDecoder::Create({.length_field_length = 5}).ok());
  EXPECT_FALSE(LengthFieldBasedFrameDecoder::Create({.length_field_length = 0}).ok());
  EXPECT_FALSE(LengthFieldBasedFrameDecoder::Create({.max_frame_length = 0}).ok());
  EXPECT_FALSE(LengthFieldBasedFrameDecoder::Create(
                   {.max_frame_length = 5, .length_field_offset = 2, .length_field_length = 4})
                   .ok());
  EXPECT_TRUE(LengthFieldBasedFrameDecoder::Create(
                  {.max_frame_length = 6, .length_field_offset = 2, .length_field_length = 4})
                  .ok());
}

TEST(LengthFieldBasedFrameDecoderTest, EveryFieldSizeAndByteOrder) {
  for (int n : {1, 2, 3, 4, 8}) {
    for (ByteOrder order : {ByteOrder::kBigEndian, ByteOrder::kLittleEndian}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " le=" << (order == ByteOrder::kLittleEndian));
      Options o{.max_frame_length = 64, .length_field_length = n,
                .initial_bytes_to_strip = static_cast<size_t>(n), .byte_order = order};
      ExpectDecodes(o, Field(3, n, order) + "abc" + Field(0, n, order) + Field(1, n, order) + "z",
                    {"abc", "", "z"});
    }
  }
}

TEST(LengthFieldBasedFrameDecoderTest, ByteOrderMatters) {
  // 0x0100 read little-endian is 1; big-endian it would be 256.
  Options o{.max_frame_length = 300, .length_field_length = 2, .initial_bytes_to_strip = 2,
            .byte_order = ByteOrder::kLittleEndian};
  ExpectDecodes(o, std::string("\x01\x00", 2) + "x", {"x"});
}

TEST(LengthFieldBasedFrameDecoderTest, WideFieldsUseTheirFullRange) {
  // A 3-byte field of 0x000102 = 258, a 4-byte field of 0x00000105 = 261.
  ExpectDecodes({.max_frame_length = 1000, .length_field_length = 3, .initial_bytes_to_strip = 3},
                Field(258, 3, ByteOrder::kBigEndian) + std::string(258, 'q'),
                {std::string(258, 'q')});
  ExpectDecodes({.max_frame_length = 1000, .length_field_length = 4, .initial_bytes_to_strip = 4},
                Field(261, 4, ByteOrder::kBigEndian) + std::string(261, 'r'),
                {std::string(261, 'r')});
}

// The seven layouts of Netty's javadoc.
TEST(LengthFieldBasedFrameDecoderTest, JavadocLayouts) {
  const std::string hw = "HELLO, WORLD";
  const std::string be12 = std::string("\x00\x0C", 2);
  // 1: 2-byte length, nothing stripped.
  ExpectDecodes({.max_frame_length = 64, .length_field_length = 2}, be12 + hw, {be12 + hw});
  // 2: header stripped.
  ExpectDecodes({.max_frame_length = 64, .length_field_length = 2, .initial_bytes_to_strip = 2},
                be12 + hw, {hw});
  // 3: the length counts the header (adjustment -2).
  const std::string be14 = std::string("\x00\x0E", 2);
  ExpectDecodes({.max_frame_length = 64, .length_field_length = 2, .length_adjustment = -2},
                be14 + hw, {be14 + hw});
  // 4: a 2-byte header before a 3-byte length.
  const std::string l4 = std::string("\xCA\xFE\x00\x00\x0C", 5) + hw;
  ExpectDecodes({.max_frame_length = 64, .length_field_offset = 2, .length_field_length = 3},
                l4, {l4});
  // 5: a 2-byte header after a 3-byte length (adjustment 2).
  const std::string l5 = std::string("\x00\x00\x0C\xCA\xFE", 5) + hw;
  ExpectDecodes({.max_frame_length = 64, .length_field_length = 3, .length_adjustment = 2},
                l5, {l5});
  // 6: HDR1, length, HDR2; strip HDR1 and the length.
  ExpectDecodes({.max_frame_length = 64, .length_field_offset = 1, .length_field_length = 2,
                 .length_adjustment = 1, .initial_bytes_to_strip = 3},
                std::string("\xCA\x00\x0C\xFE", 4) + hw, {"\xFE" + hw});
  // 7: as 6, the length counting the whole frame.
  ExpectDecodes({.max_frame_length = 64, .length_field_offset = 1, .length_field_length = 2,
                 .length_adjustment = -3, .initial_bytes_to_strip = 3},
                std::string("\xCA\x00\x10\xFE", 4) + hw, {"\xFE" + hw});
}

TEST(LengthFieldBasedFrameDecoderTest, TooLongFrameDiscardedWholeThenNextDecodes) {
  for (bool fail_fast : {true, false}) {
    SCOPED_TRACE(fail_fast);
    Options o{.max_frame_length = 8, .length_field_length = 1, .initial_bytes_to_strip = 1,
              .fail_fast = fail_fast};
    // A 20-byte frame (too long) and then a good one.
    ExpectDecodes(o, std::string(1, '\x14') + std::string(20, 'x') + "\x02ok", {"ok"},
                  /*too_long=*/1);
  }
}

TEST(LengthFieldBasedFrameDecoderTest, FrameOfExactlyMaxLengthPasses) {
  ExpectDecodes({.max_frame_length = 5, .length_field_length = 1, .initial_bytes_to_strip = 1},
                "\x04" "abcd", {"abcd"});
  ExpectDecodes({.max_frame_length = 5, .length_field_length = 1, .initial_bytes_to_strip = 1},
                "\x05" "abcde" "\x01" "z", {"z"}, /*too_long=*/1);
}

TEST(LengthFieldBasedFrameDecoderTest, FailFastTiming) {
  for (bool fail_fast : {true, false}) {
    auto dec = LengthFieldBasedFrameDecoder::Create(
        {.max_frame_length = 8, .length_field_length = 1, .fail_fast = fail_fast});
    ASSERT_TRUE(dec.ok());
    auto ch = testing::EmbeddedChannel::Create({*dec});
    ch->WriteInbound(codec_test::Buf("\x10" "abc"));  // 16 + 1 bytes announced, 4 here
    EXPECT_EQ(Exceptions(*ch).size(), fail_fast ? 1u : 0u) << fail_fast;
    ch->WriteInbound(codec_test::Buf(std::string(13, 'y')));  // the rest of it
    std::vector<absl::Status> late = Exceptions(*ch);
    ASSERT_EQ(late.size(), fail_fast ? 0u : 1u) << fail_fast;
    if (!fail_fast) {
      EXPECT_TRUE(IsTooLongFrame(late[0]));
      EXPECT_NE(late[0].message().find("17 - discarded"), absl::string_view::npos) << late[0];
    }
    EXPECT_THAT(InboundStrings(*ch), IsEmpty());
    ch->WriteInbound(codec_test::Buf("\x01" "k"));
    EXPECT_THAT(InboundStrings(*ch), ElementsAre("\x01" "k"));
    ch->Finish();
  }
}

TEST(LengthFieldBasedFrameDecoderTest, NegativeEightByteLengthIsCorrupted) {
  Options o{.max_frame_length = 64, .length_field_length = 8, .initial_bytes_to_strip = 8};
  ExpectDecodes(o, std::string(8, '\xFF') + Field(2, 8, ByteOrder::kBigEndian) + "ok", {"ok"},
                0, /*corrupted=*/1);
}

TEST(LengthFieldBasedFrameDecoderTest, AdjustedLengthShorterThanHeaderIsCorrupted) {
  Options o{.max_frame_length = 64, .length_field_length = 2, .length_adjustment = -5,
            .initial_bytes_to_strip = 2};
  // 0 - 5 + 2 < 2: corrupted, header skipped; then 6 - 5 + 2 = 3: one byte of payload.
  ExpectDecodes(o, std::string("\x00\x00", 2) + std::string("\x00\x06", 2) + "k", {"k"}, 0, 1);
}

TEST(LengthFieldBasedFrameDecoderTest, StripBeyondFrameIsCorrupted) {
  Options o{.max_frame_length = 64, .length_field_length = 1, .initial_bytes_to_strip = 3};
  // Frame 1: 1 + 1 = 2 bytes < strip 3: corrupted, skipped. Frame 2: 1 + 3 = 4 bytes,
  // of which the last one is left after stripping 3.
  ExpectDecodes(o, "\x01" "a" "\x03" "bcd", {"d"}, 0, 1);
}

TEST(LengthFieldBasedFrameDecoderTest, HugeEightByteLengthIsTooLongNotOverflow) {
  Options o{.max_frame_length = 64, .length_field_length = 8, .length_adjustment = 100};
  auto dec = LengthFieldBasedFrameDecoder::Create(o);
  ASSERT_TRUE(dec.ok());
  auto ch = testing::EmbeddedChannel::Create({*dec});
  ch->WriteInbound(codec_test::Buf(Field(INT64_MAX, 8, ByteOrder::kBigEndian) + "abc"));
  std::vector<absl::Status> errors = Exceptions(*ch);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(IsTooLongFrame(errors[0]));
  EXPECT_THAT(InboundStrings(*ch), IsEmpty());
  ch->Finish();
}

// --- LengthFieldPrepender ---

std::string Joined(testing::EmbeddedChannel& ch) {
  std::string all;
  for (const std::string& s : OutboundStrings(ch)) all += s;
  return all;
}

TEST(LengthFieldPrependerTest, EveryFieldSizeAndByteOrder) {
  for (int n : {1, 2, 3, 4, 8}) {
    for (ByteOrder order : {ByteOrder::kBigEndian, ByteOrder::kLittleEndian}) {
      auto p = LengthFieldPrepender::Create({.length_field_length = n, .byte_order = order});
      ASSERT_TRUE(p.ok());
      auto ch = testing::EmbeddedChannel::Create({*p});
      ch->WriteOutbound(codec_test::Buf("abc"));
      EXPECT_EQ(Joined(*ch), Field(3, n, order) + "abc") << n;
      ch->Finish();
    }
  }
}

TEST(LengthFieldPrependerTest, AdjustmentAndIncludingTheField) {
  auto p = LengthFieldPrepender::Create(
      {.length_field_length = 2, .length_adjustment = 1, .length_includes_length_field = true});
  ASSERT_TRUE(p.ok());
  auto ch = testing::EmbeddedChannel::Create({*p});
  ch->WriteOutbound(codec_test::Buf("abc"));
  EXPECT_EQ(Joined(*ch), std::string("\x00\x06", 2) + "abc");
  ch->Finish();
}

TEST(LengthFieldPrependerTest, LengthThatDoesNotFitFailsTheWrite) {
  auto p = LengthFieldPrepender::Create({.length_field_length = 1});
  auto neg = LengthFieldPrepender::Create({.length_field_length = 1, .length_adjustment = -5});
  ASSERT_TRUE(p.ok() && neg.ok());
  auto ch = testing::EmbeddedChannel::Create({*p});
  ChannelFuture big = ch->pipeline().WriteAndFlush(codec_test::Buf(std::string(256, 'x')));
  ChannelFuture fits = ch->pipeline().WriteAndFlush(codec_test::Buf(std::string(255, 'x')));
  ch->RunPendingTasks();
  EXPECT_EQ(big.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(fits.IsSuccess());
  EXPECT_EQ(Joined(*ch), "\xFF" + std::string(255, 'x'));
  auto ch2 = testing::EmbeddedChannel::Create({*neg});
  ChannelFuture f = ch2->pipeline().WriteAndFlush(codec_test::Buf("ab"));
  ch2->RunPendingTasks();
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ch2->OutboundCount(), 0u);
  ch->Finish();
  ch2->Finish();
  EXPECT_FALSE(LengthFieldPrepender::Create({.length_field_length = 7}).ok());
}

TEST(LengthFieldPrependerTest, RoundTripsThroughTheDecoder) {
  auto p = LengthFieldPrepender::Create({.length_field_length = 3});
  ASSERT_TRUE(p.ok());
  auto out = testing::EmbeddedChannel::Create({*p});
  for (std::string s : {"one", "", "three33"}) out->WriteOutbound(codec_test::Buf(s));
  const std::string wire = Joined(*out);
  ExpectDecodes({.max_frame_length = 64, .length_field_length = 3, .initial_bytes_to_strip = 3},
                wire, {"one", "", "three33"});
  out->Finish();
}

}  // namespace
}  // namespace codec_test
}  // namespace gyre
