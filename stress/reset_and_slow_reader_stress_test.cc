// Stress: a server streaming 1 MiB to each connection while some peers reset the
// connection mid-write (SO_LINGER 0 close) and others read slowly through a small
// receive buffer. Guards: the server respects its write-buffer water marks (queued
// bytes per channel stay bounded however slow the reader); slow readers get every byte
// in order; reset connections are closed by the server with their queued writes failed
// and released; no fd and no buffer is leaked; the server still serves afterwards.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/channel/channel_option.h"
#include "gyre/stress/stress_util.h"
#include "gyre/testing/nio_test_server.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

constexpr size_t kStreamBytes = 1 << 20;
constexpr size_t kChunk = 16 * 1024;

struct ServerStats {
  stress::Counter closed;
  std::atomic<int64_t> max_pending{0};
  std::atomic<int64_t> failed_writes{0};
};

// Streams `payload` to its channel as fast as the channel stays writable: writes until
// the high water mark is crossed, resumes when the channel is writable again.
class Streamer final : public ChannelInboundHandler {
 public:
  Streamer(const std::string* payload, ServerStats* stats) : payload_(payload), stats_(stats) {}

  void ChannelActive(ChannelHandlerContext& ctx) override {
    Pump(ctx);
    ctx.FireChannelActive();
  }
  void ChannelWritabilityChanged(ChannelHandlerContext& ctx) override {
    if (ctx.channel().IsWritable()) Pump(ctx);
    ctx.FireChannelWritabilityChanged();
  }
  void ChannelInactive(ChannelHandlerContext& ctx) override {
    stats_->closed.Add();
    ctx.FireChannelInactive();
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override {}  // resets

 private:
  void Pump(ChannelHandlerContext& ctx) {
    auto& ch = static_cast<NioSocketChannel&>(ctx.channel());
    while (sent_ < payload_->size() && ch.IsWritable() && ch.IsActive()) {
      const size_t n = std::min(kChunk, payload_->size() - sent_);
      absl::StatusOr<ByteBuf> buf =
          PooledByteBufAllocator::Default()->CopiedBuffer(absl::string_view(*payload_).substr(sent_, n));
      if (!buf.ok()) return;
      ServerStats* stats = stats_;
      ctx.Write(Message(*std::move(buf))).AddListener([stats](const ChannelFuture& f) {
        if (!f.IsSuccess()) stats->failed_writes.fetch_add(1, std::memory_order_relaxed);
      });
      sent_ += n;
      const int64_t pending = ch.PendingOutboundBytes();
      int64_t seen = stats_->max_pending.load(std::memory_order_relaxed);
      while (pending > seen && !stats_->max_pending.compare_exchange_weak(seen, pending)) {
      }
    }
    ctx.Flush();
  }

  const std::string* const payload_;
  ServerStats* const stats_;
  size_t sent_ = 0;  // loop-confined
};

TEST(ResetAndSlowReaderStressTest, ServerStaysBoundedAndLeaksNothing) {
  stress::RaiseFdLimit();
  const int rounds = stress::Scaled(10, 100);
  constexpr int kResetters = 24;
  constexpr int kSlowReaders = 6;
  const int fds_at_start = stress::OpenFdCount();
  const int64_t live_at_start = PooledByteBufAllocator::Default()->LiveBuffers();
  const std::string payload = testing::PatternBytes(7, kStreamBytes);
  ServerStats stats;
  int connections = 0;
  {
    absl::StatusOr<std::unique_ptr<testing::NioTestServer>> server =
        testing::NioTestServer::Start([&](ServerBootstrap& bootstrap) {
          bootstrap.Option(ChannelOption::kSoBacklog, 256)
              // Small kernel buffers: most of each stream waits in the channel, so a
              // reset cuts queued writes short and the water marks do the bounding.
              .ChildOption(ChannelOption::kSoSndbuf, 16 * 1024)
              .ChildHandler(std::make_shared<ChannelInitializer>([&](Channel& ch) {
                return ch.pipeline().AddLast("stream",
                                             std::make_shared<Streamer>(&payload, &stats));
              }));
        });
    ASSERT_TRUE(server.ok()) << server.status();
    const uint16_t port = (*server)->port();

    std::atomic<int> bad_prefix{0}, bad_stream{0}, failed_connects{0};
    // Opens `n` connections with small receive buffers, counting the ones that fail.
    auto connect = [&](int n) {
      std::vector<int> fds;
      for (int i = 0; i < n; ++i) {
        int fd = stress::ConnectLoopback(port, 4096);
        if (fd < 0) {
          failed_connects.fetch_add(1);
          continue;
        }
        fds.push_back(fd);
      }
      return fds;
    };
    for (int round = 0; round < rounds; ++round) {
      // Resetters: read the first bytes (the stream is under way), then RST.
      std::thread resetters([&] {
        const std::vector<int> fds = connect(kResetters);
        for (size_t i = 0; i < fds.size(); ++i) {
          std::string got;
          const size_t want = 1 + (i * 1237) % 8192;
          if (!stress::RecvExactly(fds[i], want, &got) || got != payload.substr(0, want)) {
            bad_prefix.fetch_add(1);
          }
          stress::CloseWithReset(fds[i]);
        }
      });
      // Slow readers: small receive buffers, 1 KiB per turn, round-robin.
      const std::vector<int> slow = connect(kSlowReaders);
      std::vector<std::string> got(kSlowReaders);
      bool progress = true;
      while (progress) {
        progress = false;
        for (size_t i = 0; i < slow.size(); ++i) {
          if (got[i].size() >= kStreamBytes) continue;
          const size_t n = std::min<size_t>(1024, kStreamBytes - got[i].size());
          if (!stress::RecvExactly(slow[i], n, &got[i])) {
            bad_stream.fetch_add(1);
            got[i].resize(kStreamBytes);  // give up on this one
          }
          progress = true;
        }
      }
      for (size_t i = 0; i < slow.size(); ++i) {
        if (got[i] != payload) bad_stream.fetch_add(1);
        close(slow[i]);
      }
      resetters.join();
      connections += kResetters + kSlowReaders;
    }
    EXPECT_EQ(failed_connects.load(), 0);
    EXPECT_EQ(bad_prefix.load(), 0);
    EXPECT_EQ(bad_stream.load(), 0);
    ASSERT_TRUE(stats.closed.WaitFor(connections)) << stats.closed.value() << " of " << connections;
    EXPECT_GT(stats.failed_writes.load(), 0) << "no write was cut short by a reset";
    // Bounded: the writer stops at the high water mark, so at most one chunk beyond it
    // is ever queued per channel.
    EXPECT_LE(stats.max_pending.load(), ChannelConfig::kDefaultHighWaterMark + int64_t{kChunk});

    // Still serving: a fresh reader gets the whole stream.
    int fd = stress::ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    std::string all;
    ASSERT_TRUE(stress::RecvExactly(fd, kStreamBytes, &all));
    EXPECT_EQ(all, payload);
    close(fd);
    ++connections;
    ASSERT_TRUE(stats.closed.WaitFor(connections));

    ASSERT_NO_FATAL_FAILURE((*server)->Shutdown());
  }
  EXPECT_EQ(stress::OpenFdCount(), fds_at_start);
  EXPECT_EQ(PooledByteBufAllocator::Default()->LiveBuffers(), live_at_start);
  RecordProperty("connections", connections);
}

}  // namespace
}  // namespace gyre
