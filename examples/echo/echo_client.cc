// An echo client: sends --message --count times, one at a time, and checks each echo.
//
//   echo_server --port=8007 &
//   echo_client --host=127.0.0.1 --port=8007 --message=hello --count=3
//
// Exits 0 when every echo came back byte-exact, 1 otherwise.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/promise.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_socket_channel.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "numeric server address");
ABSL_FLAG(int, port, 8007, "server port");
ABSL_FLAG(std::string, message, "hello", "what to send");
ABSL_FLAG(int, count, 1, "how many times to send it (one at a time)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10), "give up after this long");

namespace {

// Sends the message, waits for its whole echo, repeats; all on the channel's loop.
class Pinger final : public gyre::ChannelInboundHandler {
 public:
  Pinger(std::string message, int count) : message_(std::move(message)), left_(count) {}

  void ChannelActive(gyre::ChannelHandlerContext& ctx) override {
    Send(ctx);
    ctx.FireChannelActive();
  }
  void ChannelRead(gyre::ChannelHandlerContext& ctx, gyre::Message msg) override {
    gyre::ByteBuf* b = msg.Get<gyre::ByteBuf>();
    if (b == nullptr) return;
    absl::StrAppend(&got_, b->ReadableView());
    if (got_.size() < message_.size()) return;
    if (got_ != message_) {
      done_.TryFailure(absl::DataLossError(absl::StrCat("echo differs: \"", got_, "\"")));
      return;
    }
    std::printf("%s\n", got_.c_str());
    got_.clear();
    if (--left_ == 0) {
      done_.TrySuccess();
      return;
    }
    Send(ctx);
  }
  void ChannelInactive(gyre::ChannelHandlerContext& ctx) override {
    done_.TryFailure(absl::UnavailableError("the server closed the connection"));
    ctx.FireChannelInactive();
  }
  void ExceptionCaught(gyre::ChannelHandlerContext&, absl::Status cause) override {
    done_.TryFailure(cause);
  }

  gyre::Promise<void> done_{nullptr};

 private:
  void Send(gyre::ChannelHandlerContext& ctx) {
    absl::StatusOr<gyre::ByteBuf> buf =
        gyre::PooledByteBufAllocator::Default()->CopiedBuffer(message_);
    if (!buf.ok()) {
      done_.TryFailure(buf.status());
      return;
    }
    ctx.WriteAndFlush(*std::move(buf));
  }

  const std::string message_;
  int left_;
  std::string got_;
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "echo_client: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int count = absl::GetFlag(FLAGS_count);
  const std::string message = absl::GetFlag(FLAGS_message);
  if (count <= 0) return Fail(absl::InvalidArgumentError("--count must be positive"));
  if (message.empty()) return Fail(absl::InvalidArgumentError("--message must not be empty"));
  absl::StatusOr<gyre::SocketAddress> addr =
      gyre::SocketAddress::FromHostAndPort(absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port));
  if (!addr.ok()) return Fail(addr.status());

  auto group = gyre::NioEventLoopGroup::Create(1);
  if (!group.ok()) return Fail(group.status());
  auto pinger = std::make_shared<Pinger>(message, count);
  auto ch = gyre::NioSocketChannel::Create();
  if (absl::Status s = ch->pipeline().AddLast("pinger", pinger); !s.ok()) return Fail(s);
  (void)ch->config().Set(gyre::ChannelOption::kTcpNodelay, true);
  gyre::ChannelFuture registered = (*group)->Register(ch);
  (void)registered.Await();
  if (!registered.IsSuccess()) return Fail(registered.Cause());
  gyre::ChannelFuture connected = ch->Connect(*addr);
  if (!connected.AwaitFor(absl::GetFlag(FLAGS_timeout))) {
    return Fail(absl::DeadlineExceededError("connect timed out"));
  }
  if (!connected.IsSuccess()) return Fail(connected.Cause());
  if (!pinger->done_.AwaitFor(absl::GetFlag(FLAGS_timeout))) {
    return Fail(absl::DeadlineExceededError("no complete echo in time"));
  }
  const bool ok = pinger->done_.IsSuccess();
  absl::Status cause = ok ? absl::OkStatus() : pinger->done_.Cause();
  (void)ch->Close().AwaitFor(absl::GetFlag(FLAGS_timeout));
  return ok ? 0 : Fail(cause);
}
