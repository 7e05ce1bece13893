#include "gyre/channel/channel_initializer.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace {

using ::gyre::testing::EmbeddedChannel;

class Upper : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    std::string s = *std::move(msg).Take<std::string>();
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ctx.FireChannelRead(s);
  }
};

TEST(ChannelInitializerTest, InitializesOnRegistrationAndRemovesItself) {
  int calls = 0;
  auto init = std::make_shared<ChannelInitializer>([&](Channel& ch) {
    ++calls;
    return ch.pipeline().AddLast("upper", std::make_shared<Upper>());
  });
  auto ch = EmbeddedChannel::CreateUnregistered();
  ASSERT_TRUE(ch->pipeline().AddLast("init", init).ok());
  EXPECT_EQ(calls, 0);  // waits for registration
  ASSERT_TRUE(ch->Register().ok());
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(ch->pipeline().Names(), ::testing::ElementsAre("upper"));
  ch->WriteInbound(std::string("abc"));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "ABC");
  ch->Finish();
}

TEST(ChannelInitializerTest, OneInstanceServesManyChannels) {
  int calls = 0;
  auto init = std::make_shared<ChannelInitializer>([&](Channel&) {
    ++calls;
    return absl::OkStatus();
  });
  auto a = EmbeddedChannel::Create({init});
  auto b = EmbeddedChannel::Create({init});
  EXPECT_EQ(calls, 2);
  a->Finish();
  b->Finish();
}

TEST(ChannelInitializerTest, FailureIsReportedAndClosesTheChannel) {
  auto init = std::make_shared<ChannelInitializer>(
      [](Channel&) { return absl::InvalidArgumentError("bad config"); });
  auto ch = EmbeddedChannel::Create({init});
  EXPECT_EQ(ch->CheckException(), absl::InvalidArgumentError("bad config"));
  EXPECT_FALSE(ch->IsOpen());
  ch->Finish();
}

TEST(ChannelInitializerTest, ThrowIsReportedAsInternal) {
  auto init = std::make_shared<ChannelInitializer>(
      [](Channel&) -> absl::Status { throw std::runtime_error("boom"); });
  auto ch = EmbeddedChannel::Create({init});
  absl::Status cause = ch->CheckException();
  EXPECT_EQ(cause.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(cause.message()), ::testing::HasSubstr("boom"));
  EXPECT_FALSE(ch->IsOpen());
  ch->Finish();
}

}  // namespace
}  // namespace gyre
