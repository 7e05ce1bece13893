#include "gyre/transport/channel_outbound_buffer.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_option.h"
#include "gyre/channel/pooled_byte_buf_allocator.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace {

class WritabilityCounter final : public ChannelInboundHandler {
 public:
  void ChannelWritabilityChanged(ChannelHandlerContext& ctx) override { ++changes; }
  int changes = 0;
};

// A connected, non-blocking stream socket pair; [0] is written, [1] read.
class SocketPair {
 public:
  SocketPair() {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_), 0);
  }
  ~SocketPair() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int writer() const { return fds_[0]; }
  void CloseReader() {
    close(fds_[1]);
    fds_[1] = -1;
  }
  // Everything readable now.
  std::string ReadAvailable() {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = recv(fds_[1], buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fds_[2] = {-1, -1};
};

ByteBuf BufferOf(const std::string& s) {
  absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->CopiedBuffer(s);
  EXPECT_TRUE(buf.ok());
  return *std::move(buf);
}

class ChannelOutboundBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    counter_ = std::make_shared<WritabilityCounter>();
    channel_ = testing::EmbeddedChannel::Create({counter_});
    buffer_ = std::make_unique<ChannelOutboundBuffer>(channel_.get(), "TestChannel");
  }
  void TearDown() override {
    buffer_.reset();
    channel_->Finish();
  }

  std::shared_ptr<WritabilityCounter> counter_;
  std::shared_ptr<testing::EmbeddedChannel> channel_;
  std::unique_ptr<ChannelOutboundBuffer> buffer_;
};

TEST_F(ChannelOutboundBufferTest, OnlyFlushedWritesGoOutInOrder) {
  SocketPair pair;
  ChannelPromise first = channel_->NewPromise();
  ChannelPromise second = channel_->NewPromise();
  buffer_->Add(std::string("hello "), first);
  buffer_->Add(BufferOf("world"), second);
  EXPECT_EQ(buffer_->pending_bytes(), 11);
  EXPECT_FALSE(buffer_->HasFlushed());
  ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
  EXPECT_EQ(pair.ReadAvailable(), "");
  EXPECT_FALSE(first.IsDone());

  buffer_->AddFlush();
  ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
  EXPECT_EQ(pair.ReadAvailable(), "hello world");
  EXPECT_TRUE(first.IsSuccess());
  EXPECT_TRUE(second.IsSuccess());
  EXPECT_EQ(buffer_->pending_bytes(), 0);
  EXPECT_TRUE(buffer_->empty());
}

// The queue is a growable ring with a flush mark inside: writes added while earlier
// ones wait (flushed or not), across growth and wrap-around, go out in order, and only
// the flushed ones.
TEST_F(ChannelOutboundBufferTest, ManyWritesAcrossGrowthAndWrapStayInOrder) {
  SocketPair pair;
  std::string expected;
  std::vector<ChannelPromise> promises;
  int next = 0;
  auto add = [&](int n) {
    for (int i = 0; i < n; ++i, ++next) {
      const std::string piece = "<" + std::to_string(next) + ">";
      promises.push_back(channel_->NewPromise());
      buffer_->Add(BufferOf(piece), promises.back());
      expected += piece;
    }
  };
  std::string received;
  size_t flushed_bytes = 0;
  for (int round = 0; round < 12; ++round) {
    add(7 + round * 3);  // grows the ring at some rounds
    buffer_->AddFlush();
    flushed_bytes = expected.size();
    add(5);  // queued behind the flush mark, not sent this round
    ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
    received += pair.ReadAvailable();
    ASSERT_EQ(received, expected.substr(0, flushed_bytes)) << "round " << round;
    EXPECT_FALSE(buffer_->HasFlushed());
    EXPECT_FALSE(buffer_->empty());
    EXPECT_FALSE(promises.back().IsDone());  // behind the mark
  }
  buffer_->AddFlush();
  ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
  received += pair.ReadAvailable();
  EXPECT_EQ(received, expected);
  EXPECT_TRUE(buffer_->empty());
  for (const ChannelPromise& p : promises) EXPECT_TRUE(p.IsSuccess());
  EXPECT_EQ(buffer_->pending_bytes(), 0);
}

TEST_F(ChannelOutboundBufferTest, AWriteCompletesOnlyWhenAllItsBytesWent) {
  SocketPair pair;
  const std::string big(4 << 20, 'x');  // more than a socket buffer holds
  ChannelPromise promise = channel_->NewPromise();
  buffer_->Add(std::string(big), promise);
  buffer_->AddFlush();
  ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
  ASSERT_TRUE(buffer_->HasFlushed()) << "the socket took 4 MiB at once";
  EXPECT_FALSE(promise.IsDone());
  EXPECT_GT(buffer_->pending_bytes(), 0);
  EXPECT_LT(buffer_->pending_bytes(), static_cast<int64_t>(big.size()));

  std::string received = pair.ReadAvailable();
  while (buffer_->HasFlushed()) {
    ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
    received += pair.ReadAvailable();
  }
  EXPECT_EQ(received.size(), big.size());
  EXPECT_EQ(received, big);
  EXPECT_TRUE(promise.IsSuccess());
  EXPECT_EQ(buffer_->pending_bytes(), 0);
}

TEST_F(ChannelOutboundBufferTest, WritabilityFollowsTheWaterMarks) {
  ASSERT_TRUE(channel_->config().Set(ChannelOption::kWriteBufferLowWaterMark, 50).ok());
  ASSERT_TRUE(channel_->config().Set(ChannelOption::kWriteBufferHighWaterMark, 100).ok());
  SocketPair pair;
  buffer_->Add(std::string(60, 'a'), channel_->NewPromise());
  EXPECT_TRUE(buffer_->IsWritable());
  EXPECT_EQ(counter_->changes, 0);
  buffer_->Add(std::string(60, 'b'), channel_->NewPromise());
  EXPECT_FALSE(buffer_->IsWritable());
  EXPECT_EQ(counter_->changes, 1);

  buffer_->AddFlush();
  ASSERT_TRUE(buffer_->WriteTo(pair.writer()).ok());
  EXPECT_TRUE(buffer_->IsWritable());
  EXPECT_EQ(counter_->changes, 2);
  EXPECT_EQ(pair.ReadAvailable().size(), 120u);
}

TEST_F(ChannelOutboundBufferTest, AnUnsupportedMessageFailsItsPromise) {
  ChannelPromise promise = channel_->NewPromise();
  buffer_->Add(42, promise);
  ASSERT_TRUE(promise.IsDone());
  EXPECT_EQ(promise.Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(promise.Cause().message().find("TestChannel"), std::string::npos);
  EXPECT_TRUE(buffer_->empty());
  EXPECT_EQ(buffer_->pending_bytes(), 0);
}

TEST_F(ChannelOutboundBufferTest, FailAllFailsEveryWriteAndFiresNoWritabilityChange) {
  ASSERT_TRUE(channel_->config().Set(ChannelOption::kWriteBufferLowWaterMark, 5).ok());
  ASSERT_TRUE(channel_->config().Set(ChannelOption::kWriteBufferHighWaterMark, 10).ok());
  ChannelPromise flushed = channel_->NewPromise();
  ChannelPromise unflushed = channel_->NewPromise();
  buffer_->Add(std::string(8, 'a'), flushed);
  buffer_->AddFlush();
  buffer_->Add(std::string(8, 'b'), unflushed);
  ASSERT_EQ(counter_->changes, 1);

  buffer_->FailAll(absl::AbortedError("closed"));
  EXPECT_EQ(flushed.Cause().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(unflushed.Cause().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(buffer_->empty());
  EXPECT_EQ(buffer_->pending_bytes(), 0);
  EXPECT_EQ(counter_->changes, 1);
}

TEST_F(ChannelOutboundBufferTest, ASendToAClosedPeerIsAStatusNotASignal) {
  SocketPair pair;
  pair.CloseReader();
  ChannelPromise promise = channel_->NewPromise();
  buffer_->Add(std::string("lost"), promise);
  buffer_->AddFlush();
  absl::Status s = buffer_->WriteTo(pair.writer());  // EPIPE; the process lives on
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("send"), std::string::npos) << s;
  EXPECT_FALSE(promise.IsDone()) << "the caller closes the channel, which fails it";
}

TEST_F(ChannelOutboundBufferTest, AWriteFromAListenerIsSentByTheOuterCall) {
  SocketPair pair;
  ChannelPromise first = channel_->NewPromise();
  ChannelPromise second = channel_->NewPromise();
  ChannelOutboundBuffer* buffer = buffer_.get();
  int fd = pair.writer();
  absl::Status inner = absl::UnknownError("listener did not run");
  first.AddListener([&](const ChannelFuture&) {
    buffer->Add(std::string("b"), second);
    buffer->AddFlush();
    inner = buffer->WriteTo(fd);  // re-entrant: returns at once
  });
  buffer_->Add(std::string("a"), first);
  buffer_->AddFlush();
  ASSERT_TRUE(buffer_->WriteTo(fd).ok());
  EXPECT_TRUE(inner.ok()) << inner;
  EXPECT_EQ(pair.ReadAvailable(), "ab");
  EXPECT_TRUE(second.IsSuccess());
  EXPECT_TRUE(buffer_->empty());
}

}  // namespace
}  // namespace gyre
